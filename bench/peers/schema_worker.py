"""One side of bench/peers.py's schema comparison, in a process of its own (RSS is its own):
load the same schema and tuples, time checks through a folder hierarchy and a first page of
lookup resources, print JSON.

Run by bench/peers.py: python bench/peers/schema_worker.py {tenantguard|spicedb} N [--seconds S]

The data (identical for both systems, one seed): tenants of 100 tuples, each with two
nested groups (``inner`` in ``outer``), a folder chain ``root <- mid <- leaf`` whose root is
viewable by ``outer``'s members, and documents in the leaf, each also viewable directly by
a user; tenant ``big``, where ``anne`` reaches 10,000 documents (100 leaf folders under 10
middle folders under one root, through the same two nested groups). The schema (SpiceDB's
language, the same text for both) is the issue's "a folder's viewer views its documents".
Ids carry the tenant because SpiceDB has no tenant partition; tenantguard also partitions by
tenant (the engine reads one tenant's view of the compact index).

Measured: today's direct-tuple check (the relations index's ``check``, no schema), the
schema engine's check of ``view`` on a document granted directly and one granted only through
3 folders and 2 nested groups, the first page of 100 of lookup resources for ``anne`` (10,001
documents), and RSS. SpiceDB: CheckPermission (FFI, in process) and LookupResources with
``optional_limit`` 100 (gRPC over the library's unix socket), reads at least as fresh as the
last write.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator

from relations_worker import rss_mb, timed_loop  # bench/peers/, beside this script

SCHEMA = """
definition user {}

definition group {
    relation member: user | group#member
}

definition folder {
    relation parent: folder
    relation viewer: user | group#member
    permission view = viewer + parent->view
}

definition doc {
    relation parent: folder
    relation viewer: user | group#member
    permission view = viewer + parent->view
}
"""
BATCH = 1000
DOCS_PER_TENANT = 45  # 10 structural tuples + 45 x (parent + viewer) = 100
Tuple4 = tuple[str, str, str, str]


def base_tenant(t: int) -> list[Tuple4]:
    tn = f"t{t:05d}"
    out: list[Tuple4] = [
        (tn, f"group:{tn}-inner", "member", f"user:{tn}-anne"),
        (tn, f"group:{tn}-outer", "member", f"group:{tn}-inner#member"),
        (tn, f"folder:{tn}-root", "viewer", f"group:{tn}-outer#member"),
        (tn, f"folder:{tn}-mid", "parent", f"folder:{tn}-root"),
        (tn, f"folder:{tn}-leaf", "parent", f"folder:{tn}-mid"),
    ]
    out += [(tn, f"group:{tn}-inner", "member", f"user:{tn}-u{i}") for i in range(5)]
    for d in range(DOCS_PER_TENANT):
        out.append((tn, f"doc:{tn}-d{d}", "parent", f"folder:{tn}-leaf"))
        out.append((tn, f"doc:{tn}-d{d}", "viewer", f"user:{tn}-v{d}"))
    return out


def big_tenant() -> list[Tuple4]:
    out: list[Tuple4] = [("big", "group:big-inner", "member", "user:big-anne"),
                         ("big", "group:big-outer", "member", "group:big-inner#member"),
                         ("big", "folder:big-root", "viewer", "group:big-outer#member"),
                         ("big", "doc:big-direct", "viewer", "user:big-anne")]
    for m in range(100):
        out.append(("big", f"folder:big-leaf{m}", "parent", f"folder:big-mid{m % 10}"))
        for d in range(100):
            out.append(("big", f"doc:big-{m}-{d}", "parent", f"folder:big-leaf{m}"))
    out += [("big", f"folder:big-mid{m}", "parent", "folder:big-root") for m in range(10)]
    return out


def tuples(count: int) -> Iterator[Tuple4]:
    big = big_tenant()
    yield from big
    for t in range(max(0, count - len(big)) // (10 + 2 * DOCS_PER_TENANT)):
        yield from base_tenant(t)


def chunks(count: int) -> Iterator[list[Tuple4]]:
    chunk: list[Tuple4] = []
    for item in tuples(count):
        chunk.append(item)
        if len(chunk) == BATCH:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def questions(count: int, n: int, hierarchy: bool) -> list[tuple[str, str, str]]:
    """(tenant, doc, user) over random tenants: through the hierarchy (anne) or direct (vN)."""
    tenants = max(1, (count - len(big_tenant())) // (10 + 2 * DOCS_PER_TENANT))
    rng = random.Random(13 if hierarchy else 17)
    out = []
    for _ in range(n):
        tn = f"t{rng.randrange(tenants):05d}"
        d = rng.randrange(DOCS_PER_TENANT)
        out.append((tn, f"doc:{tn}-d{d}", f"user:{tn}-anne" if hierarchy else f"user:{tn}-v{d}"))
    return out


Timed = Callable[[tuple[str, ...]], object]


def measure_all(check_direct_today: Timed | None, check: Timed, first_page: Callable[[], int], count: int,
                budget: float) -> dict:
    direct, through = questions(count, 20_000, False), questions(count, 20_000, True)
    result: dict = {}
    if check_direct_today is not None:
        result["today_direct"] = timed_loop(check_direct_today, direct, budget / 4)
    result["direct"] = timed_loop(check, direct, budget / 4)
    result["hierarchy"] = timed_loop(check, through, budget / 4)
    found = first_page()
    assert found == 100, found
    result["first_page"] = {**timed_loop(lambda _: first_page(), [()] * 2000, budget / 4), "found": found}
    return result


def run_tenantguard(count: int, budget: float) -> dict:
    from tenantguard.relations import ChangeBatch, RelationChange, RelationIndex, Relationship
    from tenantguard.schema import load
    from tenantguard.schema.engine import SchemaEngine

    engine = SchemaEngine(load(SCHEMA, "bench.zed"))
    index = RelationIndex()
    before = rss_mb()
    start = time.perf_counter()
    for seq, chunk in enumerate(chunks(count), start=1):
        index.apply(ChangeBatch(seq, tuple(RelationChange("write", Relationship(*t)) for t in chunk)))
    result: dict = {"loaded": index.count(), "tenants": 1 + (count - len(big_tenant())) // 100,
                    "load_s": time.perf_counter() - start, "rss_before_mb": before,
                    "rss_after_mb": rss_mb()}

    def today(args: tuple[str, ...]) -> bool:
        tenant, doc, user = args
        return index.check(tenant, doc, "viewer", user)

    def check(args: tuple[str, ...]) -> bool:
        tenant, doc, user = args
        return engine.check(index.tenant(tenant), doc, "view", user).allowed

    def first_page() -> int:
        page = engine.lookup_resources(index.tenant("big"), "doc", "view", "user:big-anne", page_size=100)
        return len(page.items)

    result.update(measure_all(today, check, first_page, count, budget))
    result["rss_end_mb"] = rss_mb()
    return result


def run_spicedb(count: int, budget: float) -> dict:
    from authzed.api.v1 import (
        CheckPermissionRequest,
        CheckPermissionResponse,
        Consistency,
        LookupResourcesRequest,
        ObjectReference,
        Relationship,
        RelationshipUpdate,
        SubjectReference,
        WriteRelationshipsRequest,
    )
    from authzed.api.v1.permission_service_pb2_grpc import PermissionsServiceStub
    from spicedb_embedded import EmbeddedSpiceDB

    def ref(typed: str) -> ObjectReference:
        kind, _, oid = typed.partition(":")
        return ObjectReference(object_type=kind, object_id=oid)

    def subject(typed: str) -> SubjectReference:
        obj, _, rel = typed.partition("#")
        return SubjectReference(object=ref(obj), optional_relation=rel)

    touch = RelationshipUpdate.Operation.OPERATION_TOUCH
    before = rss_mb()
    db = EmbeddedSpiceDB.start(SCHEMA)
    started = rss_mb()
    perms = db.permissions()
    start = time.perf_counter()
    loaded = 0
    written = None
    for chunk in chunks(count):
        written = perms.WriteRelationships(WriteRelationshipsRequest(updates=[
            RelationshipUpdate(operation=touch, relationship=Relationship(
                resource=ref(obj), relation=rel, subject=subject(sub))) for _, obj, rel, sub in chunk]))
        loaded += len(chunk)
    result: dict = {"loaded": loaded, "load_s": time.perf_counter() - start, "rss_before_mb": before,
                    "rss_started_mb": started, "rss_after_mb": rss_mb()}
    # at least as fresh as the last write (a client's read-after-write): minimize_latency would
    # answer from a snapshot taken before the load finished
    consistency = Consistency(at_least_as_fresh=written.written_at) if written else Consistency(minimize_latency=True)
    has = CheckPermissionResponse.PERMISSIONSHIP_HAS_PERMISSION

    def check(args: tuple[str, ...]) -> bool:
        _, doc, user = args
        answer = perms.CheckPermission(CheckPermissionRequest(
            consistency=consistency, resource=ref(doc), permission="view", subject=subject(user)))
        return answer.permissionship == has

    stub = PermissionsServiceStub(db.channel())

    def first_page() -> int:
        request = LookupResourcesRequest(consistency=consistency, resource_object_type="doc", permission="view",
                                         subject=subject("user:big-anne"), optional_limit=100)
        return sum(1 for _ in stub.LookupResources(request, timeout=120))

    result.update(measure_all(None, check, first_page, count, budget))
    result["rss_end_mb"] = rss_mb()
    db.close()
    return result


def main() -> None:
    system, count = sys.argv[1], int(sys.argv[2])
    budget = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 10.0
    result = {"tenantguard": run_tenantguard, "spicedb": run_spicedb}[system](count, budget)
    result["pid"] = os.getpid()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
