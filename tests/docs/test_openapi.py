"""docs/api/ holds the OpenAPI documents the services really serve."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_openapi", DOCS / "gen_openapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_openapi_documents_are_current() -> None:
    for name, text in _generator().documents().items():
        path = DOCS / "api" / name
        assert path.exists(), f"{path} missing: run python docs/gen_openapi.py"
        assert path.read_text() == text, f"{path} is stale: run python docs/gen_openapi.py"


def test_documents_describe_every_door() -> None:
    import json

    sidecar = json.loads((DOCS / "api" / "sidecar-openapi.json").read_text())["paths"]
    for path in ("/v1/check", "/access/v1/evaluation", "/access/v1/evaluations", "/v1/data/{path}",
                 "/oauth2/token", "/v1/status", "/ready"):
        assert path in sidecar, path
    assert "requestBody" in sidecar["/v1/check"]["post"]  # bodies the doors parse themselves are documented
    plane = json.loads((DOCS / "api" / "plane-openapi.json").read_text())["paths"]
    for path in ("/v1/relations", "/v1/bundles", "/v1/revocations", "/.well-known/jwks.json"):
        assert path in plane, path
