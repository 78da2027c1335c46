"""Relationship API: atomic batched writes, paged listing, and the authoritative check."""

from __future__ import annotations

import asyncio
import base64
import bisect
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import Scope
from tenantguard.errors import InvalidInput
from tenantguard.relations import (
    MAX_BATCH_CHANGES,
    ChangeBatchTooLarge,
    RelationChange,
    Relationship,
    RelationshipInvalid,
)
from tenantguard.relations.index import WalkTooBroad
from tenantguard.relations.model import check_name, meta_from_wire, split_object, split_subject
from tenantguard.schema.admission import TupleNotAllowed
from tenantguard.server.asgi import Reply, header
from tenantguard.util.jsonlimits import loads

from ..runtime import Plane
from ..writer import Written
from .auth import Principal, plane_of, require_admin, require_reader
from .hot import ToFramework, admin_of, plain_json
from .writes import IdempotencyKey, mark_written, written_headers

PREFIX = "/v1/relations"
WRITE_PATH = ""  # POST /v1/relations
router = APIRouter(prefix=PREFIX, tags=["relations"])
WAIT_SECONDS = 2.0
EXPAND_LIMIT = 100  # subjects shown per userset
EXPAND_BUDGET = 10_000  # index entries a userset's expansion may visit


class ConditionIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(examples=["ip_ok"], description="The schema's condition (OpenFGA) / caveat (SpiceDB)")
    context: dict[str, Any] | None = Field(default=None, examples=[{"cidr": "10.0.0.0/8"}],
                                           description="The condition's parameters written with the tuple "
                                                       "(a JSON object, at most 4096 bytes, 8 levels deep)")


class RelIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    tenant: str = Field(examples=["acme"])
    object: str = Field(examples=["project:p1"])
    relation: str = Field(examples=["member"])
    subject: str = Field(examples=["user:alice"], description="type:id, a userset type:id#relation, or the "
                                                               "wildcard type:* (every subject of the type)")
    condition: ConditionIn | None = Field(default=None, description="Grant only where the condition holds "
                                                                    "(evaluated by the schema engine)")
    expires_at: str | None = Field(default=None, examples=["2026-12-31T00:00:00Z"],
                                   description="RFC 3339: the tuple stops granting at this time")


class ChangeIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    op: Literal["write", "delete"]
    rel: RelIn


class ChangesIn(BaseModel):
    changes: list[ChangeIn] = Field(description=f"1 to {MAX_BATCH_CHANGES} changes, applied atomically in order")


class WriteOut(BaseModel):
    consistency_token: int = Field(description="The relations sequence of the batch's tenant cell: reads of "
                                               "those tenants with at_least this value see the write")
    cell: str = Field(examples=["c0"], description="The tenant cell the batch belongs to (every tenant of a "
                                                   "batch must be in one cell, else 422 cells_mixed)")


class CheckOut(BaseModel):
    allowed: bool
    consistency_token: int


class ListOut(BaseModel):
    relations: list[dict[str, Any]] = Field(description="tenant, object, relation, subject (and condition, "
                                                        "expires_at when the tuple has them); with expand, a userset "
                                                        "subject also has expands_to and expansion_truncated")
    next_cursor: str | None
    consistency_token: int


def relation_changes(items: Sequence[tuple[str, Mapping[str, str]]]) -> list[RelationChange]:
    """``(op, rel)`` pairs as changes. Every change is validated before anything is published: one
    bad tuple refuses the batch."""
    if not items:
        raise InvalidInput("changes must hold at least one change")
    if len(items) > MAX_BATCH_CHANGES:
        raise ChangeBatchTooLarge(f"batch has {len(items)} changes, limit {MAX_BATCH_CHANGES}",
                                  limit=MAX_BATCH_CHANGES)
    out: list[RelationChange] = []
    for i, (op, rel) in enumerate(items):
        try:
            relationship = Relationship(rel["tenant"], rel["object"], rel["relation"], rel["subject"],
                                        meta_from_wire(rel))
            out.append(RelationChange(op, relationship))  # type: ignore[arg-type]  # "write" or "delete"
        except RelationshipInvalid as exc:
            raise RelationshipInvalid(f"changes[{i}]: {exc.message}", index=i, **exc.detail) from None
    return out


async def commit_changes(plane: Plane, who: Principal, changes: list[RelationChange],
                         idempotency_key: str | None) -> tuple[dict[str, Any], Written]:
    """Commit validated ``changes`` and audit them: the answer's body and the outcome (the
    route and its door share it). A batch the schema refuses is audited as refused
    (``relations.write_refused``, naming the rule and the change) and nothing of it is applied."""
    writes = sum(1 for c in changes if c.op == "write")
    counts = {"writes": writes, "deletes": len(changes) - writes,
              "tenants": sorted({c.rel.tenant for c in changes})[:20]}
    try:
        written = await plane.write_relations(changes, idempotency_key=idempotency_key)
    except TupleNotAllowed as exc:
        plane.metrics.writes_refused.labels(exc.rule).inc()
        plane.audit.record(who.actor, "relations.write_refused", code=exc.code, rule=exc.rule,
                           index=exc.detail.get("index"), revision=exc.detail.get("revision"), **counts)
        raise
    if not written.replayed:
        plane.audit.record(who.actor, "relations.write", seq=written.seq, **counts)
    return {"consistency_token": written.seq, "cell": written.cell}, written


@router.post(WRITE_PATH, response_model=WriteOut)
async def write(body: ChangesIn, request: Request, response: Response,
                who: Annotated[Principal, Depends(require_admin)],
                idempotency_key: IdempotencyKey = None,
                ) -> dict[str, Any]:
    """Write and delete tuples as ONE signed batch; returns its sequence (the consistency token).

    With a schema in the active bundle, a write it does not admit refuses the whole batch before
    anything is published: 422 ``tuple_not_allowed`` with ``detail.rule``, ``detail.index`` (the
    change's position) and ``detail.tuple``. Deletes are not checked."""
    changes = relation_changes([(c.op, c.rel.model_dump()) for c in body.changes])
    answer, written = await commit_changes(plane_of(request), who, changes, idempotency_key)
    mark_written(response, written)
    return answer


_REL_FIELDS = ("tenant", "object", "relation", "subject")


def _plain_changes(document: Any) -> list[tuple[str, dict[str, str]]]:
    """The ``(op, rel)`` pairs of a document that is plainly a :class:`ChangesIn` (every value of
    the type the model asks for; other members ignored, as the model does); else
    :class:`ToFramework`: the route validates it and says what is wrong."""
    changes = document.get("changes") if type(document) is dict else None
    if type(changes) is not list:
        raise ToFramework
    out = []
    for change in changes:
        if type(change) is not dict:
            raise ToFramework
        op, rel = change.get("op"), change.get("rel")
        if (op != "write" and op != "delete") or type(rel) is not dict:
            raise ToFramework
        for name in _REL_FIELDS:
            if type(rel.get(name)) is not str:
                raise ToFramework
        if not _plain_meta(rel):
            raise ToFramework
        out.append((op, rel))
    return out


def _plain_meta(rel: dict[str, Any]) -> bool:
    """Whether ``condition`` and ``expires_at`` are absent, null or of the types :class:`RelIn` asks for."""
    condition, expires_at = rel.get("condition"), rel.get("expires_at")
    if expires_at is not None and type(expires_at) is not str:
        return False
    if condition is None:
        return True
    return type(condition) is dict and type(condition.get("name")) is str \
        and (condition.get("context") is None or type(condition.get("context")) is dict)


async def write_door(plane: Plane, scope: Scope, body: bytes) -> Reply:
    """The route above, below the framework (see :mod:`.hot`): the same checks in the same order,
    the same commit, the same answer."""
    document = plain_json(scope, body)  # JsonBodies' checks
    who = admin_of(plane, scope)  # require_admin
    changes = relation_changes(_plain_changes(document))  # ChangesIn, then the route
    answer, written = await commit_changes(plane, who, changes, header(scope, b"idempotency-key"))
    return Reply(json.dumps(answer, separators=(",", ":")).encode(), headers=written_headers(written))


def encode_cursor(rel: Relationship) -> str:
    return base64.urlsafe_b64encode(json.dumps(rel.key_wire(), sort_keys=True).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Relationship:
    try:
        raw = loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))  # bounded: a query is untrusted
        return Relationship.from_wire(raw)
    except (ValueError, TypeError, InvalidInput):  # RelationshipInvalid and JsonInvalid are InvalidInput
        raise InvalidInput("cursor is not one this API returned", field="cursor") from None


@router.get("", response_model=ListOut)
async def list_relations(
    request: Request,
    who: Annotated[Principal, Depends(require_reader)],
    tenant: Annotated[str, Query(max_length=64)],
    object: Annotated[str | None, Query(max_length=512)] = None,
    relation: Annotated[str | None, Query(max_length=64)] = None,
    subject: Annotated[str | None, Query(max_length=600)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=4096)] = None,
    at_least: Annotated[int | None, Query(ge=0)] = None,
    expand: Annotated[bool, Query(description=f"For a userset subject (group:eng#member), also list the direct "
                                              f"subjects it expands to, through nesting (at most {EXPAND_LIMIT})")
                      ] = False,
) -> dict[str, Any]:
    """Stored tuples of one tenant, sorted, paged with an opaque cursor; with ``expand``, what each
    userset subject expands to (``expands_to``, ``expansion_truncated`` past the bound)."""
    _check_filters(tenant, object, relation, subject)  # before any wait: a 400, never a 503 after ``at_least``
    plane = plane_of(request)
    plane.require_ready()
    if at_least is not None:
        await plane.wait_relations(at_least, WAIT_SECONDS, tenant)
    seq = plane.state.index.seq_of(tenant) or 0
    after = decode_cursor(cursor) if cursor else None
    listed, last, _ = await list_page(request, tenant, object, relation, subject, after, limit, expand=expand)
    return {"relations": listed, "next_cursor": encode_cursor(last) if last else None, "consistency_token": seq}


def _check_filters(tenant: str, object: str | None, relation: str | None, subject: str | None) -> None:
    """Refuse (400 relationship_invalid) a filter no stored tuple can match: a listing of tenant
    ``ACME`` or object ``Project:p1`` was an empty page, indistinguishable from "nothing stored"."""
    check_name("tenant", tenant)
    if object is not None:
        split_object("object", object)
    if relation is not None:
        check_name("relation", relation)
    if subject is not None:
        split_subject(subject)


LIST_THREADS: Final = 2
"""Listings walk a whole tenant for every page (the index has no seek by cursor: 2 s for a page
of a 200,000-tuple tenant). They run in worker threads, at most this many at once per replica:
the event loop keeps serving, and the executor keeps threads for scrypt checks and the rest."""


def _listings(request: Request) -> asyncio.Semaphore:
    """The replica's gate on concurrent listings (made on first use, on the app's loop)."""
    state = request.app.state
    gate: asyncio.Semaphore | None = getattr(state, "relation_listings", None)
    if gate is None:
        gate = state.relation_listings = asyncio.Semaphore(LIST_THREADS)
    return gate


async def list_page(request: Request, tenant: str, object: str | None, relation: str | None,
                    subject: str | None, after: Relationship | None, limit: int, *,
                    expand: bool = False) -> tuple[list[dict[str, Any]], Relationship | None, int]:
    """One page of a tenant's sorted tuples after ``after`` (wire form, usersets expanded with
    ``expand``), the last tuple when more follow (the next cursor) and how many match, computed off the event
    loop behind :func:`_listings` (the index's states are immutable: a thread reads one safely). Filters
    no tuple can match are refused here, for the API and the console alike."""
    _check_filters(tenant, object, relation, subject)
    index = plane_of(request).state.index

    def page() -> tuple[list[dict[str, Any]], Relationship | None, int]:
        rows = index.list(tenant, object, relation, subject)
        start = bisect.bisect_right(rows, after) if after is not None else 0
        chosen = rows[start : start + limit]
        listed = [r.to_wire() for r in chosen]
        if expand:
            expand_rows(index.tenant(tenant), listed)
        return listed, chosen[-1] if start + limit < len(rows) else None, len(rows)

    async with _listings(request):
        return await asyncio.to_thread(page)


def expand_rows(bound: Any, rows: list[dict[str, Any]]) -> None:
    """Add what each userset subject of ``rows`` expands to, walking each distinct userset once.

    Why once: a page may name one wide userset on every row (1,000 rows of ``group:root#member``
    over 10,000 nested groups took 70 s of the replica's event loop, walked once per row)."""
    walked: dict[str, dict[str, Any]] = {}
    for row in rows:
        userset = row["subject"]
        if "#" in userset:
            if userset not in walked:
                walked[userset] = _expansion(bound, userset)
            row.update(walked[userset])


def _expansion(bound: Any, userset: str) -> dict[str, Any]:
    """The first EXPAND_LIMIT direct subjects of ``userset``, sorted, and whether there are more."""
    members: list[str] = []
    try:
        for member in bound.members(userset, budget=EXPAND_BUDGET):
            if len(members) == EXPAND_LIMIT:
                return {"expands_to": sorted(members), "expansion_truncated": True}
            members.append(member)
    except WalkTooBroad:
        return {"expands_to": sorted(members), "expansion_truncated": True}
    return {"expands_to": sorted(members), "expansion_truncated": False}


@router.get("/check", response_model=CheckOut)
async def check(
    request: Request,
    who: Annotated[Principal, Depends(require_reader)],
    tenant: Annotated[str, Query(max_length=64)],
    object: Annotated[str, Query(max_length=512)],
    relation: Annotated[str, Query(max_length=64)],
    subject: Annotated[str, Query(max_length=600)],
    at_least: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    """Does ``subject`` hold ``relation`` on ``object`` (usersets expanded)? Authoritative for this replica.

    ``at_least``: wait briefly until this consistency token is applied (else 503).
    """
    plane = plane_of(request)
    plane.require_ready()
    rel = Relationship(tenant, object, relation, subject)  # validates every part
    if at_least is not None:
        await plane.wait_relations(at_least, WAIT_SECONDS, rel.tenant)
    bound = plane.state.index.tenant(rel.tenant)
    return {"allowed": bound.check(rel.object, rel.relation, rel.subject), "consistency_token": bound.seq}


@router.get("/digest")
async def digest(request: Request, who: Annotated[Principal, Depends(require_admin)]) -> dict[str, Any]:
    """SHA-256 of the whole index and its sequence: compare replicas (costs a full pass)."""
    plane = plane_of(request)
    plane.require_ready()
    view = plane.state.index.view()
    return {"seq": view.seq, "count": view.count, "digest": view.digest()}
