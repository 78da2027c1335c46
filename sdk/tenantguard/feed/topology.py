"""Names and shapes on NATS: the contract between the policy plane and the sidecars.

Everything the plane publishes is a signed event (``tenantguard.feed.events``), so NATS is
a transport, never a source of trust: a sidecar checks every message against the
plane's event key, which it is configured with out of band (``--plane-key``).

JetStream layout (all streams file-backed, R1 in dev, R3 in production):

==================  ===========================  ==========================================
stream / bucket     subjects / objects           carries
==================  ===========================  ==========================================
TG_RELATIONS        tg.relations.changes.<cell>  ``relations.batch`` events of one tenant
                                                 cell (:func:`cell_of`); the event ``seq``
                                                 is the cell's relations sequence (the
                                                 consistency token), gap-free from 1 per
                                                 cell; the payload names its cell.
                                                 Published with JetStream's expected-last-
                                                 sequence check so concurrent plane
                                                 replicas cannot interleave or skip.
                                                 Limits retention: old batches age out;
                                                 a sidecar that needs one resyncs from the
                                                 latest snapshot.
TG_SNAPSHOTS        tg.snapshots.relations.      ``relations.snapshot`` manifests (newest
                    <cell>                       wins, per cell): {cell, seq, count, size,
                                                 sha256}; the bytes are object
                                                 ``relations/<cell>/<seq>`` in bucket
                                                 ``tg-snapshots``.
TG_TRUST            tg.trust.jwks                ``trust.update`` events (newest wins):
                                                 {"jwks": {...}} the full token trust set
                                                 (edge issuers, sidecar keys), ``seq``
                                                 increasing.
TG_REVOCATIONS      tg.revocations               ``revocation`` events, all kept:
                                                 {"kind": "jti"|"subject"|"kid"|"tenant"|
                                                 "lift_tenant", ...}; ``seq`` gap-free.
TG_BUNDLES          tg.bundles.<scope>           ``bundle.announce`` events (newest wins,
                                                 per scope): {scope, revision, sha256,
                                                 size, object, services}; scope ``all`` or
                                                 a service name, bound to the subject;
                                                 bytes in bucket
                                                 ``tg-bundles``. Bundles are also signed
                                                 as OPA bundles (``.signatures.json``).
TG_BUNDLES          tg.shadows.<scope>           ``bundle.shadow`` events (newest wins, per
                                                 scope): a candidate sidecars evaluate
                                                 beside the active bundle and never
                                                 activate (its own signed type); same
                                                 fields as an announce plus sample_rate,
                                                 max_per_second; ``stop`` ends it.
(core NATS)         tg.plane.heartbeat           ``plane.heartbeat`` events every few
                                                 seconds: {relations_seq, cells,
                                                 relations (cell -> seq), trust_seq,
                                                 revocations_seq, bundles, expires_at_ms}
                                                 (``tenantguard.feed.freshness``); lets sidecars
                                                 measure staleness and lag, and notice a
                                                 freeze.
TG_DECISIONS        tg.decisions.<service>.      decision records from sidecars (unsigned
                    <tenant>                     JSON batches, one tenant per message,
                                                 never tokens; ``tenantguard.decisionlog``).
                                                 Limits retention by age and size; a
                                                 tenant's records are one subject filter.
(core NATS)         tg.status.<service>          a sidecar's status (plain JSON): its
                                                 instance, active bundle revision, serial
                                                 and digest, staleness, trust and
                                                 revocation seqs, decision count
                                                 (``tenantguard.rollout.fleet``); what the
                                                 plane shows a staged rollout and the
                                                 console's fleet page by. Published only on
                                                 the sidecar's own service subject.
TG_ROLLOUTS         tg.rollouts.state            ``rollout.state`` events (newest wins):
                                                 the staged rollout's state machine
                                                 (``tenantguard.rollout.plan``); read by
                                                 the plane only.
==================  ===========================  ==========================================

"Newest wins" streams (snapshots, trust, bundles) keep their history and discard *new*
messages when full, so no publisher can push the genuine newest event out; readers take
the highest signed ``seq`` they find (``tenantguard.feed.history``), never the last message
stored, and the plane compacts each subject after every commit.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Final

STREAM_RELATIONS: Final = "TG_RELATIONS"
SUBJECT_RELATIONS_PREFIX: Final = "tg.relations.changes"
SUBJECT_RELATIONS_ALL: Final = f"{SUBJECT_RELATIONS_PREFIX}.>"

STREAM_SNAPSHOTS: Final = "TG_SNAPSHOTS"
SUBJECT_SNAPSHOTS_PREFIX: Final = "tg.snapshots.relations"
SUBJECT_SNAPSHOTS_ALL: Final = f"{SUBJECT_SNAPSHOTS_PREFIX}.>"
BUCKET_SNAPSHOTS: Final = "tg-snapshots"

STREAM_TRUST: Final = "TG_TRUST"
SUBJECT_TRUST: Final = "tg.trust.jwks"

STREAM_REVOCATIONS: Final = "TG_REVOCATIONS"
SUBJECT_REVOCATIONS: Final = "tg.revocations"

STREAM_BUNDLES: Final = "TG_BUNDLES"
SUBJECT_BUNDLES_PREFIX: Final = "tg.bundles"
BUCKET_BUNDLES: Final = "tg-bundles"
BUNDLE_SCOPE_ALL: Final = "all"
SUBJECT_SHADOWS_PREFIX: Final = "tg.shadows"

STREAM_ROLLOUTS: Final = "TG_ROLLOUTS"
SUBJECT_ROLLOUT: Final = "tg.rollouts.state"

SUBJECT_HEARTBEAT: Final = "tg.plane.heartbeat"
STREAM_DECISIONS: Final = "TG_DECISIONS"
SUBJECT_DECISIONS_PREFIX: Final = "tg.decisions"
SUBJECT_DECISIONS_ALL: Final = "tg.decisions.*.*"
NO_TENANT_TOKEN: Final = "="  # records of decisions denied before a tenant was known
SUBJECT_STATUS_PREFIX: Final = "tg.status"

# Event types beyond those defined in tenantguard.feed.events.
PLANE_HEARTBEAT: Final = "plane.heartbeat"
BUNDLE_SHADOW: Final = "bundle.shadow"  # never "bundle.announce": a shadow cannot be activated by mistake

# The issuer name the plane's event and bundle keys are trusted for.
PLANE_ISSUER: Final = "plane"


def bundle_subject(scope: str) -> str:
    """``tg.bundles.<scope>``; ``scope`` is ``all`` or a service name (validated by callers)."""
    return f"{SUBJECT_BUNDLES_PREFIX}.{scope}"


def shadow_subject(scope: str) -> str:
    """``tg.shadows.<scope>``: where a scope's shadow candidate is announced."""
    return f"{SUBJECT_SHADOWS_PREFIX}.{scope}"


# --------------------------------------------------------------------------- tenant cells
#
# The tenant space is split into a fixed number of cells, chosen when the system is set
# up (plane ``--cells``; every sidecar states the same number). Each cell has its own
# relations subject, relations sequence and snapshot history, so a sidecar scoped to a
# few cells bootstraps, holds and receives only those. The count never changes for a
# running system: resharding (moving tenants between cells) is not supported.

DEFAULT_CELL: Final = "c0"
MAX_CELLS: Final = 4096
_CELL_RE: Final = re.compile(r"c(0|[1-9][0-9]{0,3})")


def cell_of(tenant: str, cells: int) -> str:
    """The cell holding ``tenant``: ``c<k>``, k = the first 8 bytes of SHA-256(tenant), big-endian,
    modulo ``cells``. Stable across processes and languages (a cell-based deployment routes
    tenants with the same function)."""
    if cells == 1:
        return DEFAULT_CELL
    if not 1 <= cells <= MAX_CELLS:
        raise ValueError(f"cells must be 1-{MAX_CELLS}")
    return _cell_of(tenant, cells)


@functools.lru_cache(maxsize=65_536)  # on every decision of a multi-cell reader; bounded, thread-safe
def _cell_of(tenant: str, cells: int) -> str:
    return f"c{int.from_bytes(hashlib.sha256(tenant.encode()).digest()[:8], 'big') % cells}"


def cell_names(cells: int) -> tuple[str, ...]:
    """Every cell of a system of ``cells`` cells, in order."""
    if not 1 <= cells <= MAX_CELLS:
        raise ValueError(f"cells must be 1-{MAX_CELLS}")
    return tuple(f"c{k}" for k in range(cells))


def cell_index(cell: str, cells: int) -> int:
    """``k`` of ``c<k>``; ValueError unless ``cell`` names a cell of a ``cells``-cell system."""
    if _CELL_RE.fullmatch(cell) is None or int(cell[1:]) >= cells:
        raise ValueError(f"{cell!r:.20} is not a cell of a {cells}-cell system (c0..c{cells - 1})")
    return int(cell[1:])


def relations_subject(cell: str) -> str:
    """``tg.relations.changes.<cell>``: one cell's relations batches."""
    return f"{SUBJECT_RELATIONS_PREFIX}.{cell}"


def snapshot_subject(cell: str) -> str:
    """``tg.snapshots.relations.<cell>``: one cell's snapshot manifests (newest wins)."""
    return f"{SUBJECT_SNAPSHOTS_PREFIX}.{cell}"


def cell_of_subject(subject: str) -> str:
    """The cell named by the last token of a relations or snapshot subject."""
    return subject.rsplit(".", 1)[-1]


def snapshot_object(seq: int, cell: str = DEFAULT_CELL) -> str:
    return f"relations/{cell}/{seq}"


def tenant_token(tenant: str | None) -> str:
    """A tenant as one NATS subject token: itself when it is ``[A-Za-z0-9_-]{1,64}``, else
    ``=`` + hex of its UTF-8 (``=`` alone: no tenant). ``=`` never starts a plain token,
    so no two tenants share a token and a subject filter names exactly one tenant."""
    if tenant is None:
        return NO_TENANT_TOKEN
    if 0 < len(tenant) <= 64 and all(c.isascii() and (c.isalnum() or c in "-_") for c in tenant):
        return tenant
    return NO_TENANT_TOKEN + tenant.encode().hex()


def tenant_of_token(token: str) -> str | None:
    """The inverse of :func:`tenant_token`; raises ``ValueError`` on a token it never produces."""
    if token == NO_TENANT_TOKEN:
        return None
    if token.startswith(NO_TENANT_TOKEN):
        tenant = bytes.fromhex(token[1:]).decode()
        if tenant_token(tenant) != token:
            raise ValueError("not a canonical tenant token")
        return tenant
    if tenant_token(token) != token:
        raise ValueError("not a tenant token")
    return token


def decisions_subject(service: str, tenant: str | None = None, *, any_tenant: bool = False) -> str:
    """``tg.decisions.<service>.<tenant token>``; ``any_tenant`` gives the service's filter."""
    return f"{SUBJECT_DECISIONS_PREFIX}.{service}.{'*' if any_tenant else tenant_token(tenant)}"


def decisions_filter(service: str | None, tenant: str | None, *, tenant_given: bool) -> str:
    """The subject filter for one service and/or one tenant (``*`` where not given)."""
    return (f"{SUBJECT_DECISIONS_PREFIX}.{service or '*'}."
            f"{tenant_token(tenant) if tenant_given else '*'}")


def status_subject(service: str) -> str:
    """``tg.status.<service>``: where a sidecar of ``service`` reports what it runs."""
    return f"{SUBJECT_STATUS_PREFIX}.{service}"


def sidecar_issuer(service: str) -> str:
    """The issuer a sidecar's own key may sign exchanged tokens as."""
    return f"sidecar:{service}"


# --------------------------------------------------------------------------- NATS permissions
#
# What each tenantguard identity may do on NATS, as nats-server ``permissions`` blocks
# (``tenantguard dev`` and deploy/ render them; tests/natsio/test_permissions.py runs them
# against a real server). Subjects were found by running the plane and a sidecar with
# nothing allowed and reading the server's violations. JetStream and object-store calls
# are requests on ``$JS.API.*`` whose replies come back on the client's ``_INBOX``;
# ordered consumers deliver to an ``_INBOX`` subject too and are paced by flow-control
# requests the client answers on ``$JS.FC.<stream>.>``.

STREAMS: Final = (STREAM_RELATIONS, STREAM_SNAPSHOTS, STREAM_TRUST, STREAM_REVOCATIONS, STREAM_BUNDLES)
"""The streams a sidecar follows (TG_DECISIONS is written by sidecars and read by the plane only)."""
PLANE_STREAMS: Final = (STREAM_ROLLOUTS,)  # the plane's own state: no sidecar reads it
BUCKETS: Final = (BUCKET_SNAPSHOTS, BUCKET_BUNDLES)
INBOX_PREFIX: Final = "_INBOX"
SUBJECT_ROOT: Final = "tg"


def object_store_stream(bucket: str) -> str:
    """The stream JetStream keeps an object store's chunks and metadata in."""
    return f"OBJ_{bucket}"


def plane_permissions() -> dict[str, list[str]]:
    """The plane: publish every tg subject, manage streams and object stores (all of ``$JS.API``),
    read the decision logs and its own followers."""
    return {
        "publish": [f"{SUBJECT_ROOT}.>", "$JS.API.>", "$JS.FC.>", "$O.>"],
        "subscribe": [f"{SUBJECT_ROOT}.>", f"{INBOX_PREFIX}.>"],
    }


def sidecar_inbox(service: str) -> str:
    """The inbox prefix of ``service``'s sidecars: their JetStream replies and consumer deliveries.

    A first token of its own (``_INBOX_<service>``, not ``_INBOX.<service>``), so no grant on
    ``_INBOX.>`` or another service's prefix covers it and a sidecar may subscribe to its own
    inboxes only: what the plane or another service reads through JetStream (other services'
    decision records, say) is delivered where this sidecar cannot listen.
    """
    return f"{INBOX_PREFIX}_{service}"


def sidecar_permissions(service: str) -> dict[str, list[str]]:
    """A sidecar of ``service``: read-only on what it follows, publish only its own decision logs
    and status (``tg.status.<service>``: one service cannot report for another).

    No ``tg.relations``/``tg.trust``/... publish, no stream create/update/purge/delete, no
    consumer delete/list, no ``tg.decisions.>`` subscription (other services' logs), no
    read of TG_DECISIONS. Decision records go to ``tg.decisions.<service>.*`` (one token per
    tenant), which TG_DECISIONS stores; JetStream acks and deliveries come back on the
    service's own inbox prefix (:func:`sidecar_inbox`), never on ``_INBOX.>``.
    """
    followed = [*STREAMS, *(object_store_stream(b) for b in BUCKETS)]
    # STREAM.NAMES: nats-py's object-store get looks up the chunk stream by subject (names only).
    publish = [decisions_subject(service, any_tenant=True), status_subject(service), "$JS.API.STREAM.NAMES"]
    for stream in followed:
        publish += [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.CONSUMER.CREATE.{stream}",
                    f"$JS.API.CONSUMER.CREATE.{stream}.>", f"$JS.API.STREAM.MSG.GET.{stream}",
                    f"$JS.API.DIRECT.GET.{stream}", f"$JS.API.DIRECT.GET.{stream}.>", f"$JS.FC.{stream}.>"]
    return {"publish": publish, "subscribe": [SUBJECT_HEARTBEAT, f"{sidecar_inbox(service)}.>"]}
