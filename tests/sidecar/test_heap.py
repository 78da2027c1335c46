"""The serving sidecar keeps its relations out of the cyclic collector's rounds.

Full collections traverse every tracked object; with a large index that is a stall in
the middle of a decision (``bench/bench_pauses.py``). Once serving, every wholesale
relations load is frozen (``settle_heap``); reference counting still frees a dropped index.
"""

from __future__ import annotations

import gc
import weakref

from tenantguard.relations import RelationIndex

from authz_sidecar.config import SidecarConfig
from authz_sidecar.runtime import Sidecar
from tests.harness.sidecar_world import World

TENANTS = 500


def index(seq: int) -> RelationIndex:
    return RelationIndex.from_trusted(seq, [(f"t{i}", "project:p1", "member", "user:u") for i in range(TENANTS)])


def test_relations_loaded_while_serving_are_frozen_and_still_freed_when_dropped(world: World) -> None:
    sidecar = Sidecar.from_config(SidecarConfig(service="billing", bundle_file=world.bundle_file,
                                                bundle_keys=(world.plane_pub,), trust_file=world.trust_file))
    before = gc.get_freeze_count()
    sidecar.replace_relations(index(5))  # not serving: the process's collector is left alone
    assert gc.get_freeze_count() == before
    sidecar.settle_heap_on_reload = True
    try:
        first = index(6)
        sidecar.replace_relations(first)
        assert gc.get_freeze_count() >= before + TENANTS  # at least one tracked object per tenant
        assert sidecar.decide({"action": {"name": "x"}, "resource": {"type": "invoice"},
                               "subject": {"id": "u", "properties": {"tenant_id": "t1"}}}, None, door="t")
        dropped = weakref.ref(first)
        del first
        sidecar.replace_relations(index(7))
        assert dropped() is None  # a frozen index is still freed by reference counting
        assert sidecar.relations.applied_seq == 7
    finally:
        gc.unfreeze()
