"""In-process sidecars, each with its own feed and state dir, fed by a plane over real NATS; the tiny
signed bundle they decide with, and waits that run on the event loop.

The feed options are fast (short timeouts and backoffs) so fault tests finish quickly; the
waits poll, bounded, and never sleep blindly.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenantguard.bundle import build_bundle
from tenantguard.decision.core import Decision
from tenantguard.identity.keys import SigningKey

from authz_sidecar.config import SidecarConfig
from authz_sidecar.feed import Feed, FeedOptions
from authz_sidecar.runtime import Sidecar

FAST = FeedOptions(connect_timeout=1.0, request_timeout=3.0, backoff_initial=0.02, backoff_max=0.3,
                   ping_interval=2.0, idle_heartbeat=1.0, persist_interval=3600.0)

POLICY = """package feedtest

import rego.v1

default decision := {"allow": false, "reasons": ["not_a_member"], "high_risk": false}

decision := {"allow": true, "reasons": [], "high_risk": high_risk} if {
	"member" in input.relations[sprintf("project:%s", [input.resource.id])]
}

default high_risk := false

high_risk if input.action.name == "delete"
"""


def make_bundle(key: SigningKey, revision: int, *, note: str = "") -> bytes:
    """A tiny signed bundle: members of project:<id> may do anything; ``delete`` is high risk."""
    manifest = {"revision": str(revision), "roots": ["feedtest"], "metadata": {"decision": "data.feedtest.decision"}}
    files = {".manifest": json.dumps(manifest), "policy.rego": POLICY + note}
    return build_bundle(files, str(revision), signing_key=key, serial=revision)


def question(user: str, project: str, *, tenant: str = "acme", action: str = "read") -> dict[str, Any]:
    return {"subject": {"type": "user", "id": user, "properties": {"tenant_id": tenant}},
            "action": {"name": action}, "resource": {"type": "project", "id": project}}


def decide(sidecar: Sidecar, user: str, project: str, **kw: Any) -> Decision:
    return sidecar.decide(question(user, project, **kw), None, door="test")


def rejected(sidecar: Sidecar, code: str) -> float:
    return sidecar.metrics.registry.get_sample_value("tg_events_rejected_total", {"code": code}) or 0.0


async def eventually(predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Poll until ``predicate()`` holds; fail with ``what`` at the deadline (never a bare sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for: {what}")
        await asyncio.sleep(0.01)


async def eventually_async(attempt: Callable[[], Awaitable[bool]], what: str, timeout: float = 20.0) -> None:
    """Like :func:`eventually` for a check that has to await (an HTTP call, a publish)."""
    deadline = time.monotonic() + timeout
    while not await attempt():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for: {what}")
        await asyncio.sleep(0.02)


@dataclass
class Node:
    sidecar: Sidecar
    feed: Feed
    state_dir: Path


class Fleet:
    """Sidecars for the billing service, each with its own state dir and NATS connection."""

    def __init__(self, root: Path, url: str, plane_pem: Path, bundle_pem: Path) -> None:
        self.root, self.url, self.plane_pem, self.bundle_pem = root, url, plane_pem, bundle_pem
        self.nodes: list[Node] = []

    def config(self, state_dir: Path, **kw: Any) -> SidecarConfig:
        return SidecarConfig(service="billing", nats_url=self.url, plane_key=self.plane_pem,
                             bundle_keys=(self.bundle_pem,), state_dir=state_dir, grpc_port=None, **kw)

    async def start(self, name: str, *, options: FeedOptions = FAST, **kw: Any) -> Node:
        """Start (or restart, with the same state dir) one sidecar and its feed."""
        state_dir = self.root / name
        sidecar = Sidecar.from_config(self.config(state_dir, **kw))
        feed = Feed.for_sidecar(sidecar, options)
        feed.load_persisted()
        await feed.start()
        node = Node(sidecar, feed, state_dir)
        self.nodes.append(node)
        return node

    async def stop(self, node: Node) -> None:
        await node.feed.stop()
        self.nodes.remove(node)

    async def close(self) -> None:
        for node in list(self.nodes):
            await self.stop(node)
