"""Explain's rebuild of an older relations state, against a real JetStream: the batches are
verified and applied in a worker thread (never on the replica's event loop, which a replay
of up to 200,000 batches stalled), one rebuild at a time, and concurrent rebuilds of two
sequences both come out right."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from tenantguard.feed import topology as topo
from tenantguard.feed.events import verify_batch

import policy_plane.decisions.explain as explain_module
from policy_plane.decisions.explain import Explainer
from policy_plane.publisher import Publisher
from policy_plane.state import PlaneState
from tests.harness.nats_raw import read_stream
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

BATCHES = 30


def test_rebuilds_run_off_the_event_loop_one_at_a_time(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    plane = world.start()
    with plane.client() as http:
        for i in range(BATCHES):
            http.post("/v1/relations", json={"changes": [{"op": "write", "rel": {
                "tenant": "acme", "object": f"doc:d{i}", "relation": "member", "subject": "user:alice"}}]}
                      ).raise_for_status()
    state = PlaneState(world.event_key, world.bundle_key, max_bundle_bytes=1 << 20)
    for msg in read_stream(world.nats.url, topo.STREAM_RELATIONS):  # this reader is at the newest sequence
        state.index.index(topo.DEFAULT_CELL).apply(verify_batch(msg.data, state.event_trust))

    threads: list[int] = []
    real_verify = explain_module.verify_batch

    def recording_verify(*args: Any, **kwargs: Any) -> Any:  # the real check, noting where it ran
        threads.append(threading.get_ident())
        return real_verify(*args, **kwargs)

    monkeypatch.setattr(explain_module, "verify_batch", recording_verify)

    async def rebuild() -> tuple[int, list[tuple[Any, str]]]:
        publisher = Publisher(world.nats.url)
        await publisher.connect()
        try:
            explainer = Explainer(state, publisher, store=None)  # type: ignore[arg-type]  # records unused here
            got = await asyncio.gather(explainer._relations_at(10), explainer._relations_at(20),
                                       explainer._relations_at(10))
            return threading.get_ident(), got
        finally:
            await publisher.close()

    loop_thread, got = asyncio.run(rebuild())
    (ten, _), (twenty, _), (ten_again, note) = got
    assert ten is not None and ten.applied_seq == 10 and ten.count("acme") == 10
    assert twenty is not None and twenty.applied_seq == 20 and twenty.count("acme") == 20
    assert ten_again is ten and note == "rebuilt from the relations stream"  # waited, then found it rebuilt
    on_loop = sum(1 for t in threads if t == loop_thread)
    assert on_loop == 2  # each rebuild reads the oldest stored batch's sequence there, and nothing else
    assert len(threads) - on_loop >= 10 + 20  # every replayed batch was verified in a worker thread
