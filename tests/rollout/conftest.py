"""Candidate bundles for the rollout tests: the example bundle, and one that locks members out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLE_DIR = REPO / "bundles" / "tenantguard"


def lockout(root: Path, revision: str = "lockout", *, expected: list[dict[str, str]] | None = None) -> Path:
    """The example bundle with project access narrowed to owners (tests replaced by a trivial one)."""
    target = root / revision
    shutil.copytree(BUNDLE_DIR, target, ignore=shutil.ignore_patterns("*_test.rego"))
    (target / "smoke_test.rego").write_text("package tenantguard.smoke_test\n\nimport rego.v1\n\ntest_ok if true\n")
    data = json.loads((target / "data.json").read_text())
    data["tenantguard"]["config"]["project_relations"] = ["owner"]
    (target / "data.json").write_text(json.dumps(data))
    manifest = json.loads((target / ".manifest").read_text())
    manifest["revision"] = revision
    if expected is not None:
        manifest.setdefault("metadata", {})["expected_flips"] = expected
    (target / ".manifest").write_text(json.dumps(manifest))
    return target


def record(sub: str = "alice", *, tenant: str = "acme", service: str = "orders", project: str = "p1",
           held: tuple[str, ...] = ("member",), allow: bool = True, with_input: bool = True,
           reasons: tuple[str, ...] = ()) -> dict[str, Any]:
    """One line of the recorded-decision format (sdk/tenantguard/rollout/records.py)."""
    line: dict[str, Any] = {"v": 1, "decision_id": f"d-{sub}-{tenant}", "tenant": tenant, "service": service,
                            "action": "invoices:read", "subject": f"user:{sub}", "resource": "invoice:inv-1",
                            "allow": allow, "reasons": list(reasons), "bundle_revision": "1", "relations_seq": 3}
    if with_input:
        line["input"] = {
            "subject": {"type": "user", "id": sub, "properties": {"tenant_id": tenant, "roles": ["editor"]}},
            "action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": "inv-1", "properties": {"tenant_id": tenant, "project": project}},
            "context": {"service": service}, "token": None, "actor_chain": [],
            "relations": {f"project:{project}": list(held)} if held else {}}
    return line


@pytest.fixture(scope="session")
def candidates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("candidates")
    return {"baseline": BUNDLE_DIR, "lockout": lockout(root),
            "declared": lockout(root, "declared", expected=[{"direction": "allow->deny", "tenant": "acme",
                                                              "action": "invoices:*"}])}
