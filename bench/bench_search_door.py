"""Search through a real sidecar's door, and what a search costs the other doors meanwhile.

``bench/bench_search.py`` times the search core in process; this one times what a caller of a
sidecar sees: ``POST /access/v1/search/resource`` (first page of 100 for a subject reaching
``--reach`` documents, a new search each time) and ``POST /v1/check``, each alone, then checks
while ``--searchers`` threads keep searching. A sidecar process is started from a world built
here (signed bundle deciding through ``tg.related``, a relations file, a token trust file).

Run: python bench/bench_search_door.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from stats import timed  # bench/stats.py, beside this script
from tenantguard.bundle import build_bundle
from tenantguard.dev.procwatch import wait_for_announcement
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import mint

POLICY = """package tenantguard
import rego.v1

default decision := false

decision if tg.related(concat(":", [input.resource.type, input.resource.id]), "viewer",
                       concat(":", [input.subject.type, input.subject.id]))
"""


def build_world(root: Path, reach: int, others: int) -> tuple[list[str], str]:
    """The sidecar's arguments and a token for alice, who views ``reach`` documents among ``others`` users' ones."""
    plane, edge = SigningKey.generate(), SigningKey.generate()
    plane_pub = plane.save(root / "plane.pem")
    trust = TrustSet()
    trust.add_public_key(edge.public_key, "edge")
    trust.save(root / "trust.json")
    source = root / "bundle"
    source.mkdir()
    (source / "policy.rego").write_text(POLICY)
    (source / "data.json").write_text("{}")
    (root / "bundle.tar.gz").write_bytes(build_bundle(source, "bench", signing_key=plane))
    tuples = [f"acme/doc:d{i}#viewer@user:alice" for i in range(reach)]
    tuples += [f"acme/doc:o{i}#viewer@user:u{i % 997}" for i in range(others)]
    (root / "relations.json").write_text(json.dumps({"seq": 1, "relationships": tuples}))
    args = ["--service", "docs", "--bundle", str(root / "bundle.tar.gz"), "--bundle-key", str(plane_pub),
            "--trust", str(root / "trust.json"), "--relations", str(root / "relations.json"), "--port", "0",
            "--grpc-port", "0"]
    return args, mint(edge, issuer="edge", sub="alice", tenant_id="acme", audience="docs")


def row(name: str, samples: list[float]) -> str:
    """A table row: median and p99 in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return f"| {name} | {statistics.median(ms):.2f} | {ms[max(0, int(len(ms) * 0.99) - 1)]:.2f} | {len(ms)} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs, a smaller index (seconds)")
    parser.add_argument("--reach", type=int, default=1000, help="documents alice views")
    parser.add_argument("--searchers", type=int, default=2, help="threads searching while checks are timed")
    options = parser.parse_args()
    searches, checks = (40, 400) if options.quick else (300, 3000)
    others = 10_000 if options.quick else 100_000
    with tempfile.TemporaryDirectory(prefix="tg-bench-search-door-") as folder:
        args, token = build_world(Path(folder), options.reach, others)
        command = Path(sys.executable).with_name("tenantguard")  # PYTHONPATH picks the code (worktrees)
        proc = subprocess.Popen([str(command), "sidecar", "serve", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "TG_LOG_LEVEL": "warning"})
        try:
            event, watcher = wait_for_announcement(proc, "listening", 120)
            if event is None:
                raise SystemExit(f"the sidecar did not start:\n{watcher.text()}")
            base = f"http://{event['http']}"
            print(measure(base, token, searches, checks, options.searchers, options.reach, others))
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def measure(base: str, token: str, searches: int, checks: int, searchers: int, reach: int, others: int) -> str:
    auth = {"Authorization": f"Bearer {token}"}
    search_body = {"action": {"name": "read"}, "resource": {"type": "doc"}, "page": {"limit": 100}}
    check_body = {"action": {"name": "read"}, "resource": {"type": "doc", "id": "d1"}}

    def search(client: httpx.Client) -> Any:
        answer = client.post(f"{base}/access/v1/search/resource", json=search_body, headers=auth)
        assert answer.status_code == 200 and len(answer.json()["results"]) == min(100, reach), answer.text
        return answer

    def check(client: httpx.Client) -> None:
        answer = client.post(f"{base}/v1/check", json=check_body, headers=auth)
        assert answer.status_code == 200 and answer.json()["allow"] is True, answer.text

    with httpx.Client(timeout=60) as client:
        for _ in range(20):
            search(client)
            check(client)
        alone_search = timed(lambda: search(client), searches)
        alone_check = timed(lambda: check(client), checks)
        stop = threading.Event()
        done = [0]

        def keep_searching() -> None:
            with httpx.Client(timeout=60) as own:
                while not stop.is_set():
                    search(own)
                    done[0] += 1

        threads = [threading.Thread(target=keep_searching, daemon=True) for _ in range(searchers)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        started, before = time.perf_counter(), done[0]
        busy_check = timed(lambda: check(client), checks)
        rate = (done[0] - before) / (time.perf_counter() - started)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    lines = [f"index: alice views {reach:,} of {reach + others:,} documents; first page of 100, a new search "
             f"each time; {searchers} searching threads in the third row ({rate:.0f} pages/s meanwhile)",
             "", "| request | median ms | p99 ms | runs |", "|---|---:|---:|---:|",
             row("resource search, first page of 100", alone_search), row("check, alone", alone_check),
             row(f"check, while {searchers} threads search", busy_check)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
