"""Search and lookup: the graph proposes candidates, the decision core decides each one.

Why this shape: a list must never hold an item the check would deny, and the check is
the policy's, not the graph's. So the relations index only *proposes* (the objects a
subject reaches, the subjects that reach an object, through usersets), and every
candidate is decided by :meth:`DecisionCore.decide_at` with the same input a check would
build, at one pinned bundle revision and relations state for the whole page.

With a relationship schema in the bundle (and a policy that reads ``input.permissions``),
the schema engine's walks propose too (:mod:`.proposals`): objects reached through
hierarchies such as ``viewer from parent``, which the index walk does not follow.

A probe catches grants the graph cannot see: before walking, one question is decided for
an object (or subject) of the type that no tuple names. When the policy allows it (a
tenant admin, a public type), the candidates become every object (subject) of the type
the tenant's tuples hold. A grant the policy makes to particular ids from its own data,
without relations, is not found (nothing proposes those ids).

Pages: a page token is opaque and signed (HMAC, a key of this process); it names the
pinned state, the question's digest and how many candidates were consumed. Pinned
states are kept for a while (:class:`SearchLimits`); a token whose state is gone is
:class:`PageTokenExpired` (409): pages of one search never mix states, so the caller
starts again. Library only: no HTTP, no metrics (the sidecar's doors add those).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tenantguard.decision.core import DecisionCore, DecisionRequest, PolicyRevision
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.identity.tokens import TOKEN_SUBJECT_TYPE, Claims
from tenantguard.relations import IndexView, OutOfScope
from tenantguard.relations.index import WalkTooBroad
from tenantguard.relations.model import NAME_RE
from tenantguard.schema.engine import QueryTooBroad
from tenantguard.search.errors import PageTokenExpired, PageTokenInvalid, SearchLimitExceeded, SearchNotSupported
from tenantguard.search.proposals import with_schema_resources, with_schema_subjects

SEARCH_ACTIONS_RULE = "search_actions"
_PROBE_PREFIX = "tg-search-probe-"


@dataclass(frozen=True, slots=True)
class SearchLimits:
    """Bounds on one request's work; every one is enforced, none is advisory."""

    default_page_size: int = 100
    max_page_size: int = 1000
    max_fanout: int = 200_000  # graph nodes one walk may visit
    max_decisions: int = 10_000  # candidates decided per request; a page may end early, with a token
    max_actions: int = 1000  # candidate actions a bundle's search_actions may list
    # Seconds of deciding one request may spend: a page then ends early, with a token (each
    # page decides at least one candidate, so paging always moves on); a filter, which has
    # no pages, is refused. Each decision's input carries the subject's relations, so its
    # cost grows with them: a count alone let one page run for minutes.
    max_seconds: float = 2.0
    pinned_states: int = 64  # pinned (revision, relations) states kept for page tokens
    pinned_ttl: float = 120.0  # seconds a pinned state is kept after its last use

    def __post_init__(self) -> None:
        if not 1 <= self.default_page_size <= self.max_page_size <= 10_000:
            raise ValueError("page sizes must satisfy 1 <= default <= max <= 10000")
        if (min(self.max_fanout, self.max_decisions, self.max_actions, self.pinned_states) < 1
                or self.pinned_ttl <= 0 or not self.max_seconds > 0):
            raise ValueError("search limits must be positive")


# --------------------------------------------------------------------------- pinned state


class _PinnedTenant:
    """One tenant's reads in a pinned state; ``relations_of`` is computed once per subject,
    since every candidate of a resource search asks it for the same subject."""

    __slots__ = ("_cache", "_inner", "seq", "tenant")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seq = inner.seq
        self.tenant = inner.tenant
        self._cache: dict[str, dict[str, list[str]]] = {}

    def check(self, object: str, relation: str, subject: str) -> bool:
        return bool(self._inner.check(object, relation, subject))

    def relations_of(self, subject: str) -> dict[str, list[str]]:
        held = self._cache.get(subject)
        if held is None:
            if len(self._cache) >= 16:  # subject searches ask for many subjects: stay bounded
                self._cache.clear()
            held = self._cache[subject] = self._inner.relations_of(subject)
        return held

    def __getattr__(self, name: str) -> Any:  # the candidate walks
        return getattr(self._inner, name)


class PinnedRelations:
    """A relation source frozen at one published state (what ``decide_at`` reads)."""

    def __init__(self, view: IndexView) -> None:
        self._view = view
        self.scope = getattr(view, "scope", None)  # a scoped reader's RelationScope (tenantguard.relations.cells)
        self._tenants: dict[str, _PinnedTenant] = {}
        self._lock = threading.Lock()

    @property
    def applied_seq(self) -> int:
        return self._view.seq

    def tenant(self, tenant: str) -> _PinnedTenant:
        found = self._tenants.get(tenant)
        if found is None:
            with self._lock:
                found = self._tenants.setdefault(tenant, _PinnedTenant(self._view.tenant(tenant)))
        return found


@dataclass(slots=True, eq=False)
class Pinned:
    """One bundle revision and one relations state, shared by every page of a search."""

    id: str
    revision: PolicyRevision | None
    relations: PinnedRelations
    index: weakref.ref[Any]  # the live relation source (a RelationIndex or CellRelations)
    last_used: float

    @property
    def seq(self) -> int:
        return self.relations.applied_seq

    def seq_for(self, tenant: str) -> int:
        """The consistency token of an answer about ``tenant``: its cell's sequence in this state
        (with several cells, the whole state's number is a sum no ``at_least`` compares with)."""
        return self.relations.tenant(tenant).seq

    @property
    def bundle_revision(self) -> str | None:
        return self.revision.revision if self.revision is not None else None


class PinnedStates:
    """Recently pinned states by id: bounded in number and in idle time."""

    def __init__(self, limits: SearchLimits, clock: Callable[[], float]) -> None:
        self._limits = limits
        self._clock = clock
        self._states: OrderedDict[str, Pinned] = OrderedDict()
        self._lock = threading.Lock()

    def current(self, core: DecisionCore) -> Pinned:
        """The live state, pinned: the newest pin is reused while nothing has changed."""
        index = core.relations
        view = index.view() if hasattr(index, "view") else None
        if view is None:
            raise SearchNotSupported("search needs a RelationIndex as the decision core's relation source")
        revision = core.active
        now = self._clock()
        with self._lock:
            self._expire(now)
            if self._states:
                newest = next(reversed(self._states.values()))
                if newest.index() is index and newest.seq == view.seq and newest.revision is revision:
                    newest.last_used = now
                    return newest
            pinned = Pinned(os.urandom(12).hex(), revision, PinnedRelations(view), weakref.ref(index), now)
            self._states[pinned.id] = pinned
            while len(self._states) > self._limits.pinned_states:
                self._states.popitem(last=False)
            return pinned

    def get(self, pinned_id: str) -> Pinned | None:
        now = self._clock()
        with self._lock:
            self._expire(now)
            pinned = self._states.get(pinned_id)
            if pinned is not None:
                pinned.last_used = now
            return pinned

    def _expire(self, now: float) -> None:
        horizon = now - self._limits.pinned_ttl
        for key in [k for k, p in self._states.items() if p.last_used < horizon]:
            del self._states[key]


def _scoped(pinned: Pinned, tenant: str, *types: str) -> Any:
    """The tenant's pinned relations, if the reader holds that tenant and these object types;
    :class:`OutOfScope` otherwise (a search is never answered from data the reader lacks)."""
    scope = pinned.relations.scope
    if scope is not None and not all(scope.holds_type(t) for t in types):
        raise OutOfScope(f"object type {next(t for t in types if not scope.holds_type(t))!r} is outside this "
                         "reader's scope")
    return pinned.relations.tenant(tenant)  # OutOfScope for a tenant of a cell not held


# --------------------------------------------------------------------------- questions and pages


@dataclass(frozen=True, slots=True)
class Page:
    """One page of results, with the state it was decided at.

    ``next_token`` is ``""`` on the last page. ``decisions`` counts the candidates decided
    for this page (for metrics); ``partial`` is True when the page stopped early at the
    decision budget (fewer results than asked, and a token to go on).
    """

    results: tuple[str, ...]
    next_token: str
    relations_seq: int
    bundle_revision: str | None
    decisions: int = 0
    partial: bool = False
    broadened: bool = False  # the probe was allowed: candidates were every object of the type


@dataclass(frozen=True, slots=True)
class ResourceFilter:
    """What a list endpoint needs to write one query: the values of ``attribute`` the
    caller may see. ``any_value``: no restriction on the attribute (the policy allowed a
    value no tuple names); ``include_null``: rows without the attribute are allowed."""

    attribute: str
    values: tuple[str, ...]
    include_null: bool
    any_value: bool
    relations_seq: int
    bundle_revision: str | None

    @property
    def empty(self) -> bool:
        """Nothing may be seen: skip the query."""
        return not (self.values or self.include_null or self.any_value)

    def allows(self, value: str | None) -> bool:
        """The filter applied to one value (what the SQL helpers express)."""
        if self.any_value:
            return True
        return self.include_null if value is None else value in self.values

    def to_wire(self) -> dict[str, Any]:
        return {"attribute": self.attribute, "values": list(self.values), "include_null": self.include_null,
                "any_value": self.any_value, "relations_seq": self.relations_seq,
                "bundle_revision": self.bundle_revision}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ResourceFilter:
        """Parse a sidecar's answer; anything malformed is refused (a filter fails closed)."""
        try:
            values = data["values"]
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise TypeError("values")
            flags = (data["include_null"], data["any_value"])
            if not all(isinstance(f, bool) for f in flags) or not isinstance(data["attribute"], str):
                raise TypeError("flags")
            return cls(data["attribute"], tuple(values), flags[0], flags[1], int(data["relations_seq"]),
                       data.get("bundle_revision"))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"not a resource filter: {exc}") from None


@dataclass(frozen=True, slots=True)
class Question:
    """What every search kind shares: who asks (token claims or a stated subject), the
    action, the resource and the context, as AuthZEN entities (plain mappings)."""

    subject: Mapping[str, Any] | None
    action: Mapping[str, Any] | None
    resource: Mapping[str, Any]
    context: Mapping[str, Any] = field(default_factory=dict)
    claims: Claims | None = None


def _type_of(entity: Mapping[str, Any] | None, what: str) -> str:
    kind = (entity or {}).get("type")
    if not isinstance(kind, str) or NAME_RE.fullmatch(kind) is None:
        raise InvalidInput(f"{what}.type must be a lowercase name (as in the relation tuples)", field=f"{what}.type")
    return kind


# --------------------------------------------------------------------------- the searcher


class Searcher:
    """Search and lookup over one :class:`DecisionCore` and its :class:`RelationIndex`."""

    def __init__(self, core: DecisionCore, *, limits: SearchLimits | None = None,
                 clock: Callable[[], float] = time.monotonic, key: bytes | None = None,
                 between: Callable[[], None] | None = None) -> None:
        """``between``: called after every candidate decision (the sidecar's search workers
        give the serving thread its turn there)."""
        self.core = core
        self._between = between or (lambda: None)
        self.limits = limits or SearchLimits()
        self.states = PinnedStates(self.limits, clock)
        self._clock = clock
        self._key = key or os.urandom(32)

    # -- the three AuthZEN searches --------------------------------------------------

    def resources(self, question: Question, *, limit: int | None = None, token: str | None = None) -> Page:
        """Resources of ``question.resource["type"]`` the subject may act on (ids ``type:id``)."""
        self.core.hold.check()  # held decisions: an error, not an empty page that looks like an answer
        kind = _type_of(question.resource, "resource")
        pinned, offset = self._start("resource", question, limit, token)
        size = self._page_size(limit)
        identity = self.core.identify(self._request(question, question.resource))
        if identity is None:  # every decision would deny (tenant unknown or mismatched): nothing
            return Page((), "", pinned.seq, pinned.bundle_revision)
        tenant, subject = identity
        if not _same_tenant(question.resource, tenant):  # results never cross the caller's tenant
            return Page((), "", pinned.seq, pinned.bundle_revision)
        view = _scoped(pinned, tenant, kind)
        seq = pinned.seq_for(tenant)
        probe = self._probe_id(view, question, kind)
        broadened = self._allowed(pinned, question, {**question.resource, "id": probe})
        walk = view.all_objects(kind, self.limits.max_fanout) if broadened else \
            view.objects_of(subject, kind, self.limits.max_fanout)
        walk = with_schema_resources(pinned.revision, view, kind, subject, walk, self.limits.max_fanout)
        return self._paged("resource", question, pinned, walk, offset, size, broadened, None,
                           lambda obj: self._request(question, {**question.resource, "id": obj.partition(":")[2]}),
                           seq=seq)

    def subjects(self, question: Question, tenant: str, *, limit: int | None = None,
                 token: str | None = None) -> Page:
        """Subjects of ``question.subject["type"]`` that may act on the resource (``type:id``).

        Each candidate is decided as a subject the PEP states (a context token names its
        own subject only), in ``tenant`` (the caller's, resolved by the door), with the
        ``subject.properties`` the question states (e.g. roles).
        """
        self.core.hold.check()
        kind = _type_of(question.subject, "subject")
        _type_of(question.resource, "resource")
        rid = question.resource.get("id")
        if not isinstance(rid, str) or not rid:
            raise InvalidInput("resource.id is required for a subject search", field="resource.id")
        pinned, offset = self._start("subject", question, limit, token, tenant)
        size = self._page_size(limit)
        if not _same_tenant(question.resource, tenant):
            return Page((), "", pinned.seq, pinned.bundle_revision)
        view = _scoped(pinned, tenant, question.resource["type"])
        stated = dict((question.subject or {}).get("properties") or {})
        stated["tenant_id"] = tenant

        def ask(candidate: str) -> DecisionRequest:
            entity = {"type": kind, "id": candidate.partition(":")[2], "properties": stated}
            return DecisionRequest.from_wire({"subject": entity, "action": question.action,
                                              "resource": question.resource, "context": question.context})

        probe = self._probe_id(view, question, kind)
        broadened = self.core.decide_at(ask(f"{kind}:{probe}"), pinned.revision, pinned.relations).allow
        obj = f"{question.resource['type']}:{rid}"
        walk = view.all_subjects(kind, self.limits.max_fanout) if broadened else \
            view.subjects_of(obj, kind, self.limits.max_fanout)
        walk = with_schema_subjects(pinned.revision, view, obj, kind, walk, self.limits.max_fanout)
        return self._paged("subject", question, pinned, walk, offset, size, broadened, tenant, ask)

    def actions(self, question: Question, *, limit: int | None = None, token: str | None = None) -> Page:
        """Actions the subject may take on the resource, among those the bundle's
        ``search_actions`` rule proposes (a sibling of the decision rule)."""
        self.core.hold.check()
        _type_of(question.resource, "resource")
        rid = question.resource.get("id")
        if not isinstance(rid, str) or not rid:  # both inputs named, as for a check (AuthZEN 1.0 search)
            raise InvalidInput("resource.id is required for an action search", field="resource.id")
        # the same shape check as every decision: without a token the subject needs its id
        shaped = DecisionRequest.from_wire({"subject": question.subject, "action": {"name": "_"},
                                            "resource": question.resource}, question.claims)
        pinned, offset = self._start("action", question, limit, token)
        size = self._page_size(limit)
        identity = self.core.identify(DecisionRequest(subject=shaped.subject, action={},
                                                      resource=question.resource, claims=question.claims))
        seq = None
        if identity is not None:
            _scoped(pinned, identity[0], question.resource["type"])
            seq = pinned.seq_for(identity[0])
        candidates = self._candidate_actions(pinned, question)
        return self._paged("action", question, pinned, iter(candidates), offset, size, False, None,
                           lambda name: DecisionRequest.from_wire(
                               {"subject": question.subject, "action": {"name": name},
                                "resource": question.resource, "context": question.context}, question.claims),
                           seq=seq)

    # -- the filter for attributes the graph does not hold ---------------------------

    def resource_filter(self, question: Question, attribute: str, via: str | None = None) -> ResourceFilter:
        """The values of ``resource.properties[attribute]`` the subject may act on.

        Candidates are the ids of the objects of type ``via`` (default: ``attribute``) the
        subject reaches in the graph, and with a schema typing ``via`` those it proposes (a
        project reached through folders); each is decided as a resource carrying that value.
        """
        self.core.hold.check()
        _type_of(question.resource, "resource")
        via = via or attribute
        if NAME_RE.fullmatch(via) is None or not attribute or len(attribute) > 256:
            raise InvalidInput("attribute and via must name a property and an object type", field="attribute")
        pinned = self.states.current(self.core)
        props = dict(question.resource.get("properties") or {})
        props.pop(attribute, None)
        base = {k: v for k, v in question.resource.items() if k not in ("properties", "id")}

        def allowed(value: str | None) -> bool:
            resource = {**base, "properties": props if value is None else {**props, attribute: value}}
            return self._allowed(pinned, question, resource)

        identity = self.core.identify(self._request(question, question.resource))
        if identity is None:
            return ResourceFilter(attribute, (), False, False, pinned.seq, pinned.bundle_revision)
        tenant, subject = identity
        if not _same_tenant(question.resource, tenant):
            return ResourceFilter(attribute, (), False, False, pinned.seq, pinned.bundle_revision)
        view = _scoped(pinned, tenant, question.resource["type"], via)
        include_null = allowed(None)
        any_value = allowed(self._probe_id(view, question, via))
        values: list[str] = []
        if not any_value:
            deadline = self._clock() + self.limits.max_seconds
            walk = self._walk(with_schema_resources(pinned.revision, view, via, subject,
                                                    view.objects_of(subject, via, self.limits.max_fanout),
                                                    self.limits.max_fanout))
            for decided, obj in enumerate(walk, 1):
                if decided > self.limits.max_decisions:
                    raise SearchLimitExceeded(f"more than {self.limits.max_decisions} candidate {via} ids to decide",
                                              limit="max_decisions", maximum=self.limits.max_decisions)
                if decided > 1 and self._clock() >= deadline:
                    raise SearchLimitExceeded(f"deciding the candidate {via} ids took more than "
                                              f"{self.limits.max_seconds:g} s; ask about a narrower subject",
                                              limit="max_seconds", maximum=self.limits.max_seconds)
                value = obj.partition(":")[2]
                keep = allowed(value)
                self._between()
                if keep:
                    values.append(value)
        return ResourceFilter(attribute, tuple(sorted(values)), include_null, any_value, pinned.seq_for(tenant),
                              pinned.bundle_revision)

    # -- shared machinery ------------------------------------------------------------

    def _request(self, question: Question, resource: Mapping[str, Any]) -> DecisionRequest:
        return DecisionRequest.from_wire({"subject": question.subject, "action": question.action,
                                          "resource": resource, "context": question.context}, question.claims)

    def _allowed(self, pinned: Pinned, question: Question, resource: Mapping[str, Any]) -> bool:
        return self.core.decide_at(self._request(question, resource), pinned.revision, pinned.relations).allow

    def _probe_id(self, view: Any, question: Question, kind: str) -> str:
        """An id of ``kind`` that no tuple of the tenant names, fixed for the question."""
        digest = hashlib.sha256(repr((kind, question.resource.get("type"))).encode()).hexdigest()[:16]
        for n in range(100):
            candidate = f"{_PROBE_PREFIX}{digest}{n or ''}"
            if not view.holds(f"{kind}:{candidate}"):
                return candidate
        raise SearchNotSupported("no unused id to probe the policy with")  # pragma: no cover (needs 100 collisions)

    def _page_size(self, limit: int | None) -> int:
        if limit is None or limit == 0:
            return self.limits.default_page_size
        if limit < 0 or limit > self.limits.max_page_size:
            raise SearchLimitExceeded(f"page limit must be within 1..{self.limits.max_page_size}",
                                      limit="max_page_size", maximum=self.limits.max_page_size)
        return limit

    def _walk(self, walk: Iterator[str]) -> Iterator[str]:
        try:
            yield from walk
        except (WalkTooBroad, QueryTooBroad) as exc:  # the index's walk, or the schema's (its step budget)
            # the schema's budget is max_fanout or the engine's own limit, whichever is smaller
            bound = exc.detail.get("limit", self.limits.max_fanout) if isinstance(exc, QueryTooBroad) \
                else self.limits.max_fanout
            raise SearchLimitExceeded(f"the relations walk visited more than {bound} nodes; "
                                      "ask about a narrower type or subject", limit="max_fanout",
                                      maximum=bound) from exc

    def _paged(self, kind: str, question: Question, pinned: Pinned, walk: Iterator[str], offset: int, size: int,
               broadened: bool, tenant: str | None, ask: Callable[[str], DecisionRequest],
               seq: int | None = None) -> Page:
        """One page of ``walk``'s allowed candidates; ``seq``: the answer's consistency token
        (the asked tenant's cell sequence; the pinned state's when no tenant is known)."""
        seq = seq if seq is not None else pinned.seq_for(tenant) if tenant is not None else pinned.seq
        candidates = self._walk(walk)
        for _ in range(offset):  # the candidates earlier pages consumed: same state, same order
            if next(candidates, None) is None:
                return Page((), "", seq, pinned.bundle_revision, broadened=broadened)
        results: list[str] = []
        decided = 0
        partial = False
        deadline = self._clock() + self.limits.max_seconds
        for candidate in candidates:
            decided += 1
            allowed = self.core.decide_at(ask(candidate), pinned.revision, pinned.relations).allow
            self._between()
            if allowed:
                results.append(candidate)
                if len(results) == size:
                    break
            if decided >= self.limits.max_decisions or self._clock() >= deadline:
                partial = True
                break
        more = next(candidates, None) is not None
        token = self._token(kind, question, pinned, offset + decided, tenant) if more else ""
        return Page(tuple(results), token, seq, pinned.bundle_revision, decided, partial and more, broadened)

    def _candidate_actions(self, pinned: Pinned, question: Question) -> list[str]:
        revision = pinned.revision
        if revision is None:
            return []
        rule = f"{revision.entrypoint.rsplit('.', 1)[0]}.{SEARCH_ACTIONS_RULE}"
        try:
            listed = revision.policy.evaluate(rule, {"resource": dict(question.resource),
                                                     "subject": dict(question.subject or {}),
                                                     "context": dict(question.context)})
        except TenantGuardError as exc:
            raise SearchNotSupported(f"the bundle's {rule} failed: {exc.message}") from None
        if not isinstance(listed, list) or not all(isinstance(a, str) and a for a in listed):
            raise SearchNotSupported(f"action search needs {rule}: a rule listing candidate action names")
        if len(listed) > self.limits.max_actions:
            raise SearchLimitExceeded(f"{rule} lists more than {self.limits.max_actions} actions",
                                      limit="max_actions", maximum=self.limits.max_actions)
        return sorted(set(listed))

    # -- page tokens -----------------------------------------------------------------

    def _digest(self, kind: str, question: Question, tenant: str | None) -> str:
        claims = question.claims
        who = ("token", claims.tenant_id, claims.sub, claims.jti) if claims is not None else ("pep", tenant)
        text = json.dumps([kind, who, question.subject, question.action, question.resource, question.context],
                          sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _token(self, kind: str, question: Question, pinned: Pinned, offset: int, tenant: str | None = None) -> str:
        body = json.dumps({"p": pinned.id, "s": pinned.seq, "r": pinned.bundle_revision, "o": offset,
                           "q": self._digest(kind, question, tenant or _stated_tenant(question))},
                          separators=(",", ":")).encode()
        mac = hmac.new(self._key, body, hashlib.sha256).digest()[:16]
        return _b64(body) + "." + _b64(mac)

    def _start(self, kind: str, question: Question, limit: int | None, token: str | None,
               tenant: str | None = None) -> tuple[Pinned, int]:
        """The pinned state and candidate offset: fresh for a first page, the token's otherwise."""
        self._page_size(limit)
        if not token:
            return self.states.current(self.core), 0
        body = self._open(token)
        if body.get("q") != self._digest(kind, question, tenant or _stated_tenant(question)):
            raise PageTokenInvalid("the page token belongs to another question or caller; repeat the same "
                                   "search (subject, action, resource, context) with it")
        pinned = self.states.get(str(body.get("p")))
        if pinned is None:
            live = self.core.relations.applied_seq
            raise PageTokenExpired("the state this search was pinned to is no longer held; start again "
                                   "from the first page", pinned_seq=body.get("s"), current_seq=live,
                                   pinned_revision=body.get("r"),
                                   current_revision=self.core.active.revision if self.core.active else None)
        offset = body.get("o")
        if not isinstance(offset, int) or offset < 0:
            raise PageTokenInvalid("malformed page token")
        return pinned, offset

    def _open(self, token: str) -> dict[str, Any]:
        body_text, _, mac_text = token.partition(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except ValueError:
            raise PageTokenInvalid("malformed page token") from None
        if len(token) > 1024 or not hmac.compare_digest(mac, hmac.new(self._key, body, hashlib.sha256).digest()[:16]):
            raise PageTokenInvalid("page token not issued by this sidecar process, or altered; start again "
                                   "without a token")
        parsed = json.loads(body)
        if not isinstance(parsed, dict):
            raise PageTokenInvalid("malformed page token")
        return parsed


def _same_tenant(resource: Mapping[str, Any], tenant: str) -> bool:
    """The resource names no tenant, or the caller's: search never answers for another tenant,
    act-as grants included (the candidates come from the caller's tenant only)."""
    props = resource.get("properties") or {}
    stated = props.get("tenant_id") if isinstance(props, Mapping) else None
    return stated is None or stated == tenant


def _stated_tenant(question: Question) -> str | None:
    props = (question.subject or {}).get("properties") or {}
    return props.get("tenant_id") if isinstance(props, Mapping) else None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """The bytes of canonical unpadded base64url only: the decoder alone skips characters
    outside the alphabet and ignores a last character's unused bits, so one token had many
    spellings (an altered token still accepted)."""
    if not text or len(text) > 1024:
        raise ValueError("empty")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from None
    if _b64(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


def entity(ident: str) -> dict[str, str]:
    """``"type:id"`` as an AuthZEN entity."""
    kind, _, rest = ident.partition(":")
    return {"type": kind, "id": rest}


def default_subject_type(subject: Mapping[str, Any] | None) -> str:
    return str((subject or {}).get("type") or TOKEN_SUBJECT_TYPE)


__all__: Sequence[str] = (
    "Page", "Pinned", "PinnedRelations", "PinnedStates", "Question", "ResourceFilter", "SearchLimits", "Searcher",
    "entity",
)
