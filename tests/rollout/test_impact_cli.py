"""``tenantguard bundle impact``: the offline CI gate over recorded decisions."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tenantguard.bundle import content_revision
from tenantguard.cli import app
from tenantguard.identity.keys import SigningKey
from typer.testing import CliRunner

from .conftest import BUNDLE_DIR, record

runner = CliRunner()


def jsonl(path: Path, *lines: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_undeclared_flips_fail_the_gate_and_the_report_names_them(candidates: dict, tmp_path: Path) -> None:
    inputs = jsonl(tmp_path / "recorded.jsonl", record("alice"), record("olga", held=("owner",)))
    result = runner.invoke(app, ["bundle", "impact", str(candidates["lockout"]), "--inputs", str(inputs),
                                 "--baseline", str(BUNDLE_DIR), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert not report["ok"] and report["undeclared"] == 1 and report["agreed"] == 1
    assert report["groups"][0]["examples"][0]["decision_id"] == "d-alice-acme"
    text = runner.invoke(app, ["bundle", "impact", str(candidates["lockout"]), "--inputs", str(inputs)])
    assert text.exit_code == 1 and "UNDECLARED allow->deny" in text.output and "tenant=acme" in text.output


def test_declared_flips_pass_from_the_manifest_or_an_expect_file(candidates: dict, tmp_path: Path) -> None:
    inputs = jsonl(tmp_path / "recorded.jsonl", record("alice"))
    declared = runner.invoke(app, ["bundle", "impact", str(candidates["declared"]), "--inputs", str(inputs)])
    assert declared.exit_code == 0, declared.output
    assert "expected" in declared.output
    expect = tmp_path / "expect.json"
    expect.write_text(json.dumps({"expected_flips": [{"tenant": "acme", "reason": "not_project_*"}]}))
    by_file = runner.invoke(app, ["bundle", "impact", str(candidates["lockout"]), "--inputs", str(inputs),
                                  "--expect", str(expect)])
    assert by_file.exit_code == 0, by_file.output
    tolerated = runner.invoke(app, ["bundle", "impact", str(candidates["lockout"]), "--inputs", str(inputs),
                                    "--max-undeclared", "1"])
    assert tolerated.exit_code == 0


def test_archives_are_verified_when_a_key_is_given(candidates: dict, tmp_path: Path) -> None:
    key, other = SigningKey.generate(), SigningKey.generate()
    (tmp_path / "k.pem").write_bytes(key.private_pem())
    (tmp_path / "o.pem").write_bytes(other.private_pem())
    archive = tmp_path / "c.tar.gz"
    assert runner.invoke(app, ["bundle", "build", str(candidates["lockout"]), "-o", str(archive),
                               "--signing-key", str(tmp_path / "k.pem")]).exit_code == 0
    inputs = jsonl(tmp_path / "recorded.jsonl", record("olga", held=("owner",)))
    ok = runner.invoke(app, ["bundle", "impact", str(archive), "--inputs", str(inputs), "--key",
                             str(tmp_path / "k.pem")])
    assert ok.exit_code == 0, ok.output
    forged = runner.invoke(app, ["bundle", "impact", str(archive), "--inputs", str(inputs), "--key",
                                 str(tmp_path / "o.pem")])
    assert forged.exit_code == 1 and getattr(forged.exception, "code", None) == "bundle_signature_invalid"


def test_a_bad_record_stops_the_gate_with_its_line(candidates: dict, tmp_path: Path) -> None:
    inputs = tmp_path / "recorded.jsonl"
    inputs.write_text(json.dumps(record("alice")) + "\n{\"allow\": true}\n")
    result = runner.invoke(app, ["bundle", "impact", str(candidates["lockout"]), "--inputs", str(inputs)])
    assert result.exit_code == 1 and getattr(result.exception, "code", None) == "replay_record_invalid"
    assert "line 2" in str(result.exception)  # the CLI's main() prints it as "error replay_record_invalid: ..."


def test_a_deny_rule_in_a_new_file_flips_every_allowed_record(tmp_path: Path) -> None:
    """Issue 30: the example bundle plus `deny contains "frozen" if true` in a file of its own.
    Every recorded allow (a direct call, a call through a service with a scoped token, a route
    with no project as the Envoy doors ask) becomes a deny in the report; the deny stays one."""
    candidate = tmp_path / "frozen"
    shutil.copytree(BUNDLE_DIR, candidate)
    (candidate / "frozen.rego").write_text('package tenantguard\n\nimport rego.v1\n\ndeny contains "frozen" if true\n')
    chained = record("bob")
    chained["decision_id"] = "d-chained"
    chained["input"].update({"actor_chain": ["svc:edge"], "token": {"scope": "invoices:read"}})
    route = record("carol", project="p1")
    route["decision_id"] = "d-route"
    del route["input"]["resource"]["properties"]["project"]
    denied = record("dave", held=(), allow=False, reasons=("not_project_member",))
    inputs = jsonl(tmp_path / "recorded.jsonl", record("alice"), chained, route, denied)
    result = runner.invoke(app, ["bundle", "impact", str(candidate), "--inputs", str(inputs), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["undeclared"] == 3 and report["agreed"] == 1, report
    assert {group["direction"] for group in report["groups"]} == {"allow->deny"}


def test_the_report_tells_two_versions_of_one_manifest_revision_apart(tmp_path: Path) -> None:
    """Issue 30 ("revisions people can tell apart"): a candidate directory and its baseline, both with
    .manifest revision "1", were both reported as "1" ("impact of 1 against 1"); each is now named as
    `bundle build` names it, <manifest revision>-<12 hex of its content>."""
    candidate = tmp_path / "frozen"
    shutil.copytree(BUNDLE_DIR, candidate)
    (candidate / "frozen.rego").write_text('package tenantguard\n\nimport rego.v1\n\ndeny contains "frozen" if true\n')
    inputs = jsonl(tmp_path / "recorded.jsonl", record("alice"))
    result = runner.invoke(app, ["bundle", "impact", str(candidate), "--inputs", str(inputs), "--baseline",
                                 str(BUNDLE_DIR)], env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    new, old = content_revision(candidate), content_revision(BUNDLE_DIR)
    assert re.fullmatch(r"1-[0-9a-f]{12}", new) and re.fullmatch(r"1-[0-9a-f]{12}", old) and new != old
    assert result.output.startswith(f"impact of {new} against {old}: 1 decisions replayed"), result.output
    report = json.loads(runner.invoke(app, ["bundle", "impact", str(candidate), "--inputs", str(inputs),
                                            "--baseline", str(BUNDLE_DIR), "--json"]).output)
    assert (report["candidate"], report["baseline"]) == (new, old)
