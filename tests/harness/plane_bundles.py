"""A tiny bundle source with Rego tests (passing, or with a failing one) and its upload to a plane."""

from __future__ import annotations

import json
from pathlib import Path

from .plane_process import PlaneProcess

POLICY = """package demo

default allow := false

allow if input.user == "alice"
"""
TESTS = """package demo_test

import data.demo

test_alice_allowed if demo.allow with input as {"user": "alice"}

test_bob_denied if not demo.allow with input as {"user": "bob"}
"""
FAILING = """package demo_broken_test

import data.demo

test_bob_is_wrongly_expected if demo.allow with input as {"user": "bob"}
"""


def bundle_dir(root: Path, *, failing: bool = False, services: list[str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "demo.rego").write_text(POLICY)
    (root / "demo_test.rego").write_text(TESTS)
    if failing:
        (root / "broken_test.rego").write_text(FAILING)
    metadata = {"services": services} if services else {}
    (root / ".manifest").write_text(json.dumps({"revision": "r1", "metadata": metadata}))
    return root


def upload(plane: PlaneProcess, archive: bytes) -> tuple[int, dict[str, object]]:
    response = plane.client().post("/v1/bundles", content=archive, headers={"Content-Type": "application/gzip"})
    return response.status_code, response.json()
