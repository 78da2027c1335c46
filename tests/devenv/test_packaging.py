"""A plain (non-editable) install carries what `tenantguard dev` and `demo` need by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_the_example_bundle_and_dev_finds_it(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("tenantguard-*.whl"))
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    probe = ("import json, tenantguard.devenv.stack as s; "
             "print(json.dumps({'dir': str(s.default_bundle_dir()), 'module': s.__file__}))")
    env = {**os.environ, "PYTHONPATH": str(target)}  # ahead of the editable checkout on sys.path
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, check=True, capture_output=True,
                         text=True, timeout=60).stdout
    found = json.loads(out)
    assert found["module"].startswith(str(target))  # the installed copy, not the checkout
    bundle = Path(found["dir"])
    assert bundle.is_relative_to(target)
    assert (bundle / ".manifest").is_file() and (bundle / "decision.rego").is_file()
    shipped = sorted(p.name for p in bundle.glob("*.rego"))
    assert shipped == sorted(p.name for p in (REPO / "bundles" / "tenantguard").glob("*.rego"))
