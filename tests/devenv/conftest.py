"""Helpers for the dev/demo tests (which processes a run left behind: :mod:`tests.harness.leftovers`)."""

from __future__ import annotations

from pathlib import Path


def broken_bundle(parent: Path) -> Path:
    """A bundle folder that passes the up-front check (it has a .manifest) but does not compile."""
    bundle = parent / "broken-bundle"
    bundle.mkdir()
    (bundle / ".manifest").write_text('{"revision": "broken", "roots": ["broken"]}')
    (bundle / "broken.rego").write_text("package broken\n\nallow if {\n")
    return bundle
