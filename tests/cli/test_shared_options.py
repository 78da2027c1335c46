"""The shared option groups (``tenantguard.cli.options``): same --help as before, values delivered.

``help_baseline.json`` was captured from the tree before the groups replaced the per-command
declarations; every command must still offer exactly those options (flags, metavars, env
vars, help, defaults, order). The values must still reach the commands: each case below
gives one option of a group (flag or env var) to a real command, which fails on exactly
that value before it talks to anything, naming it.
"""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path
from typing import Annotated

import pytest
import typer
from tenantguard.cli.options import NO_NATS_OPTIONS, Group, NatsOptions, PlaneTls, option_groups
from tenantguard.errors import ConfigError
from typer.testing import CliRunner

from tests.cli.helpsnap import BASELINE, root_app, snapshot
from tests.harness.tlscerts import make_pki

REPO = Path(__file__).resolve().parents[2]
BEFORE = json.loads(BASELINE.read_text())
NOW = snapshot()


def test_the_same_commands_exist() -> None:
    assert sorted(NOW) == sorted(BEFORE)
    assert len(NOW) > 40


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_every_command_offers_the_options_it_offered_before(command: str) -> None:
    assert NOW.get(command) == BEFORE[command]


def _group_params() -> set[str]:
    return {o.param_name for group in (PlaneTls, NatsOptions) for o in group.OPTIONS}


def _declaring_functions() -> list[str]:
    """Functions in the CLI modules that declare a group's option as a parameter of their own."""
    names = _group_params()
    files = [*sorted((REPO / "sdk" / "tenantguard" / "cli").rglob("*.py")), REPO / "authz_sidecar" / "cli.py",
             REPO / "policy_plane" / "cli.py"]
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                own = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} & names
                if own:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {sorted(own)}")
    return found


def test_group_options_are_declared_only_in_the_table() -> None:
    assert _declaring_functions() == []


def test_the_commands_that_take_a_group_still_show_all_of_it() -> None:
    """Every command that shows one option of a group shows all of them (a half-spread group)."""
    for group in (PlaneTls, NatsOptions):
        flags = {o.flag for o in group.OPTIONS}
        users = [c for c, params in NOW.items() if flags & {opt for p in params for opt in p["opts"]}]
        assert users, group
        for command in users:
            shown = {opt for p in NOW[command] for opt in p["opts"]}
            assert flags <= shown, command
    assert {c for c, params in NOW.items() if any("--nats-user" in p["opts"] for p in params)} == {
        "plane serve", "sidecar serve"}


CASES = [
    # (argv, env, what the refusal names): each proves one value reached the command
    (["revoke", "jti", "j1", "--plane-ca", "/nonexistent/ca.pem"], {}, "plane CA file /nonexistent/ca.pem"),
    (["revoke", "kid", "k1"],
     {"TG_PLANE_CLIENT_CERT": "/nonexistent/c.pem", "TG_PLANE_CLIENT_KEY": "/nonexistent/k.pem"},
     "plane client certificate /nonexistent/c.pem"),
    (["relation", "write", "acme/project:p1#member@user:a", "--plane-client-cert", "/nonexistent/c.pem",
      "--plane-client-key", "/nonexistent/k.pem"], {}, "plane client certificate /nonexistent/c.pem"),
    (["relation", "list", "--tenant", "acme"], {"TG_PLANE_CA": "/nonexistent/ca2.pem"},
     "plane CA file /nonexistent/ca2.pem"),
    (["decisions", "query", "--plane-ca", "/nonexistent/ca3.pem"], {}, "plane CA file /nonexistent/ca3.pem"),
    (["explain", "d1", "--plane-ca", "/nonexistent/ca4.pem"], {}, "plane CA file /nonexistent/ca4.pem"),
    (["sidecar", "serve", "--service", "s", "--nats-tls-server-name", "n"], {},
     "--nats-* credentials and TLS options need --nats"),
    (["sidecar", "serve", "--service", "s", "--nats", "nats://127.0.0.1:1", "--bundle-key", "KEY"],
     {"TG_SIDECAR_NATS_USER": "u"}, "--nats-user and --nats-password-file go together"),
    (["sidecar", "serve", "--service", "s", "--nats", "nats://127.0.0.1:1", "--bundle-key", "KEY",
      "--nats-tls-ca", "/nonexistent/nats-ca"], {}, "NATS TLS file /nonexistent/nats-ca"),
    (["sidecar", "serve", "--service", "s", "--nats", "nats://127.0.0.1:1", "--bundle-key", "KEY",
      "--nats-tls-key", "KEY"], {}, "--nats-tls-cert and --nats-tls-key go together"),
    (["plane", "serve", "--nats", "nats://127.0.0.1:1", "--event-key", "KEY", "--bundle-key", "KEY",
      "--admin-token-file", "TOKEN"], {"TG_PLANE_NATS_TLS_CA": "/nonexistent/nats-ca2"},
     "NATS TLS file /nonexistent/nats-ca2"),
    (["plane", "serve", "--nats", "nats://127.0.0.1:1", "--event-key", "KEY", "--bundle-key", "KEY",
      "--admin-token-file", "TOKEN", "--nats-token-file", "TOKEN", "--nats-creds-file", "TOKEN"], {},
     "give one NATS authentication method, not token and creds"),
]
_PLANE_ARGS = ["--plane", "https://127.0.0.1:1", "--token-file", "TOKEN"]


@pytest.mark.parametrize(("argv", "env", "named"), CASES, ids=[" ".join(c[0][:2]) + f"-{i}" for i, c in
                                                              enumerate(CASES)])
def test_each_command_still_receives_the_group_values(tmp_path: Path, argv: list[str], env: dict[str, str],
                                                      named: str) -> None:
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    token.chmod(0o600)
    key = tmp_path / "key.pem"
    key.write_text("not used: the command stops before reading it\n")
    key.chmod(0o600)
    argv = [{"TOKEN": str(token), "KEY": str(key)}.get(a, a) for a in argv]
    if argv[0] in ("revoke", "relation", "decisions", "explain"):
        argv += [{"TOKEN": str(token)}.get(a, a) for a in _PLANE_ARGS]
        if argv[0] in ("revoke", "relation") and argv[1] != "list":
            argv += ["--retry-for", "0"]
    result = CliRunner().invoke(root_app(), argv, env=env)
    assert isinstance(result.exception, ConfigError), (result.output, result.exception)
    assert named in str(result.exception)


ProbeNats = Annotated[NatsOptions, Group(env="TG_PROBE_")]


def _probe_app() -> tuple[typer.Typer, list[object]]:
    seen: list[object] = []
    app = typer.Typer()

    @app.command()
    @option_groups
    def probe(name: str, nats: ProbeNats = NO_NATS_OPTIONS, count: int = 1) -> None:
        seen.append((name, nats, count))

    @app.command()
    def other() -> None:  # a second command keeps "probe" a sub-command
        pass

    return app, seen


def test_option_groups_hands_the_command_every_field(tmp_path: Path) -> None:
    app, seen = _probe_app()
    files = {f.name: str(tmp_path / f.name) for f in fields(NatsOptions) if f.name not in ("user", "tls_server_name")}
    argv = ["probe", "n1", "--count", "3", "--nats-tls-server-name", "nats.internal"]
    argv += [arg for name, value in files.items() if name != "password_file"
             for arg in (f"--nats-{name.replace('_', '-')}", value)]
    result = CliRunner().invoke(app, argv, env={"TG_PROBE_NATS_USER": "alice",
                                                "TG_PROBE_NATS_PASSWORD_FILE": files["password_file"]})
    assert result.exit_code == 0, result.output
    assert seen == [("n1", NatsOptions(user="alice", tls_server_name="nats.internal",
                                       **{k: Path(v) for k, v in files.items()}), 3)]
    assert NatsOptions(user="alice").any_given() and not NO_NATS_OPTIONS.any_given()


def test_option_groups_refuses_what_it_cannot_spread() -> None:
    def no_group(name: str) -> None:
        pass

    def clash(nats: Annotated[NatsOptions, Group(env="X_")], nats_user: str = "") -> None:
        pass

    def not_a_group(tls: Annotated[int, Group(env="X_")]) -> None:
        pass

    for func, says in ((no_group, "takes no option group"), (clash, "clashes"), (not_a_group, "no option group")):
        with pytest.raises(TypeError, match=says):
            option_groups(func)


def test_plane_tls_converts_to_both_client_forms(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    ca, cert, key = pki.ca.cert, pki.client.cert, pki.client.key
    tls = PlaneTls(ca, cert, key)
    assert tls.client_args() == {"ca": ca, "client_cert": cert, "client_key": key}
    client = tls.client_tls()
    assert (client.ca_file, client.cert_file, client.key_file) == (ca, cert, key)
