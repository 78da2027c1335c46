"""The Rego test runner and the bundle directory loader, on the example bundle and on
deliberately broken bundles written to a temporary directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tenantguard.decision.core import RELATED_EXTENSION
from tenantguard.errors import BundleMalformed, BundleTooLarge, BundleUnsafePath
from tenantguard.policy.engine import PolicyCompileError
from tenantguard.policy.testrunner import load_bundle_dir, render_report, run_tests

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "tenantguard"
TEST_RULE = re.compile(r"^(test_\w+)\b", re.MULTILINE)


def count_test_rules(root: Path) -> int:
    """Independent count: distinct test_ rule names per test file (one package per file)."""
    return sum(
        len(set(TEST_RULE.findall(path.read_text()))) for path in root.rglob("*_test.rego")
    )


@pytest.fixture(scope="module")
def example() -> tuple[dict[str, str], dict]:
    return load_bundle_dir(BUNDLE)


# --------------------------------------------------------------------------- example bundle


def test_every_example_bundle_test_passes(example: tuple[dict[str, str], dict]) -> None:
    report = run_tests(*example, extensions=RELATED_EXTENSION)
    failures = [r.full_name for r in report.results if r.outcome != "pass"]
    assert failures == [], "\n".join(render_report(report))
    assert report.ok


def test_test_count_matches_the_rego_files(example: tuple[dict[str, str], dict]) -> None:
    report = run_tests(*example, extensions=RELATED_EXTENSION)
    assert len(report.results) == count_test_rules(BUNDLE)
    assert len(report.results) >= 100


def test_results_name_package_file_and_line(example: tuple[dict[str, str], dict]) -> None:
    report = run_tests(*example, extensions=RELATED_EXTENSION)
    result = report.by_name()["data.tenantguard.decision_test.test_contract_example_is_allowed"]
    assert result.file == "decision_test.rego"
    source = (BUNDLE / "decision_test.rego").read_text().splitlines()
    assert source[result.line - 1].startswith("test_contract_example_is_allowed")
    assert result.duration_ns > 0


def test_run_filter_selects_tests(example: tuple[dict[str, str], dict]) -> None:
    report = run_tests(*example, extensions=RELATED_EXTENSION, run_filter=r"exchange_test\.test_")
    assert report.results
    assert all(r.package == "data.tenantguard.exchange_test" for r in report.results)


def test_coverage_is_reported(example: tuple[dict[str, str], dict]) -> None:
    report = run_tests(*example, extensions=RELATED_EXTENSION, coverage=True)
    assert report.coverage is not None
    files = {f.path: f for f in report.coverage.files}
    assert "decision.rego" in files
    assert files["decision.rego"].covered
    assert 0 < report.coverage.percent <= 100
    assert "decision.rego" in report.coverage.pretty


def test_no_coverage_unless_asked(example: tuple[dict[str, str], dict]) -> None:
    assert run_tests(*example, extensions=RELATED_EXTENSION, run_filter="propagation").coverage is None


def test_example_data_lands_under_its_root(example: tuple[dict[str, str], dict]) -> None:
    _, data = example
    assert list(data) == ["tenantguard"]
    assert data["tenantguard"]["config"]["calls"]["billing"]["orders"] == [
        "invoices:read",
        "invoices:write",
    ]


def test_manifest_is_valid_and_names_the_decision() -> None:
    manifest = json.loads((BUNDLE / ".manifest").read_text())
    assert manifest == {
        "revision": "1",
        "roots": ["tenantguard"],
        "metadata": {"decision": "data.tenantguard.decision"},
    }


def test_tests_can_be_left_out(example: tuple[dict[str, str], dict]) -> None:
    modules, _ = load_bundle_dir(BUNDLE, include_tests=False)
    assert modules
    assert not [name for name in modules if name.endswith("_test.rego")]
    assert set(modules) < set(example[0])


# --------------------------------------------------------------------------- failing tests

POLICY = """package demo
import rego.v1

default allow := false
allow if input.user == "alice"
"""

FAILING_TESTS = """package demo_test
import rego.v1

import data.demo

test_alice_allowed if {
    print("checking alice")
    demo.allow with input as {"user": "alice"}
}

test_bob_allowed_is_wrong if {
    print("checking bob", 42)
    demo.allow with input as {"user": "bob"}
}

test_false_value := false

test_errors if {
    x := 1 / 0
    x > 0
}

todo_test_not_run if true
"""


def write_bundle(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_failing_module_is_reported_as_failed(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"demo.rego": POLICY, "demo_test.rego": FAILING_TESTS})
    report = run_tests(*load_bundle_dir(tmp_path))
    outcomes = {r.name: r.outcome for r in report.results}
    assert outcomes == {
        "test_alice_allowed": "pass",
        "test_bob_allowed_is_wrong": "fail",
        "test_false_value": "fail",
        "test_errors": "error",
    }
    assert (report.passed, report.failed, report.errors) == (1, 2, 1)
    assert not report.ok
    errored = report.by_name()["data.demo_test.test_errors"]
    assert errored.error is not None
    assert "divide by zero" in errored.error


def test_prints_are_gathered_per_test(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"demo.rego": POLICY, "demo_test.rego": FAILING_TESTS})
    verbose = run_tests(*load_bundle_dir(tmp_path), verbose=True).by_name()
    assert verbose["data.demo_test.test_alice_allowed"].prints == (
        "demo_test.rego:7: checking alice",
    )
    assert verbose["data.demo_test.test_bob_allowed_is_wrong"].prints == (
        "demo_test.rego:12: checking bob 42",
    )
    quiet = run_tests(*load_bundle_dir(tmp_path)).by_name()
    assert quiet["data.demo_test.test_alice_allowed"].prints == ()  # passed: not shown
    assert quiet["data.demo_test.test_bob_allowed_is_wrong"].prints  # failed: shown


def test_render_report_lists_failures_and_a_summary(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"demo.rego": POLICY, "demo_test.rego": FAILING_TESTS})
    report = run_tests(*load_bundle_dir(tmp_path), coverage=True)
    lines = render_report(report)
    text = "\n".join(lines)
    assert "data.demo_test.test_bob_allowed_is_wrong: FAIL" in text
    assert "test_alice_allowed" not in text  # passes are listed only when verbose
    assert "checking bob 42" in text
    assert "coverage demo.rego:" in text
    assert lines[-3:] == ["PASS: 1/4", "FAIL: 2/4", "ERROR: 1/4"]
    assert "data.demo_test.test_alice_allowed: PASS" in "\n".join(
        render_report(report, verbose=True)
    )


def test_no_tests_is_not_ok(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"demo.rego": POLICY})
    report = run_tests(*load_bundle_dir(tmp_path))
    assert report.results == ()
    assert not report.ok


def test_compile_error_names_the_test_file(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"demo.rego": POLICY, "sub/broken_test.rego": "package x\ntest_a if {"})
    with pytest.raises(PolicyCompileError) as caught:
        run_tests(*load_bundle_dir(tmp_path))
    assert caught.value.file == "sub/broken_test.rego"


# --------------------------------------------------------------------------- loading


def test_data_json_is_merged_at_its_directory_path(tmp_path: Path) -> None:
    write_bundle(
        tmp_path,
        {
            "data.json": json.dumps({"top": 1, "a": {"x": 1}}),
            "a/b/data.json": json.dumps({"y": 2}),
            "a/data.json": json.dumps({"z": 3}),
            "policy/p.rego": POLICY,
            ".manifest": "{}",
            ".git/config.rego": "not a module",
            "notes.txt": "ignored",
        },
    )
    modules, data = load_bundle_dir(tmp_path)
    assert set(modules) == {"policy/p.rego"}
    assert data == {"top": 1, "a": {"x": 1, "z": 3, "b": {"y": 2}}}


def test_conflicting_data_is_rejected(tmp_path: Path) -> None:
    write_bundle(
        tmp_path,
        {"data.json": json.dumps({"a": {"b": 1}}), "a/data.json": json.dumps({"b": 2})},
    )
    with pytest.raises(BundleMalformed) as caught:
        load_bundle_dir(tmp_path)
    assert caught.value.file == "a/data.json"


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"x/data.json": "{nope"})
    with pytest.raises(BundleMalformed) as caught:
        load_bundle_dir(tmp_path)
    assert caught.value.file == "x/data.json"


def test_root_data_must_be_an_object(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"data.json": "[1, 2]"})
    with pytest.raises(BundleMalformed):
        load_bundle_dir(tmp_path)


def test_size_limits(tmp_path: Path) -> None:
    write_bundle(tmp_path, {"a.rego": POLICY, "b.rego": POLICY.replace("demo", "other")})
    with pytest.raises(BundleTooLarge):
        load_bundle_dir(tmp_path, max_file_bytes=10)
    with pytest.raises(BundleTooLarge):
        load_bundle_dir(tmp_path, max_files=1)
    with pytest.raises(BundleTooLarge):
        load_bundle_dir(tmp_path, max_total_bytes=len(POLICY) + 1)


def test_symlinks_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.rego"
    outside.write_text(POLICY)
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "linked.rego").symlink_to(outside)
    with pytest.raises(BundleUnsafePath):
        load_bundle_dir(root)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(BundleMalformed):
        load_bundle_dir(tmp_path / "missing")
