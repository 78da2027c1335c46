"""Signed event envelope costs: sign and verify of a 1-change and a 1,000-change batch.

Run: python bench/bench_events.py [--iterations N]
Each batch size is measured four ways, so the cost can be read off by layer: signing
(``sign_batch``), the raw Ed25519 verify of the same signing input, ``verify_event``
(size bound, strict parse, canonical re-encoding, key lookup, signature) and
``verify_batch`` (all of that plus validating every tuple into a ``ChangeBatch``).
"""

from __future__ import annotations

import argparse
import base64
import json
import platform
from collections.abc import Callable

from stats import measure  # bench/stats.py, beside this script
from tenantguard.feed.events import SIGNING_PREFIX, sign_batch, verify_batch, verify_event
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import ChangeBatch, RelationChange, Relationship


def make_batch(size: int) -> ChangeBatch:
    """Realistic tuples: email-shaped users, half of them granted through a group."""
    changes = []
    for i in range(size):
        subject = f"user:u{i}@example.com" if i % 2 else f"group:team-{i % 50}#member"
        rel = Relationship(f"tenant{i % 7}", f"project:proj-{i}", "viewer", subject)
        changes.append(RelationChange("write", rel))
    return ChangeBatch(1, tuple(changes))


def raw_verify(key: SigningKey, data: bytes) -> Callable[[], None]:
    """The bare Ed25519 check of the same signing input, without any envelope handling."""
    obj = json.loads(data)
    signature = base64.urlsafe_b64decode(obj.pop("sig") + "==")
    message = SIGNING_PREFIX + json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
    public = key.public_key
    return lambda: public.verify(signature, message)


def run(iterations: int) -> list[tuple[int, int, str, float, float]]:
    key = SigningKey.generate("EdDSA")
    trust = TrustSet()
    trust.add_public_key(key.public_key, "plane")
    rows = []
    for size in (1, 1000):
        batch = make_batch(size)
        data = sign_batch(key, batch)
        assert verify_batch(data, trust) == batch
        n = iterations if size == 1 else max(50, iterations // 20)
        for name, fn in (
            ("sign_batch", lambda: sign_batch(key, batch)),  # noqa: B023
            ("raw Ed25519 verify", raw_verify(key, data)),
            ("verify_event", lambda: verify_event(data, trust)),  # noqa: B023
            ("verify_batch", lambda: verify_batch(data, trust)),  # noqa: B023
        ):
            rows.append((size, len(data), name, *measure(fn, n, warmup=20)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=2000)
    ns = parser.parse_args()
    rows = run(ns.iterations)
    print(
        f"# signed events, EdDSA ({platform.python_implementation()} {platform.python_version()}, "
        f"{ns.iterations} timed calls for 1 change, {max(50, ns.iterations // 20)} for 1,000)\n"
    )
    print("| changes | bytes | operation | median µs | p99 µs | median µs / change |")
    print("|---:|---:|---|---:|---:|---:|")
    for size, nbytes, op, median, p99 in rows:
        print(f"| {size:,} | {nbytes:,} | {op} | {median:.1f} | {p99:.1f} | {median / size:.2f} |")


if __name__ == "__main__":
    main()
