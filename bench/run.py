"""Run every benchmark (or a chosen few) in one go and collect their markdown tables.

Run: python bench/run.py [--quick] [--only tokens,policy,...] [--out bench/out/latest.md]

Each bench script stays runnable on its own; this runner only sequences them (one at a
time, so they do not compete for the two cores) and gathers their output. ``--quick``
is the short version CI runs: small iteration counts, no load generators.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent

# name -> (full arguments, quick arguments or None when the quick run skips it)
SUITE: dict[str, tuple[list[str], list[str] | None]] = {
    "tokens": ([], ["--iterations", "300"]),
    "policy": ([], ["--quick"]),
    "relations": ([], ["--quick"]),
    "search": ([], ["--quick"]),
    "search_door": ([], ["--quick"]),  # through a sidecar process; ~15 s quick
    "pauses": ([], ["--quick"]),
    "events": ([], ["--iterations", "200"]),
    "exchange": ([], ["--iterations", "200"]),
    "hardening": ([], ["--iterations", "200"]),
    "rollout": ([], ["--quick"]),
    "sidecar": ([], None),  # needs h2load; ~2 minutes
    "propagation": ([], None),
    "plane": ([], None),
    "sdk": ([], None),  # needs wrk
    "grpc_cost": ([], ["--requests", "300"]),  # needs h2load (else says skipped); ~15 s quick
    # Cerbos, SpiceDB and the 8-hop chain (bench/install_peers.sh first; a peer not
    # installed is skipped with the reason). Not in --quick: CI's budget is tight, and
    # tests/bench/test_peers_smoke.py runs the proxy and a chain on every CI run;
    # `python bench/peers.py --quick` is the short chain-only run (~40 s).
    "peers": ([], None),
}
SCRIPTS = {"peers": "peers.py"}  # every other name runs bench_<name>.py


def run_one(name: str, args: list[str], timeout: float) -> tuple[str, float, int]:
    script = BENCH / SCRIPTS.get(name, f"bench_{name}.py")
    started = time.monotonic()
    result = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout)
    output = result.stdout if result.returncode == 0 else result.stdout + "\n" + result.stderr[-3000:]
    return output, time.monotonic() - started, result.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the short CI version")
    parser.add_argument("--only", help="comma-separated names: " + ", ".join(SUITE))
    parser.add_argument("--out", type=Path, help="also write the collected output here")
    ns = parser.parse_args()
    names = ns.only.split(",") if ns.only else list(SUITE)
    unknown = set(names) - set(SUITE)
    if unknown:
        parser.error(f"unknown benchmarks: {', '.join(sorted(unknown))}")
    sections, failures = [], 0
    for name in names:
        full, quick = SUITE[name]
        if ns.quick and quick is None:
            continue
        if name == "sidecar" and shutil.which("h2load") is None:
            sections.append(f"## {name}\n\nskipped: h2load not installed (apt-get install nghttp2-client)\n")
            continue
        output, seconds, code = run_one(name, quick if ns.quick else full, timeout=300 if ns.quick else 1800)
        failures += code != 0
        status = "" if code == 0 else f" (FAILED, exit {code})"
        script = SCRIPTS.get(name, f"bench_{name}.py")
        sections.append(f"## {name}{status}\n\n`python bench/{script} {' '.join(quick if ns.quick else full)}` "
                        f"({seconds:.0f} s)\n\n{output.strip()}\n")
        print(sections[-1], flush=True)
    if ns.out:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text("\n".join(sections))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
