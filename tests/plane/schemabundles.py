"""Bundles with a relationship schema for plane tests, and the relation writes sent to a real plane.

Not a test module: test modules import these helpers, never each other (tests/test_layering.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from tenantguard.bundle import build_bundle

from tests.harness.plane_process import PlaneProcess

GZIP = {"Content-Type": "application/gzip"}

SCHEMA_V1 = """\
model
  schema 1.1
type user
type group
  relations
    define member: [user]
type doc
  relations
    define owner: [user]
    define viewer: [user, group#member, user with in_office]
    define public: [user:*]
    define guest: [user with in_office]
    define can_view: viewer or owner or public
condition in_office(ip: ipaddress) {
  ip.in_cidr("10.0.0.0/8")
}
"""
EDITOR = "    define editor: [user]\n"
SCHEMA_V2 = SCHEMA_V1.replace("    define can_view:", EDITOR + "    define can_view:")  # adds doc#editor

POLICY = """package demo

default allow := false

allow if input.user == "alice"
"""
POLICY_TESTS = """package demo_test

import data.demo

test_alice_allowed if demo.allow with input as {"user": "alice"}
"""


def schema_bundle(root: Path, revision: str, serial: int, schema: str | None,
                  services: list[str] | None = None) -> bytes:
    """An unsigned bundle (the plane signs it) holding ``schema`` as ``schema.fga``; none when None."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "demo.rego").write_text(POLICY)
    (root / "demo_test.rego").write_text(POLICY_TESTS)
    (root / ".manifest").write_text(json.dumps({"revision": revision,
                                                "metadata": {"services": services} if services else {}}))
    if schema is not None:
        (root / "schema.fga").write_text(schema)
    return build_bundle(root, revision, serial=serial)


def publish(http: httpx.Client, archive: bytes, **params: str) -> dict[str, Any]:
    """Publish (or with ``stages=...`` start a staged rollout); the answer, asserted 200."""
    response = http.post("/v1/bundles", params=params, content=archive, headers=GZIP)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def rel(obj: str, relation: str, subject: str, *, tenant: str = "acme", condition: str | None = None,
        expires_at: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"tenant": tenant, "object": obj, "relation": relation, "subject": subject}
    if condition is not None:
        out["condition"] = {"name": condition, "context": {"ip": "10.1.2.3"}}
    if expires_at is not None:
        out["expires_at"] = expires_at
    return out


def write(http: httpx.Client, *rels: dict[str, Any], op: str = "write", key: str | None = None) -> httpx.Response:
    """POST /v1/relations with one change per ``rels`` (all ``op``)."""
    headers = {"Idempotency-Key": key} if key else {}
    return http.post("/v1/relations", json={"changes": [{"op": op, "rel": r} for r in rels]}, headers=headers)


def stored(http: httpx.Client, tenant: str = "acme") -> list[tuple[str, str, str]]:
    """The tenant's stored tuples as (object, relation, subject)."""
    listed = http.get("/v1/relations", params={"tenant": tenant, "limit": 1000})
    assert listed.status_code == 200, listed.text
    return [(r["object"], r["relation"], r["subject"]) for r in listed.json()["relations"]]


def active_revision(plane: PlaneProcess, scope: str = "all") -> str | None:
    announce = plane.status()["bundles"].get(scope)
    return announce["revision"] if announce and announce["loaded"] else None
