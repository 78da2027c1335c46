"""``tenantguard bundle``: real bundles, real keys, real archives; no mocks."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result
from tenantguard.bundle import content_revision, inspect, read_archive, revision_digest, write_archive
from tenantguard.cli import app
from tenantguard.identity.keys import SigningKey
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
TENANTGUARD_BUNDLE = REPO / "bundles" / "tenantguard"
CLI = Path(sys.executable).with_name("tenantguard")

POLICY = """package demo

import rego.v1

allow if input.user == "alice"
"""

TESTS = """package demo_test

import rego.v1

import data.demo

test_alice_allowed if demo.allow with input as {"user": "alice"}

test_bob_allowed if {
\tprint("checking bob")
\tdemo.allow with input as {"user": "bob"}
}
"""

# An AuthZEN-shaped request the shipped policy allows: alice, editor in acme, member of
# project p1, reads an acme invoice through billing (see bundles/tenantguard/decision.rego).
# No project: membership is asked of the schema through tg.related, which `bundle eval` (no
# decision, so no tenant and no relations) answers False (test_eval_cannot_see_relations).
ALLOWED_REQUEST = {
    "subject": {"type": "user", "id": "alice", "properties": {"tenant_id": "acme", "roles": ["editor"]}},
    "action": {"name": "invoices:read"},
    "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": "acme"}},
    "context": {"service": "billing"},
    "token": None,
    "actor_chain": [],
    "relations": {},
}


def invoke(*args: str | Path, input: str | None = None) -> Result:
    """Run the CLI in-process; no exception may escape (it would become a traceback)."""
    result = CliRunner().invoke(app, [str(arg) for arg in args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the installed ``tenantguard`` script, so errors go through ``main()``."""
    done = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in done.stdout + done.stderr
    return done


@pytest.fixture()
def keys(tmp_path: Path) -> tuple[Path, Path]:
    """Two key pairs on disk: (signing key, other key); public keys are at ``<key>.pub``."""
    paths = []
    for name in ("signer.pem", "other.pem"):
        path = tmp_path / name
        SigningKey.generate("EdDSA").save(path)
        paths.append(path)
    return paths[0], paths[1]


@pytest.fixture()
def signed_bundle(tmp_path: Path, keys: tuple[Path, Path]) -> Path:
    out = tmp_path / "bundle.tar.gz"
    result = invoke("bundle", "build", TENANTGUARD_BUNDLE, "-o", out, "--signing-key", keys[0], "--serial", "7")
    assert result.exit_code == 0, result.output
    return out


def _demo_bundle(root: Path) -> Path:
    root.mkdir()
    (root / "policy.rego").write_text(POLICY)
    (root / "policy_test.rego").write_text(TESTS)
    return root


# --------------------------------------------------------------------------- test


def test_shipped_bundle_tests_pass() -> None:
    result = invoke("bundle", "test", TENANTGUARD_BUNDLE)
    assert result.exit_code == 0, result.output
    summary = re.search(r"^(\d+) passed, 0 failed$", result.stdout, re.MULTILINE)
    assert summary is not None, result.stdout
    passed = int(summary.group(1))
    assert passed > 0
    lines = result.stdout.strip().splitlines()
    assert lines[0] == summary.group(0)  # the Rego tests: only the summary, nothing failed
    # then the schema's test file (schema_test.fga.yaml): a PASS line per test and its total
    assert lines[1:-1] and all(line.startswith("PASS ") for line in lines[1:-1]), lines
    assert re.fullmatch(r".*schema_test\.fga\.yaml: (\d+)/\1 assertions passed", lines[-1]), lines[-1]
    listed = invoke("bundle", "test", TENANTGUARD_BUNDLE, "-v")
    assert len(re.findall(r": PASS \(", listed.stdout)) == passed
    assert "FAIL" not in listed.stdout and "ERROR" not in listed.stdout


def test_failing_test_exits_1_and_is_named(tmp_path: Path) -> None:
    result = invoke("bundle", "test", _demo_bundle(tmp_path / "demo"))
    assert result.exit_code == 1
    assert re.search(r"data\.demo_test\.test_bob_allowed: FAIL", result.stdout)
    assert "test_alice_allowed" not in result.stdout  # passing tests only with -v
    assert "checking bob" in result.stdout  # a failing test's print() output is always shown
    assert "1 passed, 1 failed" in result.stdout
    assert re.search(r"data\.demo_test\.test_alice_allowed: PASS",
                     invoke("bundle", "test", _demo_bundle(tmp_path / "again"), "-v").stdout)


def test_run_filter_verbose_and_coverage(tmp_path: Path) -> None:
    result = invoke("bundle", "test", _demo_bundle(tmp_path / "demo"), "--run", "alice", "-v", "--coverage")
    assert result.exit_code == 0, result.output
    assert "test_bob_allowed" not in result.stdout
    assert "1 passed, 0 failed" in result.stdout
    assert re.search(r"^coverage policy\.rego: 100\.0%$", result.stdout, re.MULTILINE)
    assert "coverage total:" in result.stdout


def test_no_matching_test_exits_1_and_bad_regex_is_a_usage_error(tmp_path: Path) -> None:
    demo = _demo_bundle(tmp_path / "demo")
    nothing = invoke("bundle", "test", demo, "--run", "no_such_test")
    assert nothing.exit_code == 1 and "no tests found" in nothing.stdout
    assert invoke("bundle", "test", demo, "--run", "(").exit_code == 2


def test_compile_error_is_a_typed_error_without_traceback(tmp_path: Path) -> None:
    demo = _demo_bundle(tmp_path / "demo")
    (demo / "broken.rego").write_text("package broken\n\nallow if {\n")
    done = run_cli("bundle", "test", demo)
    assert done.returncode == 1
    assert "error policy_compile_error:" in done.stderr and "broken.rego" in done.stderr


# --------------------------------------------------------------------------- build / verify / sign


def test_build_verify_round_trip(signed_bundle: Path, keys: tuple[Path, Path]) -> None:
    kid = SigningKey.load(keys[0]).kid
    result = invoke("bundle", "verify", signed_bundle, "--key", f"{keys[0]}.pub")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("OK ") and kid in result.stdout
    assert f" revision {content_revision(TENANTGUARD_BUNDLE)}, " in result.stdout, result.stdout


def test_build_reports_revision_files_and_signer(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    out = tmp_path / "b.tar.gz"
    result = invoke("bundle", "build", TENANTGUARD_BUNDLE, "-o", out, "--revision", "r42", "--signing-key", keys[0])
    assert result.exit_code == 0, result.output
    sources = {
        path.relative_to(TENANTGUARD_BUNDLE).as_posix()
        for path in TENANTGUARD_BUNDLE.rglob("*")
        if path.suffix == ".rego" or path.name in ("data.json", ".manifest", "schema.fga")
    }
    assert "schema.fga" in sources and "schema_test.fga.yaml" not in set(read_archive(out))  # tests are not packed
    assert "revision r42" in result.stdout
    assert f"{len(sources)} files" in result.stdout
    assert SigningKey.load(keys[0]).kid in result.stdout
    assert set(read_archive(out)) == sources | {".signatures.json"}


def test_verify_with_several_keys_or_a_trust_file(signed_bundle: Path, keys: tuple[Path, Path], tmp_path: Path) -> None:
    several = invoke("bundle", "verify", signed_bundle, "--key", f"{keys[1]}.pub", "--key", f"{keys[0]}.pub")
    assert several.exit_code == 0, several.output
    trust = tmp_path / "trust.json"
    assert invoke("keys", "jwks", f"{keys[0]}.pub", "--issuer", "policy", "--out", trust).exit_code == 0
    trusted = invoke("bundle", "verify", signed_bundle, "--trust", trust)
    assert trusted.exit_code == 0, trusted.output
    wrong_issuer = invoke("bundle", "verify", signed_bundle, "--trust", trust, "--issuer", "edge")
    assert wrong_issuer.exit_code == 1 and "bundle_unknown_key" in wrong_issuer.output


def test_verify_with_the_wrong_key_exits_1(signed_bundle: Path, keys: tuple[Path, Path]) -> None:
    result = invoke("bundle", "verify", signed_bundle, "--key", f"{keys[1]}.pub")
    assert result.exit_code == 1
    assert "error bundle_signature_invalid:" in result.stderr
    assert signed_bundle.name in result.stderr and "OK" not in result.stdout


def test_tampered_archive_exits_1(signed_bundle: Path, keys: tuple[Path, Path], tmp_path: Path) -> None:
    files = read_archive(signed_bundle)
    data = json.loads(files["data.json"])
    data["tenantguard"]["config"]["roles"]["viewer"].append("write")
    files["data.json"] = json.dumps(data).encode()
    tampered = tmp_path / "tampered.tar.gz"
    tampered.write_bytes(write_archive(files))
    result = invoke("bundle", "verify", tampered, "--key", f"{keys[0]}.pub")
    assert result.exit_code == 1
    assert "error bundle_hash_mismatch:" in result.stderr and "data.json" in result.stderr

    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(b"not a bundle at all")
    garbage = invoke("bundle", "verify", corrupt, "--key", f"{keys[0]}.pub")
    assert garbage.exit_code == 1 and "error bundle_malformed:" in garbage.stderr


def test_unsigned_bundle_is_rejected_by_verify(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    out = tmp_path / "unsigned.tar.gz"
    built = invoke("bundle", "build", TENANTGUARD_BUNDLE, "-o", out)
    assert built.exit_code == 0 and "unsigned" in built.stdout
    result = invoke("bundle", "verify", out, "--key", f"{keys[0]}.pub")
    assert result.exit_code == 1 and "error bundle_unsigned:" in result.stderr


def test_sign_replaces_the_signature(signed_bundle: Path, keys: tuple[Path, Path], tmp_path: Path) -> None:
    resigned = tmp_path / "resigned.tar.gz"
    result = invoke("bundle", "sign", signed_bundle, "--signing-key", keys[1], "-o", resigned)
    assert result.exit_code == 0, result.output
    assert invoke("bundle", "verify", resigned, "--key", f"{keys[1]}.pub").exit_code == 0
    assert invoke("bundle", "verify", resigned, "--key", f"{keys[0]}.pub").exit_code == 1


def test_bad_signing_key_is_a_typed_error_without_traceback(tmp_path: Path) -> None:
    not_a_key = tmp_path / "key.pem"
    not_a_key.write_text("hello")
    done = run_cli("bundle", "build", TENANTGUARD_BUNDLE, "-o", tmp_path / "b.tar.gz", "--signing-key", not_a_key)
    assert done.returncode == 1 and "error key_invalid:" in done.stderr
    assert not (tmp_path / "b.tar.gz").exists()


def _revision(archive: Path) -> str:
    return str(inspect(archive)["manifest"]["revision"])


def test_build_names_the_bundle_after_its_content_unless_a_revision_is_given(tmp_path: Path) -> None:
    """Issue 30: every build of bundles/tenantguard was revision "1" (its .manifest's), whatever it held.
    Without --revision the revision is <.manifest revision>-<12 hex of the content's digest>: the same
    files give the same revision whenever they are built (the serial is not content), any change
    another one; --revision is taken as given."""
    source = tmp_path / "b"
    shutil.copytree(TENANTGUARD_BUNDLE, source)
    first, again, changed, named = (tmp_path / f"{name}.tar.gz" for name in ("first", "again", "changed", "named"))
    built = invoke("bundle", "build", source, "-o", first, "--serial", "1")
    assert built.exit_code == 0, built.output
    revision = _revision(first)
    assert re.fullmatch(r"1-[0-9a-f]{12}", revision), revision
    assert revision == content_revision(source) == "1-" + revision_digest(read_archive(first))[:12]
    assert f"wrote {first}: revision {revision}, serial 1, " in " ".join(built.stdout.split())
    assert invoke("bundle", "build", source, "-o", again, "--serial", "2").exit_code == 0
    assert _revision(again) == revision and read_archive(again) != read_archive(first)  # other serial, same name
    (source / "note.rego").write_text('package tenantguard.note\n\nimport rego.v1\n\nnote := "a change"\n')
    assert invoke("bundle", "build", source, "-o", changed).exit_code == 0
    assert _revision(changed) != revision and _revision(changed) == content_revision(source)
    assert _revision(changed).startswith("1-")
    assert invoke("bundle", "build", source, "-o", named, "--revision", "2024.06.1").exit_code == 0
    assert _revision(named) == "2024.06.1"


# --------------------------------------------------------------------------- inspect


def test_inspect_lists_files_and_claimed_signer(signed_bundle: Path, keys: tuple[Path, Path]) -> None:
    kid = SigningKey.load(keys[0]).kid
    text = invoke("bundle", "inspect", signed_bundle)
    assert text.exit_code == 0, text.output
    assert "decision.rego" in text.stdout and "data.json" in text.stdout
    assert "NOT verified" in text.stdout and kid in text.stdout
    as_json = json.loads(invoke("bundle", "inspect", signed_bundle, "--json").stdout)
    assert as_json["manifest"]["metadata"]["serial"] == 7
    assert as_json["signature"]["verified"] is False and as_json["signature"]["kid"] == kid
    listed = {entry["name"]: entry for entry in as_json["files"]}
    assert listed["decision.rego"]["size"] == (TENANTGUARD_BUNDLE / "decision.rego").stat().st_size
    assert re.fullmatch(r"[0-9a-f]{64}", listed["decision.rego"]["sha256"])


# --------------------------------------------------------------------------- eval


def test_eval_returns_the_decision(signed_bundle: Path, keys: tuple[Path, Path], tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(ALLOWED_REQUEST))
    pub = f"{keys[0]}.pub"
    allowed = invoke("bundle", "eval", signed_bundle, "--key", pub, "--input", f"@{request}")
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout) == {"allow": True, "reasons": [], "high_risk": False}

    other_tenant = json.loads(json.dumps(ALLOWED_REQUEST))
    other_tenant["resource"]["properties"]["tenant_id"] = "globex"
    denied = invoke(
        "bundle", "eval", signed_bundle, "--key", pub, "--query", "data.tenantguard.decision",
        "--input", json.dumps(other_tenant),
    )  # fmt: skip
    assert denied.exit_code == 0, denied.output  # a deny is a result, not a failure
    decision = json.loads(denied.stdout)
    assert decision["allow"] is False and "tenant_mismatch" in decision["reasons"]

    from_stdin = invoke("bundle", "eval", signed_bundle, "--key", pub, "--input", "@-", input=request.read_text())
    assert json.loads(from_stdin.stdout)["allow"] is True


def test_eval_cannot_see_relations(signed_bundle: Path, keys: tuple[Path, Path]) -> None:
    """A resource in a project needs the schema's answer, which only a sidecar's decision has:
    `bundle eval` runs the policy with tg.related answering False, so it denies."""
    in_project = json.loads(json.dumps(ALLOWED_REQUEST))
    in_project["resource"]["properties"]["project"] = "p1"
    in_project["relations"] = {"project:p1": ["member"]}  # relations in the input are not membership
    denied = invoke("bundle", "eval", signed_bundle, "--key", f"{keys[0]}.pub", "--input", json.dumps(in_project))
    assert denied.exit_code == 0, denied.output
    assert json.loads(denied.stdout) == {"allow": False, "reasons": ["not_project_member"], "high_risk": False}


def test_eval_undefined_and_invalid_query(signed_bundle: Path, keys: tuple[Path, Path]) -> None:
    pub = f"{keys[0]}.pub"
    undefined = invoke("bundle", "eval", signed_bundle, "--key", pub, "--query", "data.tenantguard.no_such_rule")
    assert undefined.exit_code == 1 and undefined.stdout.strip() == "undefined"
    assert invoke("bundle", "eval", signed_bundle, "--key", pub, "--input", "{").exit_code == 2
    done = run_cli("bundle", "eval", signed_bundle, "--key", pub, "--query", "data.x[0]")
    assert done.returncode == 1 and "error entrypoint_invalid:" in done.stderr


def test_eval_needs_a_key_unless_unsigned(signed_bundle: Path, tmp_path: Path) -> None:
    assert invoke("bundle", "eval", signed_bundle).exit_code == 2  # no key, no --unsigned
    signed_without_key = invoke("bundle", "eval", signed_bundle, "--unsigned")
    assert signed_without_key.exit_code == 1 and "bundle_signature_invalid" in signed_without_key.stderr
    unsigned = tmp_path / "unsigned.tar.gz"
    assert invoke("bundle", "build", TENANTGUARD_BUNDLE, "-o", unsigned).exit_code == 0
    query = "data.tenantguard.config.max_actor_chain"
    assert invoke("bundle", "eval", unsigned, "--query", query).exit_code == 2
    result = invoke("bundle", "eval", unsigned, "--unsigned", "--query", query)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == 4


# --------------------------------------------------------------------------- plane, help


def test_plane_commands_fail_typed_when_the_plane_is_unreachable(tmp_path: Path) -> None:
    """push/publish talk to the plane (tests/plane covers them against a real one)."""
    token = tmp_path / "token"
    token.write_text("some-admin-token-0123456789")
    archive = tmp_path / "b.tar.gz"
    assert invoke("bundle", "build", TENANTGUARD_BUNDLE, "-o", archive).exit_code == 0
    done = run_cli("bundle", "push", str(archive), "--plane", "http://127.0.0.1:1", "--token-file", str(token))
    assert done.returncode == 1 and "error plane_refused" in done.stderr and "127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["test", "build", "sign", "verify", "inspect", "eval", "push", "publish"])
def test_every_command_has_help(command: str) -> None:
    result = invoke("bundle", command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.stdout and "not yet available in this build)" not in result.stdout


def test_bundle_is_registered_not_a_placeholder() -> None:
    done = run_cli("bundle", "--help")
    assert done.returncode == 0
    assert "verify" in done.stdout and "not yet available" not in done.stdout


@pytest.mark.parametrize(("broken", "says"), [
    ({"roles.rego": "package tenantguard.roles\n\nallow if {\n"}, "roles.rego"),
    ({".manifest": '{"revision": "r1", "roots": ["tenantguard"], "metadata": {"decision": "data.tenantguard.nope"}}'},
     "data.tenantguard.nope"),
])
def test_build_and_sign_refuse_a_policy_that_does_not_compile(
        tmp_path: Path, keys: tuple[Path, Path], broken: dict[str, str], says: str) -> None:
    """A syntax error (or a manifest decision no rule defines) was built and signed, and only
    the plane or every sidecar refused the bundle later; now nothing is written."""
    source = tmp_path / "src"
    source.mkdir()
    for path in TENANTGUARD_BUNDLE.iterdir():
        (source / path.name).write_bytes(path.read_bytes())
    for name, text in broken.items():
        (source / name).write_text((source / name).read_text() + text if name.endswith(".rego") else text)
    out = tmp_path / "b.tar.gz"
    built = run_cli("bundle", "build", source, "-o", out, "--signing-key", keys[0])
    assert built.returncode == 1 and not out.exists(), built
    assert built.stderr.startswith("error policy_compile_error:") or built.stderr.startswith(
        "error entrypoint_invalid:"), built.stderr
    assert says in built.stderr, built.stderr
    good = tmp_path / "good.tar.gz"
    assert invoke("bundle", "build", TENANTGUARD_BUNDLE, "-o", good).exit_code == 0
    files = read_archive(good)
    files["roles.rego"] = files["roles.rego"] + broken.get("roles.rego", "allow if {\n").encode()
    tampered = tmp_path / "tampered.tar.gz"
    tampered.write_bytes(write_archive(files))
    signed = run_cli("bundle", "sign", tampered, "--signing-key", keys[0], "-o", tmp_path / "signed.tar.gz")
    assert signed.returncode == 1 and not (tmp_path / "signed.tar.gz").exists(), signed
    assert signed.stderr.startswith("error policy_compile_error:") and "roles.rego" in signed.stderr, signed.stderr


# --------------------------------------------------------------------------- build and push run the tests


def failing_bundle(root: Path) -> Path:
    """A bundle whose own test fails (bob is not allowed, the test says he is)."""
    root.mkdir()
    (root / ".manifest").write_text('{"revision": "r1"}')
    (root / "demo.rego").write_text(POLICY)
    (root / "demo_test.rego").write_text(TESTS)
    return root


def test_build_runs_the_tests_and_writes_nothing_when_one_fails(tmp_path: Path) -> None:
    source, out = failing_bundle(tmp_path / "b"), tmp_path / "b.tar.gz"
    refused = run_cli("bundle", "build", source, "-o", out)
    assert refused.returncode == 1 and not out.exists(), refused
    assert "FAIL data.demo_test.test_bob_allowed" in refused.stderr
    assert "error policy_tests_failed: 1 of 2 tests did not pass; nothing was written" in " ".join(
        refused.stderr.split())
    skipped = run_cli("bundle", "build", source, "-o", out, "--skip-tests")
    assert skipped.returncode == 0 and out.exists(), skipped
    assert "--skip-tests: the bundle's Rego tests were not run" in skipped.stderr


def test_push_runs_the_archives_tests_before_it_uploads(tmp_path: Path) -> None:
    """Refused before any request: the plane address is one nothing listens on."""
    token = tmp_path / "token"
    token.write_text("some-admin-token-0123456789")
    archive = tmp_path / "b.tar.gz"
    assert run_cli("bundle", "build", failing_bundle(tmp_path / "b"), "-o", archive, "--skip-tests").returncode == 0
    refused = run_cli("bundle", "push", archive, "--plane", "http://127.0.0.1:1", "--token-file", token)
    assert refused.returncode == 1 and "nothing was uploaded" in refused.stderr, refused
    assert "unavailable" not in refused.stderr
    skipped = run_cli("bundle", "push", archive, "--plane", "http://127.0.0.1:1", "--token-file", token,
                      "--skip-tests")
    assert skipped.returncode == 1 and "error plane_refused" in skipped.stderr, skipped  # it went on to the plane
