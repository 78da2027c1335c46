"""What a new user sees first: help texts, the version, and output that survives a pipe.

The CLI runs as a user runs it (the installed ``tenantguard`` script in a subprocess, stdout a
pipe) wherever the question is what reaches a terminal or a parser; the help of every command
is rendered in-process from the same click tree the script builds.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import typer.main
from tenantguard import cli
from tenantguard.identity.keys import SigningKey
from typer.testing import CliRunner

CLI = Path(sys.executable).with_name("tenantguard")
ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=120, env=ENV,
                          check=False)


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from walk(sub, (*path, name))


@pytest.fixture(scope="module")
def every_help() -> dict[tuple[str, ...], tuple[str, bool]]:
    """``path -> (help text, has sub-commands)`` for every command of the installed CLI."""
    cli._register_service_groups()
    root = typer.main.get_command(cli.app)
    runner = CliRunner()
    found: dict[tuple[str, ...], tuple[str, bool]] = {}
    for path, command in walk(root):
        result = runner.invoke(cli.app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        found[path] = (result.output, bool(getattr(command, "commands", None)))
    assert len(found) > 30  # the walk reached the service groups too
    return found


# --------------------------------------------------------------------------- output that is not markup


def test_bundle_test_keeps_file_colon_line_verbatim_when_piped(tmp_path: Path) -> None:
    """``x_test.rego:100:`` must not become an emoji (Rich's ``:100:`` code), nor lose ``[...]`` text."""
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "p.rego").write_text("package p\n\nimport rego.v1\n\nallow if input.ok\n")
    padding = "".join(f"# line {n}\n" for n in range(4, 100))
    (bundle / "p_test.rego").write_text(
        "package p_test\n\nimport rego.v1\n" + padding
        + 'test_allow if { print("seen :100: [bold]not markup[/]"); data.p.allow with input as {"ok": true} }\n')
    done = run_cli("bundle", "test", bundle, "-v")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "p_test.rego:100: data.p_test.test_allow: PASS" in done.stdout, done.stdout
    assert "seen :100: [bold]not markup[/]" in done.stdout, done.stdout
    assert "\U0001f4af" not in done.stdout  # 💯


def test_an_error_message_with_brackets_is_printed_verbatim(tmp_path: Path) -> None:
    """Typed errors reach stderr as written, whatever characters the message holds."""
    token_file = tmp_path / "empty[red].token"
    token_file.write_text("")
    done = run_cli("relation", "write", "acme/project:p1#member@user:alice", "--plane", "http://127.0.0.1:9",
                   "--token-file", token_file)
    assert done.returncode == 1
    assert f"error config_invalid: token file {token_file} is empty" in done.stderr, done.stderr


# --------------------------------------------------------------------------- help texts


def test_demo_help_shows_the_default_postgresql_dsn() -> None:
    done = run_cli("demo", "--help")
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())
    assert "[default: host=127.0.0.1 port=5432 user=postgres dbname=test]" in flat, done.stdout
    assert "TG_DEMO_PG_DSN" in flat


def test_version() -> None:
    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tenantguard {version('tenantguard')}"


def test_commands_without_sub_commands_do_not_promise_any(every_help: dict[tuple[str, ...], tuple[str, bool]]) -> None:
    """``dev`` and ``demo`` are plain commands: ``Usage: tenantguard dev [OPTIONS]``, no ``COMMAND [ARGS]``."""
    for name in ("dev", "demo"):
        text, has_subcommands = every_help[(name,)]
        assert not has_subcommands
        assert f"Usage: tenantguard {name} [OPTIONS]\n" in text, text
    for path, (text, has_subcommands) in every_help.items():
        assert ("COMMAND [ARGS]" in text) == has_subcommands, (path, text.splitlines()[0])


def test_flags_show_no_value_placeholder(every_help: dict[tuple[str, ...], tuple[str, bool]]) -> None:
    """A flag takes no value, so its help row shows none (no ``<bool>``)."""
    offenders = {path for path, (text, _) in every_help.items() if "<bool>" in text}
    assert not offenders, sorted(offenders)
    keep = next(line for line in every_help[("demo",)][0].splitlines() if "--keep" in line)
    assert keep.split()[:2] == ["--keep", "Keep"], keep


def test_every_option_says_what_it_is_for() -> None:
    """``sidecar serve --max-body-bytes`` had an empty help row."""
    cli._register_service_groups()
    root = typer.main.get_command(cli.app)
    bare = [(path, param.opts) for path, command in walk(root) for param in command.params
            if getattr(param, "param_type_name", None) == "option" and not getattr(param, "help", None)
            and param.name != "help"]
    assert not bare, bare


def test_options_show_their_value_not_a_python_type(every_help: dict[tuple[str, ...], tuple[str, bool]]) -> None:
    """Repeatable options showed ``--bundle-key <list[Path]>``; they show the value one occurrence takes."""
    rows = [(path, line.strip()) for path, (text, _) in every_help.items() for line in text.splitlines()
            if line.strip().startswith("--") and "list[" in line]
    assert not rows, rows


def test_usage_lines_name_arguments_in_capitals(every_help: dict[tuple[str, ...], tuple[str, bool]]) -> None:
    """``keys generate {out}`` and ``token show {token}`` stood beside ``bundle build {DIR}``."""
    lower = {path: text.splitlines()[0] for path, (text, _) in every_help.items()
             if re.search(r"\{[^}]*[a-z][^}]*\}", text.splitlines()[0])}
    assert not lower, lower


def test_help_shows_no_restructuredtext_markup(every_help: dict[tuple[str, ...], tuple[str, bool]]) -> None:
    """Docstrings' ````literal```` markup reached ``plane init --help`` as double backticks."""
    marked = [path for path, (text, _) in every_help.items() if "``" in text]
    assert not marked, marked


def test_one_line_summaries_are_whole_sentences() -> None:
    """A group's command list shows each summary on one row, not cut at the docstring's line break
    (on a terminal wide enough; a narrow one gets click's "..." at the end of the row)."""
    done = run_cli("revoke", "--help")
    row = next(line for line in done.stdout.splitlines() if line.strip().startswith("kid "))
    assert row.split(None, 1)[1].strip() == "Refuse every token signed by a key (a leaked issuer or sidecar key).", row


# --------------------------------------------------------------------------- a plane that is not there


def test_a_write_to_a_loopback_plane_that_is_down_fails_at_once_and_says_why(tmp_path: Path) -> None:
    """A stopped ``tenantguard dev`` (or a stale ``dev.env``) must not look like a hang: a refused loopback
    connection is not retried for --retry-for seconds (issue 30), it fails on the first attempt."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    token_file = tmp_path / "admin.token"
    token_file.write_text("an-admin-token-of-enough-length")
    plane = f"http://127.0.0.1:{closed.getsockname()[1]}"
    try:
        default = run_cli("relation", "write", "acme/project:p1#member@user:bob", "--plane", plane,
                          "--token-file", token_file)
        once = run_cli("relation", "write", "acme/project:p1#member@user:bob", "--plane", plane,
                       "--token-file", token_file, "--retry-for", "0")
    finally:
        closed.close()
    refused = f"error plane_refused: policy plane at {plane} refused the connection"
    for done in (default, once):
        assert done.returncode == 1, done.stderr
        assert "retrying" not in done.stderr, done.stderr
        assert done.stderr.startswith(refused), done.stderr
        # ... and says what usually causes it on a first day: a stopped or restarted dev, old ports exported
        assert done.stderr.rstrip().endswith("A restarted `tenantguard dev` listens on new ports: "
                                             "`source .tenantguard/dev.env` again in this shell"), done.stderr


# --------------------------------------------------------------------------- the wrong key file


@pytest.mark.parametrize(("content", "says"), [
    (None, "cannot read key file {path}: No such file or directory"),
    (b"", "key file {path} is empty; `tenantguard keys generate {path}` writes one"),
    (b"not a key\n", "key file {path} holds no PEM private key; give the private key (the file without .pub)"),
    ("public", "key file {path} holds a public key; give the private key (the file without .pub)"),
])
def test_token_mint_with_a_wrong_key_file_names_it_and_says_what_to_do(
        tmp_path: Path, content: bytes | str | None, says: str) -> None:
    path = tmp_path / "issuer.pem"
    if content == "public":
        SigningKey.generate().save(tmp_path / "real.pem")
        path.write_bytes((tmp_path / "real.pem.pub").read_bytes())
    elif isinstance(content, bytes):
        path.write_bytes(content)
    done = run_cli("token", "mint", "--key", path, "--issuer", "dev", "--sub", "alice", "--tenant", "acme",
                   "--aud", "orders")
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.startswith("error key_invalid: " + says.format(path=path)), done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_tuple_without_its_tenant_is_refused_locally_with_an_example(tmp_path: Path) -> None:
    token_file = tmp_path / "admin.token"
    token_file.write_text("an-admin-token-of-enough-length")
    done = run_cli("relation", "write", "project:p1#member@user:bob", "--plane", "http://127.0.0.1:9",
                   "--token-file", token_file)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error relationship_invalid: relationship 'project:p1#member@user:bob' must look "
                                  "like "), done.stderr
    assert "e.g. 'acme/project:p1#member@user:alice'" in done.stderr and "retrying" not in done.stderr


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--tenant", "ACME", "tenant_id 'ACME' must match [a-z][a-z0-9_]{0,63} (lowercase, e.g. 'acme')"),
    ("--tenant", "acme corp", "tenant_id 'acme corp' must match"),
    ("--sub", "alice smith", "sub 'alice smith' must be 1..256 printable ASCII characters without spaces or '#'"),
    ("--sub", "boss#manager", "sub 'boss#manager' must be"),
    ("--scope", 'invoices:read "x', "scope '\"x' is not an RFC 6749 scope token"),
])
def test_token_mint_refuses_claims_no_sidecar_accepts(tmp_path: Path, flag: str, value: str, says: str) -> None:
    """A typo such as ``--tenant ACME`` used to sign a token every sidecar then refused (claim_invalid)."""
    key = tmp_path / "issuer.pem"
    SigningKey.generate().save(key)
    args = {"--issuer": "dev", "--sub": "alice", "--tenant": "acme", "--aud": "orders", flag: value}
    done = run_cli("token", "mint", "--key", key, *[part for pair in args.items() for part in pair])
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.startswith("error claim_invalid: " + says), done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


# --------------------------------------------------------------------------- a second shell without dev.env


def test_a_missing_plane_option_says_to_source_dev_env_on_the_error_line(tmp_path: Path) -> None:
    """A second shell that has not sourced ``.tenantguard/dev.env`` used to get only "Missing option
    '--plane'": the way out was in ``--help``, which the error line did not mention."""
    env = {k: v for k, v in ENV.items() if k not in ("TG_PLANE_URL", "TG_PLANE_TOKEN_FILE", "TG_SIDECAR_URL")}
    token_file = tmp_path / "admin.token"
    token_file.write_text("an-admin-token-of-enough-length")
    cases = {
        "--plane": ["relation", "write", "acme/project:p1#member@user:bob"],
        "--token-file": ["relation", "write", "acme/project:p1#member@user:bob", "--plane", "http://127.0.0.1:9"],
        "--sidecar": ["relation", "lookup", "resources", "--action", "documents:read"],
    }
    for option, args in cases.items():
        done = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=60, env=env, check=False)
        assert done.returncode == 2, (option, done.stderr)
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"Error: Missing option '{option}'"), (option, done.stderr)
        assert last.endswith("`source .tenantguard/dev.env` sets it in this shell"), (option, done.stderr)


def test_plane_serve_names_every_missing_option_at_once(tmp_path: Path) -> None:
    """``plane serve`` has four required options; click named one per run, so a newcomer learnt them
    in four failed starts. One error line now names every one missing (flag or variable)."""
    env = {k: v for k, v in ENV.items() if not k.startswith("TG_PLANE_")}
    done = subprocess.run([str(CLI), "plane", "serve", "--port", "0"], capture_output=True, text=True, timeout=60,
                          env=env, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: Missing options: --nats (env var TG_PLANE_NATS), --event-key (env var TG_PLANE_EVENT_KEY), "
        "--bundle-key (env var TG_PLANE_BUNDLE_KEY), --admin-token-file (env var TG_PLANE_ADMIN_TOKEN_FILE)")
    given = subprocess.run([str(CLI), "plane", "serve", "--event-key", "k"], capture_output=True, text=True,
                           timeout=60, env={**env, "TG_PLANE_NATS": "nats://127.0.0.1:4222"}, check=False)
    assert given.stderr.strip().splitlines()[-1] == (  # what is given, by flag or variable, is not named
        "Error: Missing options: --bundle-key (env var TG_PLANE_BUNDLE_KEY), --admin-token-file (env var "
        "TG_PLANE_ADMIN_TOKEN_FILE)"), given.stderr


def test_every_option_dev_env_sets_carries_the_hint() -> None:
    """The class, not the three examples: every command reading TG_PLANE_URL, TG_PLANE_TOKEN_FILE or
    TG_SIDECAR_URL (relation, revoke, bundle publish/push/rollout, decisions, explain...) hints."""
    from tenantguard.cli.common import DEV_ENV_VARS, hint_dev_env
    from typer._click.exceptions import MissingParameter

    cli._register_service_groups()
    root = hint_dev_env(typer.main.get_command(cli.app))
    seen = set()
    for path, command in walk(root):
        for param in command.params:
            if getattr(param, "envvar", None) in DEV_ENV_VARS:
                seen.add(param.envvar)
                message = MissingParameter(param=param).format_message()
                assert "source .tenantguard/dev.env" in message, (path, message)
    assert seen == DEV_ENV_VARS, seen


# --------------------------------------------------------------------------- a sidecar started by hand


@pytest.fixture(scope="module")
def signed_archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The example bundle built and signed: ``(archive, public key)``."""
    folder = tmp_path_factory.mktemp("archive")
    key = folder / "bundle.pem"
    SigningKey.generate().save(key)
    archive = folder / "b.tar.gz"
    built = run_cli("bundle", "build", Path(__file__).parents[2] / "bundles" / "tenantguard", "-o", archive,
                    "--signing-key", key)
    assert built.returncode == 0, built.stderr
    return archive, folder / "bundle.pem.pub"


def serve_sidecar(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_cli("sidecar", "serve", "--service", "orders", "--port", "0", "--grpc-port", "-1", *args)


def test_a_sidecar_given_the_bundle_folder_is_told_to_build_the_archive(tmp_path: Path) -> None:
    """``--bundle bundles/tenantguard`` (the source folder) used to fail with a bare "Is a directory"."""
    key = tmp_path / "k.pem"
    SigningKey.generate().save(key)
    folder = Path(__file__).parents[2] / "bundles" / "tenantguard"
    done = serve_sidecar("--bundle", folder, "--bundle-key", f"{key}.pub")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]  # after the sidecar's log lines
    assert last.startswith(f"error config_invalid: --bundle {folder} is a folder; --bundle takes a built, "
                           f"signed archive: `tenantguard bundle build {folder} -o bundle.tar.gz "
                           "--signing-key KEY` makes one"), done.stderr


@pytest.mark.parametrize(("content", "says"), [
    (b"", "key file {path} is empty; give the public key (.pub) of the signing key"),
    (b"\x1f\x8b not a key at all", "key file {path} holds no PEM key; give the public key (.pub)"),
    (b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "key file {path}: not a PEM public key: "),
])
def test_a_wrong_bundle_key_file_is_named_without_parser_internals(
        tmp_path: Path, signed_archive: tuple[Path, Path], content: bytes, says: str) -> None:
    """A bundle archive given as ``--bundle-key`` used to print "not a PEM public key: Unable to load PEM
    file. See https://cryptography.io/..." without naming the file."""
    path = tmp_path / "wrong.pub"
    path.write_bytes(content)
    done = serve_sidecar("--bundle", signed_archive[0], "--bundle-key", path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error key_invalid: " + says.format(path=path)), done.stderr
    assert "cryptography.io" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_sidecar_with_nothing_to_serve_says_so_at_start() -> None:
    """Without --bundle and --nats the sidecar serves (503 not ready, every decision denied) and used
    to say nothing but "gRPC health: NOT_SERVING": now its first line names the way out."""
    process = subprocess.Popen([str(CLI), "sidecar", "serve", "--service", "orders", "--port", "0",
                                "--grpc-port", "-1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=ENV)
    try:
        assert process.stdout is not None
        assert '"event": "listening"' in process.stdout.readline()  # printed once serving, after the warning
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    warning = next((line for line in stderr.splitlines() if "WARNING" in line), "")
    assert "no policy bundle and nothing that brings one" in warning, stderr
    assert "--bundle FILE --bundle-key PUB" in warning and "--nats URL --plane-key PUB" in warning, warning


def test_a_sidecar_with_a_bundle_does_not_warn(signed_archive: tuple[Path, Path]) -> None:
    archive, public = signed_archive
    process = subprocess.Popen([str(CLI), "sidecar", "serve", "--service", "orders", "--port", "0",
                                "--grpc-port", "-1", "--bundle", str(archive), "--bundle-key", str(public)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert process.stdout is not None
        assert '"event": "listening"' in process.stdout.readline()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "nothing that brings one" not in stderr, stderr


# --------------------------------------------------------------------------- a broken bundle folder


@pytest.mark.parametrize(("name", "content", "says"), [
    ("sub/data.json", b'{"tenantguard": {"config": \n', "sub/data.json: invalid JSON: "),
    ("sub/extra.rego", b"\xff\xfe not utf-8", "sub/extra.rego: file is not UTF-8"),
])
def test_bundle_test_names_the_file_at_fault(tmp_path: Path, name: str, content: bytes, says: str) -> None:
    """``bundle test`` said "invalid JSON: Expecting value: line 2 column 1" without naming which data.json."""
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "p.rego").write_text("package p\n\nimport rego.v1\n\nallow if input.ok\n")
    (bundle / name).parent.mkdir(parents=True, exist_ok=True)
    (bundle / name).write_bytes(content)
    done = run_cli("bundle", "test", bundle)
    assert done.returncode == 1, done
    assert done.stderr.startswith("error bundle_malformed: " + says), done.stderr


def test_a_rego_syntax_error_is_shown_once_with_file_line_and_column(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "p.rego").write_text("package p\n\nimport rego.v1\n\nallow if { input.x == }\n")
    build = ("bundle", "build", bundle, "-o", tmp_path / "b.tar.gz", "--revision", "1")
    for args in (("bundle", "test", bundle), build):
        done = run_cli(*args)
        assert done.returncode == 1, done
        assert done.stderr.startswith("error policy_compile_error: p.rego:5:"), done.stderr
        assert done.stderr.count("p.rego") == 1, done.stderr


def test_build_without_a_manifest_says_there_is_none(tmp_path: Path) -> None:
    """A folder without .manifest was told ".manifest names no revision", as if the file existed."""
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "p.rego").write_text("package p\n\nimport rego.v1\n\nallow if input.ok\n")
    done = run_cli("bundle", "build", bundle, "-o", tmp_path / "b.tar.gz")
    assert done.returncode == 2, done
    flat = " ".join(done.stderr.split())
    assert f"{bundle} has no .manifest to take the revision from; pass --revision" in flat, flat
    (bundle / ".manifest").write_text('{"roots": [""]}')
    done = run_cli("bundle", "build", bundle, "-o", tmp_path / "b.tar.gz")
    assert f"{bundle}/.manifest names no revision; pass --revision" in " ".join(done.stderr.split()), done.stderr


def test_a_bundle_signed_by_another_key_says_how_to_compare_the_keys(
        tmp_path: Path, signed_archive: tuple[Path, Path]) -> None:
    """"bundle signed by unknown key 'kid'" stated the fact only; the next step is comparing kids."""
    other = tmp_path / "other.pem"
    SigningKey.generate().save(other)
    done = serve_sidecar("--bundle", signed_archive[0], "--bundle-key", f"{other}.pub")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    last = lines[-1]
    assert last.startswith("error bundle_unknown_key: ") and "bundle signed by unknown key" in last, last
    # the rejection's log line reads as one (time, level, logger), not as a bare copy of the error line
    assert not any(line.startswith("bundle rejected") for line in lines), lines
    assert any(" WARNING authz_sidecar.runtime: bundle rejected: bundle_unknown_key" in line for line in lines)
    assert last.endswith("`tenantguard bundle inspect FILE` shows the signer's kid and `tenantguard keys show KEY` "
                         "a key's"), last


def test_verify_with_another_key_says_how_to_tell_tampering_from_a_wrong_key(
        tmp_path: Path, signed_archive: tuple[Path, Path]) -> None:
    """One --key is tried whatever its kid (as OPA's --verification-key), so a wrong key read as
    "bundle signature does not verify", the same words as a tampered archive."""
    other = tmp_path / "other.pem"
    SigningKey.generate().save(other)
    done = run_cli("bundle", "verify", signed_archive[0], "--key", f"{other}.pub")
    assert done.returncode == 1, done
    assert done.stderr.startswith(f"error bundle_signature_invalid: {signed_archive[0]}: .signatures.json: "), \
        done.stderr
    assert "another key than the one given signed it: `tenantguard bundle inspect FILE` shows the signer's kid" \
        in done.stderr, done.stderr


def test_a_pem_key_given_as_a_trust_file_gets_the_command_that_makes_one(tmp_path: Path) -> None:
    """``--trust dev-issuer.pem.pub`` said only "is not JSON: Expecting value". The command it now names
    (with the issuer filled in) makes a trust file the same verification then accepts."""
    key = tmp_path / "issuer.pem"
    SigningKey.generate().save(key)
    minted = run_cli("token", "mint", "--key", key, "--issuer", "dev", "--sub", "alice", "--tenant", "acme",
                     "--aud", "orders")
    assert minted.returncode == 0, minted.stderr
    token = minted.stdout.strip()
    pub = f"{key}.pub"
    refused = run_cli("token", "verify", token, "--trust", pub, "--aud", "orders")
    assert refused.returncode == 1, refused
    said = f"`tenantguard keys jwks {pub} --issuer ISSUER --out trust.json` makes one"
    assert refused.stderr.startswith(f"error key_invalid: trust file {pub} holds a PEM key, not a trust file"), \
        refused.stderr
    assert said in " ".join(refused.stderr.split()), refused.stderr
    trust = tmp_path / "trust.json"
    assert run_cli("keys", "jwks", pub, "--issuer", "dev", "--out", trust).returncode == 0
    accepted = run_cli("token", "verify", token, "--trust", trust, "--aud", "orders")
    assert accepted.returncode == 0 and '"sub": "alice"' in accepted.stdout, accepted
