"""An operator's first day past the README: operations.md's commands, run as written against real
processes (a plane on a real nats-server, a TLS listener, the installed ``tenantguard`` script), and
the one-line errors a newcomer gets on the way (a URL without its scheme, http:// to an HTTPS plane,
a sidecar told to follow NATS without the key its bundles verify with, a halted rollout)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from tenantguard import cli
from tenantguard.bundle import content_revision
from tenantguard.client.plane import PlaneClient
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey
from tenantguard.util.httptls import ServerTls

from tests.harness.plane_bundles import bundle_dir
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World
from tests.harness.tls_server import Served

CLI = Path(sys.executable).with_name("tenantguard")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("TG_")} | {"COLUMNS": "200", "NO_COLOR": "1"}


def run_cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=env or ENV, check=False)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# --------------------------------------------------------------------------- the plane's address


@pytest.mark.parametrize("args", [
    ("relation", "write", "acme/project:p1#member@user:bob"),
    ("revoke", "tenant", "acme"),
    ("bundle", "rollout", "status"),
])
def test_a_plane_url_without_its_scheme_is_refused_at_once(tmp_path: Path, args: tuple[str, ...]) -> None:
    """``--plane localhost:8282`` was sent anyway, failed as "unreachable: UnsupportedProtocol" and a
    write spent the default 20 s of --retry-for on it before saying so."""
    token = tmp_path / "admin.token"
    token.write_text("an-admin-token-of-enough-length")
    done = run_cli(*args, "--plane", "localhost:8282", "--token-file", token)
    assert done.returncode == 1, done
    assert one_error_line(done) == ("error config_invalid: policy plane URL 'localhost:8282' must start with "
                                    "http:// or https:// and name a host (e.g. 'http://localhost:8282')")


@pytest.mark.parametrize(("args", "says"), [
    (("resources", "--subject", "alice", "--action", "documents:read", "--type", "document"),
     "Invalid value for --subject: 'alice' must be TYPE:ID, e.g. user:alice"),
    (("subjects", "--object", "d1", "--action", "documents:read"),
     "Invalid value for --object: 'd1' must be TYPE:ID, e.g. document:d1"),
])
def test_a_lookup_entity_without_its_type_is_a_usage_error(args: tuple[str, ...], says: str) -> None:
    """``--subject alice`` was sent as a subject without an id and came back from the sidecar as
    "subject.id must be a non-empty string" (or, with dev stopped, as "unreachable")."""
    done = run_cli("relation", "lookup", *args, "--sidecar", "http://127.0.0.1:9")
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines()[-1] == f"Error: {says}", done.stderr


def test_a_sidecar_url_without_its_scheme_is_refused_at_once() -> None:
    done = run_cli("relation", "lookup", "resources", "--subject", "user:alice", "--action", "documents:read",
                   "--type", "document", "--sidecar", "localhost:8181")
    assert done.returncode == 1, done
    assert one_error_line(done) == ("error config_invalid: sidecar URL 'localhost:8181' must start with http:// or "
                                    "https:// and name a host (e.g. 'http://localhost:8181')")


def test_plain_http_to_an_https_plane_says_to_use_https(tmp_path: Path) -> None:
    """The TLS port closes a plain request without an answer; the error named only the close."""
    out = tmp_path / "tls"
    assert run_cli("keys", "tls", "--out", out, "--host", "127.0.0.1").returncode == 0
    served = Served(ServerTls(out / "plane.pem", out / "plane.key"))
    token = tmp_path / "admin.token"
    token.write_text("an-admin-token-of-enough-length")
    try:
        done = run_cli("relation", "list", "--tenant", "acme", "--plane", f"http://127.0.0.1:{served.port}",
                       "--token-file", token)
    finally:
        served.stop()
    assert done.returncode == 1, done
    line = one_error_line(done)
    assert line.startswith("error unavailable: "), line
    assert line.endswith("a plane serving HTTPS (--tls-cert) closes plain HTTP connections like this: use its "
                         "https:// URL (and --plane-ca)"), line


def test_keys_tls_client_flags_are_enough_for_the_plane_it_configured(tmp_path: Path) -> None:
    """With ``--client``, plane_flags turn mutual TLS on, but client_flags named only the CA: a
    client that used them as printed was refused."""
    out = tmp_path / "tls"
    made = run_cli("keys", "tls", "--out", out, "--host", "127.0.0.1", "--client", "admin")
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    plane_flags = dict(zip(summary["plane_flags"][::2], summary["plane_flags"][1::2], strict=True))
    client_flags = dict(zip(summary["client_flags"][::2], summary["client_flags"][1::2], strict=True))
    assert client_flags == dict(zip(summary["clients"]["admin"]["flags"][::2],
                                    summary["clients"]["admin"]["flags"][1::2], strict=True))
    served = Served(ServerTls(plane_flags["--tls-cert"], plane_flags["--tls-key"],
                              client_ca_file=plane_flags["--tls-client-ca"]))
    try:
        with PlaneClient(f"https://127.0.0.1:{served.port}", retry_for=0, ca=client_flags["--plane-ca"],
                         client_cert=client_flags.get("--plane-client-cert"),
                         client_key=client_flags.get("--plane-client-key")) as client:
            assert client.status()["scheme"] == "https"
    finally:
        served.stop()


# --------------------------------------------------------------------------- every plane command alike


def test_every_token_file_option_is_required_and_none_has_a_default() -> None:
    """``bundle rollout`` alone defaulted --token-file to ./admin.token (and --plane to ""), so a
    shell without dev.env got "cannot read token file admin.token" instead of the dev.env hint; and
    ``decisions``/``explain`` said they wanted the admin token, when the operator token reads too."""
    cli._register_service_groups()
    root = typer.main.get_command(cli.app)
    seen = []

    def walk(command: object, path: tuple[str, ...] = ()) -> None:
        for param in getattr(command, "params", ()):
            if getattr(param, "envvar", None) in ("TG_PLANE_URL", "TG_PLANE_TOKEN_FILE"):
                seen.append(path)
                assert param.required and param.default is None, (path, param.opts, param.default)
                if param.envvar == "TG_PLANE_TOKEN_FILE" and path[0] in ("decisions", "explain"):
                    assert "read-only operator" in param.help, (path, param.help)  # reads take either token
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(root)
    assert ("bundle", "rollout") in seen and ("decisions", "query") in seen


def test_bundle_rollout_without_dev_env_names_the_way_out() -> None:
    done = run_cli("bundle", "rollout")
    assert done.returncode == 2, done
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: Missing option '--plane'"), done.stderr
    assert last.endswith("`source .tenantguard/dev.env` sets it in this shell"), done.stderr
    usage = run_cli("bundle", "rollout", "--help").stdout.splitlines()[0]
    assert usage == "Usage: tenantguard bundle rollout [OPTIONS] [ACTION] [ID]", usage


# --------------------------------------------------------------------------- a sidecar started by hand


def test_a_sidecar_following_nats_without_a_bundle_key_is_refused_at_start(tmp_path: Path) -> None:
    """It used to start, follow the feed and refuse every announced bundle (bundle_unknown_key) for ever,
    not ready; docs/scoped-feeds.md's own example left the flag out."""
    key = tmp_path / "event.pem"
    SigningKey.generate().save(key)
    done = run_cli("sidecar", "serve", "--service", "billing", "--port", "0", "--grpc-port", "-1",
                   "--nats", "nats://127.0.0.1:9", "--plane-key", f"{key}.pub")
    assert done.returncode == 1, done
    assert one_error_line(done).startswith("error config_invalid: --nats needs --bundle-key: the plane's bundle "
                                           "public key (bundle.pem.pub")


# --------------------------------------------------------------------------- rollouts and shadows on a real plane


@pytest.fixture
def live_plane(tmp_path: Path) -> Iterator[tuple[PlaneProcess, dict[str, str]]]:
    """A plane replica on a real nats-server, and the environment dev.env would give a second shell."""
    with NatsServer(tmp_path / "nats") as server:
        world = World(tmp_path, server)
        plane = world.start()
        try:
            yield plane, ENV | {"TG_PLANE_URL": plane.base_url, "TG_PLANE_TOKEN_FILE": str(world.token_file)}
        finally:
            plane.stop()


@pytest.mark.nats
@pytest.mark.timeout(180)
def test_shadow_stop_and_a_halted_rollout_say_what_is_wrong_and_what_to_do(
        tmp_path: Path, live_plane: tuple[PlaneProcess, dict[str, str]]) -> None:
    """A token file of another plane got only "the credential is not the admin token"; ``shadow-stop``
    with no shadow running answered rollback_target_missing (a rollback's code); advancing a halted
    rollout said "only one in progress can advance" without naming resume."""
    _, env = live_plane
    other = tmp_path / "other.token"
    other.write_text("the-admin-token-of-another-plane")
    wrong = run_cli("bundle", "shadow-stop", "--scope", "all", "--token-file", other, env=env)
    assert wrong.returncode == 1, wrong
    assert one_error_line(wrong) == (
        "error forbidden: the credential is not the admin token; --token-file (TG_PLANE_TOKEN_FILE) must name the "
        "file the plane was started with (--admin-token-file, or --operator-token-file for reads); for `tenantguard "
        "dev` that is .tenantguard/plane/admin.token, which `source .tenantguard/dev.env` sets")
    stopped = run_cli("bundle", "shadow-stop", "--scope", "all", env=env)
    assert stopped.returncode == 1, stopped
    assert one_error_line(stopped) == ("error shadow_not_found: scope all has no shadow running; `tenantguard bundle "
                                       "rollout status` lists running shadows under fleet.shadow")

    published = run_cli("bundle", "publish", bundle_dir(tmp_path / "b"), "--stages", "billing;all", env=env)
    assert published.returncode == 0, published.stderr
    rollout_id = json.loads(published.stdout)["rollout"]["id"]
    assert run_cli("bundle", "rollout", "halt", rollout_id, env=env).returncode == 0
    # status is a table (issue 30: it printed ~150 lines of JSON); --json keeps the plane's full answer
    table = run_cli("bundle", "rollout", "status", env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert re.fullmatch(rf"rollout {re.escape(rollout_id)}: revision \S+, halted, stage 1 of 2", lines[0]), lines
    assert re.fullmatch(r"\s+1\s+billing\s+reached", lines[2]) and re.fullmatch(r"\s+2\s+all\s+pending", lines[3])
    assert "scopes (active revision)" in lines and not table.stdout.lstrip().startswith("{")
    full = run_cli("bundle", "rollout", "status", "--json", env=env)
    assert full.returncode == 0, full.stderr
    assert json.loads(full.stdout)["rollout"]["id"] == rollout_id
    refused = run_cli("bundle", "rollout", "advance", rollout_id, env=env)
    assert refused.returncode == 1, refused
    line = one_error_line(refused)
    assert re.fullmatch(rf"error rollout_conflict: rollout {re.escape(rollout_id)} is halted; resume it first "
                        rf"\(`tenantguard bundle rollout resume {re.escape(rollout_id)}`\), then advance", line), line
    assert run_cli("bundle", "rollout", "resume", rollout_id, env=env).returncode == 0
    advanced = run_cli("bundle", "rollout", "advance", rollout_id, env=env)
    assert advanced.returncode == 0, advanced.stderr
    assert json.loads(advanced.stdout)["rollout"]["status"] == "completed"


@pytest.mark.nats
@pytest.mark.timeout(180)
def test_pushing_an_archive_signed_by_another_key_says_which_key_the_plane_wants(
        tmp_path: Path, live_plane: tuple[PlaneProcess, dict[str, str]]) -> None:
    """bundles/README.md's ``bundle build --signing-key`` then ``bundle push``, with a key of one's own:
    the plane refused it and the CLI's advice named --bundle-key/--key/--trust, options push has not."""
    _, env = live_plane
    key = tmp_path / "mine.pem"
    SigningKey.generate().save(key)
    archive = tmp_path / "b.tar.gz"
    built = run_cli("bundle", "build", bundle_dir(tmp_path / "b"), "-o", archive, "--signing-key", key, env=env)
    assert built.returncode == 0, built.stderr
    pushed = run_cli("bundle", "push", archive, env=env)
    assert pushed.returncode == 1, pushed
    line = one_error_line(pushed)
    assert line.startswith("error bundle_unknown_key: "), line
    assert "for `bundle push`, the plane's bundle key, or leave the archive unsigned for the plane to sign" in line
    unsigned = tmp_path / "unsigned.tar.gz"
    assert run_cli("bundle", "build", tmp_path / "b", "-o", unsigned, env=env).returncode == 0
    accepted = run_cli("bundle", "push", unsigned, env=env)  # the way out the line names works
    assert accepted.returncode == 0 and json.loads(accepted.stdout)["signed_by_plane"] is True, accepted


def test_no_command_summary_is_cut_inside_a_parenthesis() -> None:
    """``decisions --help`` listed export as "... oldest first (e.g.": click ends a summary at the
    first word ending in a full stop, and "e.g." is one."""
    cli._register_service_groups()
    root = typer.main.get_command(cli.app)
    cut = []

    def walk(command: object, path: tuple[str, ...] = ()) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            summary = sub.get_short_help_str(limit=1000)
            if summary.count("(") != summary.count(")") or summary.endswith(("e.g.", "i.e.")):
                cut.append(((*path, name), summary))
            walk(sub, (*path, name))

    walk(root)
    assert not cut, cut


@pytest.mark.nats
@pytest.mark.timeout(240)
def test_published_contents_get_revisions_people_can_tell_apart(
        tmp_path: Path, live_plane: tuple[PlaneProcess, dict[str, str]]) -> None:
    """Issue 30: every publish of a folder was its .manifest's revision, so a staged bundle and the active
    one read the same in the plane's listing and in `bundle rollout status`. Without --revision a publish
    is <.manifest revision>-<12 hex of the content>: other content, another revision; the same content
    again, the same revision, reported unchanged; --revision is taken as given. Earlier, a changed folder
    published again was refused as "already active with other content"; an explicit --revision naming
    the active one still is, and the message says both ways out."""
    plane, env = live_plane
    folder = bundle_dir(tmp_path / "b")  # .manifest revision "r1"

    def publish(*extra: str) -> dict[str, Any]:
        done = run_cli("bundle", "publish", folder, *extra, env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def listed() -> dict[str, str]:
        return {s["scope"]: s["revision"] for s in plane.client().get("/v1/bundles").json()["scopes"]}

    first = publish()
    active = content_revision(folder)
    assert re.fullmatch(r"r1-[0-9a-f]{12}", active) and first["revision"] == active, first
    again = publish()  # the same sources, built again with a newer serial
    assert again["revision"] == active and [s["unchanged"] for s in again["scopes"]] == [True], again
    (folder / "more.rego").write_text("package demo\n\nimport rego.v1\n\nextra if input.user == \"carol\"\n")
    staged = content_revision(folder)
    assert re.fullmatch(r"r1-[0-9a-f]{12}", staged) and staged != active
    started = publish("--stages", "billing;all")
    assert started["revision"] == staged and started["rollout"]["revision"] == staged, started
    assert listed() == {"all": active, "billing": staged}

    table = run_cli("bundle", "rollout", "status", env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert re.fullmatch(rf"rollout {re.escape(started['rollout']['id'])}: revision {staged}, in_progress, "
                        r"stage 1 of 2", lines[0]), lines
    rows = {line.split()[0]: line.split()[1] for line in lines[lines.index("scopes (active revision)") + 2:]
            if line.startswith("  ") and len(line.split()) == 5}
    assert rows == {"all": active, "billing": staged}, table.stdout  # whole revisions, never cut

    done = run_cli("bundle", "rollout", "advance", started["rollout"]["id"], env=env)
    assert done.returncode == 0, done.stderr
    assert listed() == {"all": staged, "billing": staged}
    assert publish("--revision", "r2")["revision"] == "r2"  # taken as given, content unchanged or not
    assert listed()["all"] == "r2"
    (folder / "more.rego").write_text("package demo\n\nimport rego.v1\n\nextra if input.user == \"dave\"\n")
    refused = run_cli("bundle", "publish", folder, "--revision", "r2", env=env)
    assert refused.returncode == 1, refused
    assert one_error_line(refused) == (
        "error bundle_rollback: revision 'r2' is already active in scope all with other content; publish a new "
        "revision: give another --revision, or leave --revision out and the build names the bundle after its content")
    assert publish()["revision"] == content_revision(folder) != staged  # the way out the message names
    back = run_cli("bundle", "rollback", "--scope", "all", "--to", active, env=env)  # named as listed
    assert back.returncode == 0, back.stderr
    restored = json.loads(back.stdout)
    assert restored["restored"] == active and re.fullmatch(rf"{re.escape(active)}\.rollback\.\d+", restored["revision"])
    assert listed()["all"] == restored["revision"]


@pytest.mark.parametrize(("args", "says"), [
    (("serve", "plane"), "No such command 'serve'. Did you mean `tenantguard plane serve` or "
                         "`tenantguard sidecar serve`?"),
    (("publish", "bundles/tenantguard"), "No such command 'publish'. Did you mean `tenantguard bundle publish`?"),
    (("relations", "write"), "No such command 'relations'. Did you mean 'relation', 'explain'?"),  # typos as before
    (("relation", "--plane", "http://127.0.0.1:9", "write", "acme/project:p1#member@user:bob"),
     "--plane belongs to a sub-command: put it after the sub-command's name (`tenantguard relation COMMAND ... "
     "--plane ...`)"),
    (("relation", "--nope", "write"), "No such option: --nope"),
    # a value not among the choices, without pydantic's "Value error, " in front
    (("bundle", "rollout", "advanse", "--plane", "http://127.0.0.1:9", "--token-file", "/dev/null"),
     "Invalid value for 'ACTION': 'advanse' is not one of 'status', 'advance', 'halt', 'resume', 'abort'."),
    (("decisions", "query", "--outcome", "maybe", "--plane", "http://127.0.0.1:9", "--token-file", "/dev/null"),
     "Invalid value for '--outcome': 'maybe' is not one of 'allow', 'deny'."),
])
def test_a_sub_command_typed_first_is_pointed_to_its_group(args: tuple[str, ...], says: str) -> None:
    """``tenantguard serve plane`` got "No such command 'serve'." and nothing more; an option given
    before its sub-command, "No such option: --plane", as if the option did not exist."""
    done = run_cli(*args)
    assert done.returncode == 2, done
    assert done.stderr.strip().splitlines()[-1] == f"Error: {says}", done.stderr


# --------------------------------------------------------------------------- impact of a change, from the decision log

EXPORTED = {  # one line of `tenantguard decisions export`, as dev's sidecar writes it (format 2: input, no relations)
    "v": 2, "decision_id": "c5f7d1f35765e0457f85df7b4e2a2157", "time": 1796188248.7, "service": "orders",
    "sidecar": "orders-vm-1", "door": "native", "tenant": "acme", "subject": "user:alice", "action": "invoices:read",
    "resource": "invoice:inv-1", "allow": True, "reasons": [], "bundle_revision": "1", "relations_seq": 1,
    "path": "data.tenantguard.decision", "latency_us": 512, "actor_chain": [], "act_as": False, "high_risk": False,
    "erased": [], "token": {"iss": "dev", "jti": "b754b346c3be46f096f7fc3194e38749", "kid": "k"},
    "input": {"action": {"name": "invoices:read"}, "actor_chain": [], "actor_services": [],
              "context": {"service": "orders"}, "scope_limits": [],
              "resource": {"id": "inv-1", "type": "invoice", "properties": {"project": "p1", "tenant_id": "acme"}},
              "subject": {"id": "alice", "type": "user", "properties": {"roles": ["editor"], "tenant_id": "acme"}},
              "token": {"iss": "dev", "jti": "b754b346c3be46f096f7fc3194e38749", "kid": "k"}},
}


@pytest.mark.nats
@pytest.mark.timeout(180)
def test_impact_of_a_decision_log_export_says_it_needs_relations_and_takes_relation_list(
        tmp_path: Path, live_plane: tuple[PlaneProcess, dict[str, str]]) -> None:
    """operations.md's impact flow with what an operator has on day one (an export of the decision
    log): its records keep no relations, so an unchanged policy "locked alice out" with no word why;
    now the report says so, and the plane's `relation list` output is a --relations file."""
    _, env = live_plane
    root = Path(__file__).parents[2]
    export = tmp_path / "acme.jsonl"
    export.write_text(json.dumps(EXPORTED) + "\n")
    bare = run_cli("bundle", "impact", root / "bundles" / "tenantguard", "--inputs", export, env=env)
    assert bare.returncode == 1, bare  # still reported (fail closed), but explained
    assert "1 records hold no relations (a decision-log record keeps its input without them)" in bare.stdout
    assert "Give --relations (`tenantguard relation list --tenant T --limit 1000 > relations.json`" in bare.stdout

    assert run_cli("relation", "write", "acme/project:p1#member@user:alice", env=env).returncode == 0
    listed = run_cli("relation", "list", "--tenant", "acme", "--limit", "1000", env=env)
    assert listed.returncode == 0, listed.stderr
    relations = tmp_path / "relations.json"
    relations.write_text(listed.stdout)
    replayed = run_cli("bundle", "impact", root / "bundles" / "tenantguard", "--inputs", export, "--relations",
                       relations, "--json", env=env)
    assert replayed.returncode == 0, replayed
    report = json.loads(replayed.stdout)
    assert report["flips"]["total"] == 0 and report["relations_missing"] == 0 and report["agreed"] == 1, report

    assert run_cli("relation", "write", "acme/project:p2#member@user:bob", env=env).returncode == 0
    page = run_cli("relation", "list", "--tenant", "acme", "--limit", "1", env=env)
    relations.write_text(page.stdout)
    partial = run_cli("bundle", "impact", root / "bundles" / "tenantguard", "--inputs", export, "--relations",
                      relations, env=env)
    assert partial.returncode == 1 and "is one page of `tenantguard relation list` and more follow" in \
        partial.stderr, partial


def test_every_command_a_help_text_shows_exists_with_its_flags() -> None:
    """The examples in --help (`bundle rollout advance ID`, `publish --stages`, `tenantguard plane init DIR
    --service NAME`...) are what a newcomer types next: each must name real commands and flags, checked
    as docs/*.md's command lines are (tests/docs/test_docs.py), a group's own sub-commands read in it."""
    from tests.harness.doc_commands import check_command, load_generator

    gen = load_generator()
    root = gen.cli_root()
    checked, wrong = 0, []
    for path, command in gen.walk(root):
        path = tuple(path)
        texts = [command.help or "", *(getattr(param, "help", None) or "" for param in command.params)]
        for span in (span for text in texts for span in re.findall(r"`([^`]+)`", text)):
            first = span.split()[0]
            group = root.commands.get(path[0]) if path else None
            if first == "tenantguard":
                line = span
            elif first in root.commands:
                line = f"tenantguard {span}"
            elif group is not None and first in getattr(group, "commands", {}):
                line = f"tenantguard {path[0]} {span}"
            else:
                continue  # not a command line (a file name, a JSON member, ...)
            checked += 1
            why = check_command(root, gen, line)
            if why is not None:
                wrong.append((path, span, why))
    assert checked >= 15 and not wrong, (checked, wrong)


@pytest.mark.nats
@pytest.mark.timeout(180)
def test_shadow_options_without_shadow_publish_nothing(
        tmp_path: Path, live_plane: tuple[PlaneProcess, dict[str, str]]) -> None:
    """``bundle publish DIR --sample-rate 0.5`` (the operator meant a shadow) used to drop the option and
    publish DIR as the active bundle of every sidecar; and a rollout already running refused the next
    one with "finish or abort it first" without the commands that do."""
    plane, env = live_plane
    folder = bundle_dir(tmp_path / "b")
    for extra, flag in ((("--sample-rate", "0.5"), "--sample-rate"), (("--max-per-second", "10"), "--max-per-second"),
                        (("--impact", "report", "--max-undeclared", "3"), "--max-undeclared")):
        done = run_cli("bundle", "publish", folder, *extra, env=env)
        assert done.returncode == 2, done
        assert done.stderr.strip().splitlines()[-1].startswith(f"Error: Invalid value for {flag}: "), done.stderr
    assert plane.client().get("/v1/bundles").json()["scopes"] == [], "nothing may have been published"

    started = run_cli("bundle", "publish", folder, "--stages", "billing;all", env=env)
    assert started.returncode == 0, started.stderr
    rollout_id = json.loads(started.stdout)["rollout"]["id"]
    busy = run_cli("bundle", "publish", folder, "--revision", "r2", "--stages", "orders;all", env=env)
    assert busy.returncode == 1, busy
    assert one_error_line(busy) == (
        f"error rollout_conflict: rollout {rollout_id} is in_progress; finish it (`tenantguard bundle rollout advance "
        f"{rollout_id}` to its last stage) or abort it (`tenantguard bundle rollout abort {rollout_id}`) first")
