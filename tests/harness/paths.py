"""Where the tests find the repository, the example bundle and the ``tenantguard`` command."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUNDLE_DIR = REPO / "bundles" / "tenantguard"
# the CLI of the interpreter running the tests (its venv), never one found on PATH
TENANTGUARD = str(Path(sys.executable).with_name("tenantguard"))
