"""The one decision core: built-in checks, local relations, policy, a typed result.

Every door (native HTTP, AuthZEN, OPA Data API, Envoy ext_authz, the SDK's embedded
mode) builds a :class:`DecisionRequest` and calls :meth:`DecisionCore.decide`. The core
never raises to its caller: any error becomes a deny with a reason (fail closed).

Order of work, cheapest and most decisive first:
0. a hold (:mod:`tenantguard.decision.hold`, e.g. revocations not replayed yet) denies
   everything with its reason;
1. subject and tenant: from the verified token when there is one (the body may only
   agree with it: type, id and tenant; see :meth:`DecisionCore._subject`), otherwise as
   the local PEP states them;
2. tenant kill switch;
3. resource tenant must equal the subject's tenant, unless the policy's ``act_as`` rule
   grants an explicit, audited cross-tenant mode;
4. the subject's relations in that tenant, computed from the local index; a tenant, or a
   resource type, outside the relations' scope (a sidecar scoped to some tenant cells or
   object types, ``tenantguard.relations.cells``) is denied ``out_of_scope``, and so is a
   decision whose policy asks ``tg.related`` about an object type out of scope: never an
   answer from data this reader does not hold;
5. the policy, on one immutable revision read once (a swap never mixes revisions);
   with a :class:`~tenantguard.decision.verdicts.VerdictMemo`, a pure policy's verdict for the
   same question, claims, revision and relations state is reused instead (steps 3-5);
6. high-risk actions are confirmed by a :class:`HighRiskConfirmer`, or denied.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tenantguard.decision.hold import DecisionHold
from tenantguard.decision.permissions import condition_context, permissions_of, reads_permissions, related_answer
from tenantguard.decision.verdicts import Verdict, VerdictMemo, projected_key, question_key
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import TOKEN_CLAIM_NAMES, TOKEN_SUBJECT_TYPE, Claims
from tenantguard.relations.cells import OUT_OF_SCOPE, OutOfScope
from tenantguard.schema.engine import SchemaEngine

log = logging.getLogger(__name__)

DEFAULT_DECISION_ENTRYPOINT = "data.tenantguard.decision"
ACT_AS_SUFFIX = "act_as"
# The input member the core itself reads in :func:`evaluate_input` (whether to ask act_as).
CORE_READS = ("resource", "properties", "tenant_id")


class Policy(Protocol):
    """A prepared policy revision (see ``tenantguard.policy.engine``)."""

    @property
    def pure(self) -> bool: ...

    def evaluate(self, entrypoint: str, input: Mapping[str, Any]) -> Any: ...


class TenantRelations(Protocol):
    """One tenant's relations in one published state (``RelationIndex.tenant``)."""

    seq: int

    def relations_of(self, subject: str) -> Mapping[str, list[str]]: ...

    def check(self, object: str, relation: str, subject: str) -> bool: ...


class RelationSource(Protocol):
    """The local relationship index the core reads (see ``tenantguard.relations``).

    A decision reads one tenant's view of one published state; a verdict memo keys on
    the index object (held weakly, so it must accept weak references) and that state's
    ``seq``, so a source must publish a new ``seq`` with every change.
    """

    @property
    def applied_seq(self) -> int: ...

    def tenant(self, tenant: str) -> TenantRelations: ...


class HighRiskConfirmer(Protocol):
    """Confirms a high-risk allow against the authoritative store; False or raise = deny."""

    def confirm(self, request: DecisionRequest, tenant: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class PolicyRevision:
    """One activated bundle revision: swapping this single reference swaps the policy."""

    revision: str
    policy: Policy
    entrypoint: str = DEFAULT_DECISION_ENTRYPOINT
    activated_at: float = field(default_factory=time.time)
    schema: SchemaEngine | None = None  # the bundle's relationship schema, prepared (decision.permissions)
    # Whether decisions must compute ``input.permissions`` (a schema, and a policy that can read
    # it): derived once per revision here, never per decision.
    asks_permissions: bool = field(init=False, compare=False)
    # Whether the policy's answers can depend on the schema at all (``input.permissions`` or
    # ``tg.related`` answered by it): conditions and expiry then make a verdict depend on the
    # request's context and the clock, which the verdict memo does not key on.
    asks_schema: bool = field(init=False, compare=False)

    def __post_init__(self) -> None:
        asks = self.schema is not None and reads_permissions(getattr(self.policy, "input_paths", ((),)))
        object.__setattr__(self, "asks_permissions", asks)
        related = self.schema is not None and getattr(self.policy, "calls_related", True)
        object.__setattr__(self, "asks_schema", asks or related)

    @property
    def act_as_entrypoint(self) -> str:
        return f"{self.entrypoint.rsplit('.', 1)[0]}.{ACT_AS_SUFFIX}"


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """An AuthZEN-shaped question; ``claims`` are the verified token's, when there is one."""

    subject: Mapping[str, Any]
    action: Mapping[str, Any]
    resource: Mapping[str, Any]
    context: Mapping[str, Any] = field(default_factory=dict)
    claims: Claims | None = None
    door: str = ""  # which door asked (native, authzen, opa, envoy, embedded): for the decision log

    @classmethod
    def from_wire(cls, body: Mapping[str, Any], claims: Claims | None = None, *, door: str = "") -> DecisionRequest:
        """Shape check for a request body; unknown top-level members are ignored (AuthZEN)."""
        subject = _object(body, "subject", required=claims is None)
        action = _object(body, "action", required=True)
        resource = _object(body, "resource", required=True)
        context = _object(body, "context", required=False)
        if not isinstance(action.get("name"), str) or not action["name"]:
            raise InvalidInput("action.name must be a non-empty string")
        if not isinstance(resource.get("type"), str) or not resource["type"]:
            raise InvalidInput("resource.type must be a non-empty string")
        if claims is None and (not isinstance(subject.get("id"), str) or not subject["id"]):
            raise InvalidInput("subject.id must be a non-empty string")
        for name, value in (("subject", subject), ("resource", resource)):
            props = value.get("properties", {})
            if not isinstance(props, Mapping):
                raise InvalidInput(f"{name}.properties must be an object")
        return cls(subject=subject, action=action, resource=resource, context=context, claims=claims, door=door)


def _object(body: Mapping[str, Any], name: str, *, required: bool) -> Mapping[str, Any]:
    value = body.get(name)
    if value is None:
        if required:
            raise InvalidInput(f"{name} is required", field=name)
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{name} must be an object", field=name)
    return value


@dataclass(slots=True)
class Decision:
    """The answer every door renders; ``reasons`` explain denies with stable short strings.

    Treat as immutable. Not ``frozen`` only because frozen dataclasses pay an
    ``object.__setattr__`` per field at construction, and one is built per decision.
    """

    allow: bool
    reasons: tuple[str, ...]
    decision_id: str
    bundle_revision: str | None
    relations_seq: int
    tenant: str | None = None
    subject: str | None = None
    high_risk: bool = False
    act_as: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow": self.allow,
            "reasons": list(self.reasons),
            "decision_id": self.decision_id,
            "bundle_revision": self.bundle_revision,
            "relations_seq": self.relations_seq,
            "high_risk": self.high_risk,
        }


@dataclass(slots=True)
class DecisionRecord:
    """What the decision log keeps: never the raw token. Treat as immutable (see Decision).

    ``request`` is kept by reference and turned into the recorded policy input only by
    :meth:`to_wire`, which the log's drain task calls off the decision path.
    """

    decision_id: str
    time: float
    service: str
    tenant: str | None
    subject: str | None
    action: str
    resource: str
    allow: bool
    reasons: tuple[str, ...]
    bundle_revision: str | None
    relations_seq: int
    actor_chain: tuple[str, ...] = ()
    act_as: bool = False
    high_risk: bool = False
    path: str | None = None  # the decision rule evaluated, e.g. data.tenantguard.decision
    latency_ns: int = 0  # time inside the core (built-in checks, relations, policy)
    request: DecisionRequest | None = None

    def to_wire(self) -> dict[str, Any]:
        """The record as the decision log publishes it (``tenantguard.decisionlog`` format 2)."""
        request = self.request
        claims = request.claims if request is not None else None
        return {
            "v": RECORD_VERSION,
            "decision_id": self.decision_id,
            "time": self.time,
            "service": self.service,
            "door": request.door if request is not None else "",
            "tenant": self.tenant,
            "subject": self.subject,
            "action": self.action,
            "resource": self.resource,
            "allow": self.allow,
            "reasons": list(self.reasons),
            "bundle_revision": self.bundle_revision,
            "relations_seq": self.relations_seq,
            "path": self.path,
            "latency_us": self.latency_ns // 1000,
            "actor_chain": list(self.actor_chain),
            "act_as": self.act_as,
            "high_risk": self.high_risk,
            "token": token_reference(claims) if claims is not None else None,
            "input": self.recorded_input(),
        }

    def recorded_input(self) -> dict[str, Any] | None:
        """The policy input as the policy saw it, without relations (replayed from
        ``relations_seq``) and with ``token`` reduced to :func:`recorded_token`."""
        request = self.request
        if request is None:
            return None
        if self.tenant is None or self.subject is None:  # denied before the subject was known
            return {"subject": dict(request.subject), "action": dict(request.action),
                    "resource": dict(request.resource), "context": {**request.context, "service": self.service}}
        doc = policy_input(request, self.tenant, self.subject, self.service, None)
        del doc["relations"]
        return doc


RECORD_VERSION = 2


def token_reference(claims: Claims) -> dict[str, Any]:
    """Which token a decision was made for: its ``jti``, issuer and key id, and for an exchanged
    token its ancestors' jtis and kids (``chain``, ``chain_kids``: what a revocation reaching it
    names, so explain can tell); never the token."""
    out: dict[str, Any] = {"jti": claims.jti, "iss": claims.iss, "kid": claims.kid}
    if claims.chain:
        out["chain"] = list(claims.chain)
    if claims.chain_kids:
        out["chain_kids"] = list(claims.chain_kids)
    return out


def recorded_token(claims: Claims) -> dict[str, Any]:
    """``input.token`` in a record: the token's ``jti``, issuer and key id, plus ``scope`` when the
    token has one (policies read ``input.token.scope``; a scope is not a credential)."""
    out: dict[str, Any] = {"jti": claims.jti, "iss": claims.iss, "kid": claims.kid}
    scope = claims.raw.get("scope")
    if scope is not None:
        out["scope"] = scope
    return out


def policy_input(request: DecisionRequest, tenant: str, subject: str, service: str,
                 relations: Mapping[str, list[str]] | None) -> dict[str, Any]:
    """The policy's ``input`` for ``request`` asked in ``tenant`` by ``subject`` ("type:id").

    With a token, ``input.token`` holds its claims; a decision record calls this and then
    keeps only :func:`recorded_token` of them (see :meth:`DecisionRecord.recorded_input`).
    """
    claims = request.claims
    subject_type, _, subject_id = subject.partition(":")
    stated_props = request.subject.get("properties") or {}
    if claims is not None:
        # The token's subject, built afresh: only type, id and properties; properties
        # named like a claim come from the token (roles, scope) or not at all.
        subject_props = {k: v for k, v in stated_props.items() if k not in TOKEN_CLAIM_NAMES}
        subject_props["tenant_id"] = tenant
        subject_props["roles"] = list(claims.roles)
        if claims.scope:  # absent scope means unrestricted; present, it only narrows
            subject_props["scope"] = " ".join(claims.scope)
        subject_doc: dict[str, Any] = {"type": subject_type, "id": subject_id, "properties": subject_props}
    else:
        subject_props = dict(stated_props)
        subject_props["tenant_id"] = tenant
        subject_doc = {**request.subject, "type": subject_type, "id": subject_id, "properties": subject_props}
    resource_props = dict(request.resource.get("properties") or {})
    resource_props.setdefault("tenant_id", tenant)  # no tenant named: the subject's own
    doc = {
        "subject": subject_doc,
        "action": dict(request.action),
        "resource": {**request.resource, "properties": resource_props},
        "context": {**request.context, "service": service},
        "token": (claims.to_dict() if relations is not None else recorded_token(claims)) if claims is not None
        else None,
        "actor_chain": claims.actor_chain if claims is not None else [],
        "relations": relations,
    }
    doc.update(input_facts(doc))
    return doc


ACTOR_PREFIX = "svc:"  # every actor in a chain is a service: "svc:<name>"
_ARRAYS = (list, tuple)  # what the engine receives as a Rego array


def input_facts(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``actor_services`` and ``scope_limits``: what ``doc``'s actor chain and scopes say, in
    the one form a policy can use without string builtins (docs/decision-input.md, "Input
    facts"). :func:`policy_input` adds them to every input; anything else that builds an
    input for a decision rule (a replay, a test) adds them with this function.

    * ``actor_services``: the names of the services in ``actor_chain``, nearest first
      (``["svc:orders", "svc:edge"]`` -> ``["orders", "edge"]``); ``[]`` when the chain is
      empty or absent; ``None`` when it is not a list or one of its actors is not a
      ``"svc:<name>"`` string with a non-empty name.
    * ``scope_limits``: every scope that limits the request (``token.scope``, then
      ``subject.properties.scope``, each when present and not null), each as the list of
      its items (a string split on spaces, without empty items; the strings of a list;
      nothing for any other value, which covers no action), each distinct list once;
      ``[]`` when no scope limits the request.

    Exactly what the example bundle's complete rules read from those members
    (lib.service_name, lib.scope_set); tests/policy/test_deny_rules.py holds them equal.
    """
    chain = doc.get("actor_chain", [])
    services: list[str] | None = [] if isinstance(chain, _ARRAYS) else None
    if services is not None:
        for actor in chain:
            if not (isinstance(actor, str) and actor.startswith(ACTOR_PREFIX) and len(actor) > len(ACTOR_PREFIX)):
                services = None
                break
            services.append(actor[len(ACTOR_PREFIX):])
    limits: list[list[str]] = []
    token, subject = doc.get("token"), doc.get("subject")
    props = subject.get("properties") if isinstance(subject, Mapping) else None
    for holder in (token, props):
        scope = holder.get("scope") if isinstance(holder, Mapping) else None
        if scope is None:
            continue
        if isinstance(scope, str):
            items = [item for item in scope.split(" ") if item]
        elif isinstance(scope, _ARRAYS):
            items = [item for item in scope if isinstance(item, str)]
        else:
            items = []
        if items not in limits:
            limits.append(items)
    return {"actor_services": services, "scope_limits": limits}


class _Bound:
    """What ``tg.related`` reads during one evaluation: one tenant's view, the object types in
    scope (None: all), the revision's schema with the request's condition parameters, and what
    went wrong: a question about a type out of scope (``missed``) or a schema answer that is
    no boolean (``failure``, raised once the evaluation is over)."""

    __slots__ = ("context", "failure", "missed", "schema", "types", "view")

    def __init__(self, view: TenantRelations, types: frozenset[str] | None, schema: SchemaEngine | None = None,
                 context: Mapping[str, Any] | None = None) -> None:
        self.view, self.types, self.schema, self.context = view, types, schema, context
        self.missed = False
        self.failure: TenantGuardError | None = None

    def answer(self, obj: str, relation: str, subject: str) -> bool:
        """The schema's answer for types it defines, the tuples' otherwise (and for a view that
        holds no tuples to walk: a replay of recorded relations answers from them, as before)."""
        if self.schema is not None and hasattr(self.view, "find"):
            if self.failure is not None:
                return False  # the decision denies anyway; ask nothing more
            try:
                answer = related_answer(self.schema, self.view, obj, relation, subject,  # type: ignore[arg-type]
                                        self.context)
            except TenantGuardError as exc:
                self.failure = exc
                return False
            if answer is not None:
                note = getattr(self.view, "note_related", None)  # explain's trace
                if note is not None:
                    note(obj, relation, subject, answer)
                return answer
        return self.view.check(obj, relation, subject)


@contextlib.contextmanager
def bound_relations(view: TenantRelations, types: frozenset[str] | None = None, schema: SchemaEngine | None = None,
                    context: Mapping[str, Any] | None = None) -> Iterator[_Bound]:
    """Bind ``tg.related`` to ``view`` (one tenant, one state) for the evaluations inside; with
    ``schema``, the object types it defines are answered by it (conditions read ``context``)."""
    bound = _Bound(view, types, schema, context)
    token = _related_scope.set(bound)
    try:
        yield bound
    finally:
        _related_scope.reset(token)


def scope_types(relations: object) -> frozenset[str] | None:
    """The object types a relation source holds (None: every type)."""
    scope = getattr(relations, "scope", None)
    return getattr(scope, "types", None)


def tenant_seq(relations: RelationSource, tenant: str | None) -> int:
    """The sequence a question about ``tenant`` is answered at: its cell's when the source is
    split into cells (a consistency token compares with that alone), else the source's."""
    seq_of = getattr(relations, "seq_of", None)
    seq = seq_of(tenant) if seq_of is not None and tenant is not None else None
    return relations.applied_seq if seq is None else seq


def evaluate_input(active: PolicyRevision, view: TenantRelations, input_doc: Mapping[str, Any],
                   tenant: str, types: frozenset[str] | None = None) -> Verdict:
    """Steps 3-5 on a built input: the resource's tenant (with ``act_as``), then the decision rule.

    The core, ``explain``, impact analysis and shadow evaluation (``tenantguard.rollout``) all
    call this, so a replay runs exactly what a decision ran. ``types``: the object types the
    relations hold; a ``tg.related`` question about another type makes the verdict
    ``out_of_scope`` whatever the policy concluded.
    Raises on evaluation errors (the core fails closed).
    """
    act_as = input_doc["resource"]["properties"]["tenant_id"] != tenant
    if act_as and active.policy.evaluate(active.act_as_entrypoint, input_doc) is not True:
        return Verdict(False, ("tenant_mismatch",))
    # a cross-tenant request the act-as rule let through: the decision rule must grant it too
    with bound_relations(view, types, active.schema, condition_context(input_doc)) as bound:
        result = active.policy.evaluate(active.entrypoint, input_doc)
    if bound.missed:
        return Verdict(False, (OUT_OF_SCOPE,), False, act_as)
    if bound.failure is not None:
        raise bound.failure
    allow, reasons, high_risk = interpret(result)
    return Verdict(allow, reasons, high_risk, act_as)


class _Denied(Exception):
    """Internal short-circuit: a built-in check decided before policy ran."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


# The tenant's relations (one published state) ``tg.related`` reads during one evaluation.
_related_scope: contextvars.ContextVar[_Bound | None] = contextvars.ContextVar(
    "tenantguard_related_scope", default=None
)


def related_builtin(object: str, relation: str, subject: str) -> bool:
    """``tg.related(object, relation, subject)`` for Rego, bound to the decision's tenant.

    Outside a decision it answers False, so a policy can never look across tenants
    even by mistake: the tenant is not an argument.
    """
    bound = _related_scope.get()
    if bound is None:
        return False
    obj = str(object)
    if bound.types is not None and obj.partition(":")[0] not in bound.types:
        bound.missed = True  # the decision becomes out_of_scope (evaluate_input)
        return False
    return bound.answer(obj, str(relation), str(subject))


RELATED_EXTENSION: dict[str, tuple[int, Callable[..., Any]]] = {"tg.related": (3, related_builtin)}


class DecisionCore:
    """Decides locally for one service; holds the active policy revision by reference."""

    def __init__(
        self,
        service: str,
        relations: RelationSource,
        *,
        revocations: RevocationList | None = None,
        confirmer: HighRiskConfirmer | None = None,
        on_decision: Callable[[DecisionRecord], None] | None = None,
        clock: Callable[[], float] = time.time,
        memo: VerdictMemo | None = None,
    ) -> None:
        self.service = service
        self.memo = memo
        self.relations = relations
        self.revocations = revocations if revocations is not None else RevocationList()
        self.confirmer = confirmer
        self.on_decision = on_decision
        self.active: PolicyRevision | None = None
        # While anything is held, every decision is denied with the held reason (fail closed).
        self.hold = DecisionHold()
        self._clock = clock
        # Sees every decision that reached the policy, after it is made (shadow evaluation,
        # ``tenantguard.rollout.shadow``); must be O(1) and never block. None: no cost at all.
        self.observer: Callable[[DecisionRequest, Decision, TenantRelations], None] | None = None

    def activate(self, revision: PolicyRevision) -> None:
        """Swap the policy: one reference assignment, so each decision sees one revision."""
        self.active = revision

    @property
    def ready(self) -> bool:
        return self.active is not None

    def decide(self, request: DecisionRequest) -> Decision:
        """Allow or deny; never raises (any failure is a deny with its reason)."""
        return self._decide(request, self.active, self.relations, self.memo, True)

    def decide_at(self, request: DecisionRequest, revision: PolicyRevision | None, relations: RelationSource,
                  *, record: bool = False) -> Decision:
        """:meth:`decide` at a pinned bundle revision and relations state.

        Search decides every candidate of a page this way, so the page is the answer of
        one state even while bundles swap and batches apply. The verdict memo is not used
        (it follows the live state); ``record`` is off by default because a page of
        candidate decisions is not a question a caller asked.
        """
        return self._decide(request, revision, relations, None, record)

    def _decide(self, request: DecisionRequest, active: PolicyRevision | None, relations: RelationSource,
                memo: VerdictMemo | None, record: bool) -> Decision:
        started = time.perf_counter_ns()
        seq = relations.applied_seq
        decision_id = os.urandom(16).hex()  # 128 random bits, like uuid4, at a fraction of the cost
        tenant = subject = None
        view: TenantRelations | None = None
        act_as = high_risk = False
        try:
            held = self.hold.current
            if held is not None:
                raise _Denied(held.code)
            tenant, subject = self._subject(request)
            seq = tenant_seq(relations, tenant)  # what a deny before the policy reports
            self._check_kill_switch(tenant)
            if active is None:
                raise _Denied("no_active_bundle")
            # One published state for the whole decision: the sequence it reports, the
            # policy's input.relations and every tg.related call all agree.
            view = self._view(relations, tenant, request)
            seq = view.seq
            verdict = self._verdict(active, relations, view, request, tenant, subject, memo)
            allow, reasons, high_risk, act_as = verdict.allow, verdict.reasons, verdict.high_risk, verdict.act_as
            if allow and high_risk:
                allow, reasons = self._confirm_high_risk(request, tenant, reasons)
        except _Denied as denied:
            allow, reasons = False, (denied.reason,)
        except TenantGuardError as exc:
            log.warning("decision %s failed closed: %s", decision_id, exc)
            allow, reasons = False, (exc.code,)
        except Exception:  # fail closed on anything unexpected, and say so in the log
            log.exception("decision %s failed closed on an unexpected error", decision_id)
            allow, reasons = False, ("internal_error",)
        decision = Decision(
            allow=allow,
            reasons=reasons,
            decision_id=decision_id,
            bundle_revision=active.revision if active else None,
            relations_seq=seq,
            tenant=tenant,
            subject=subject,
            high_risk=high_risk,
            act_as=act_as,
        )
        if record:  # a question a caller asked (not a search candidate): logged, and shown to the observer
            if self.on_decision is not None:
                self._record(request, decision, active, time.perf_counter_ns() - started)
            observer = self.observer
            if observer is not None and view is not None:
                try:
                    observer(request, decision, view)
                except Exception:  # an observer must never change or block a decision
                    log.exception("decision observer failed")
        return decision

    def identify(self, request: DecisionRequest) -> tuple[str, str] | None:
        """``(tenant, "type:id")`` a decision on ``request`` would use, or None where it
        would deny before asking the policy (no tenant, a body disagreeing with the token)."""
        try:
            return self._subject(request)
        except _Denied:
            return None

    # -- built-in checks ---------------------------------------------------------------

    def _subject(self, request: DecisionRequest) -> tuple[str, str]:
        """(tenant, "type:id"): the token's when present; the body may only agree with it.

        With a token, who the subject is (its type, id and tenant) comes from the token
        alone: a body stating another ``type`` or ``id`` is denied ``subject_mismatch``,
        another ``properties.tenant_id`` ``tenant_mismatch``. Without one, the local PEP
        states them (trusted: same pod).
        """
        subject = request.subject
        props = subject.get("properties") or {}
        stated_tenant = props.get("tenant_id")
        claims = request.claims
        if claims is not None:
            stated_type = subject.get("type")
            if stated_type is not None and stated_type != claims.subject_type:
                raise _Denied("subject_mismatch")
            stated_id = subject.get("id")
            if stated_id is not None and stated_id != claims.sub:
                raise _Denied("subject_mismatch")
            if stated_tenant is not None and stated_tenant != claims.tenant_id:
                raise _Denied("tenant_mismatch")
            return claims.tenant_id, f"{claims.subject_type}:{claims.sub}"
        if not isinstance(stated_tenant, str) or not stated_tenant:
            raise _Denied("tenant_unknown")
        stated_id = subject.get("id")
        if not isinstance(stated_id, str) or not stated_id:  # a request built without from_wire's checks
            raise _Denied("subject_unknown")
        if "#" in stated_id:  # "eng#member" would ask as the userset group:eng#member (tokens: is_subject_id)
            raise _Denied("subject_invalid")
        return stated_tenant, f"{subject.get('type') or TOKEN_SUBJECT_TYPE}:{stated_id}"

    @staticmethod
    def _view(relations: RelationSource, tenant: str, request: DecisionRequest) -> TenantRelations:
        """The tenant's relations; ``out_of_scope`` for a tenant of a cell, or a resource of an
        object type, that the relations do not hold (the one place every door passes)."""
        try:
            view = relations.tenant(tenant)
        except OutOfScope:
            raise _Denied(OUT_OF_SCOPE) from None
        types = scope_types(relations)
        if types is not None and request.resource.get("type") not in types:
            raise _Denied(OUT_OF_SCOPE)
        return view

    def _check_kill_switch(self, tenant: str) -> None:
        if tenant in self.revocations.tenants:
            raise _Denied("tenant_revoked")

    # -- policy ------------------------------------------------------------------------

    def _verdict(self, active: PolicyRevision, relations: RelationSource, view: TenantRelations,
                 request: DecisionRequest, tenant: str, subject: str, memo: VerdictMemo | None) -> Verdict:
        """The policy's verdict: reused from the memo when this exact question was
        decided on the same revision and relations state, evaluated otherwise."""
        types = scope_types(relations)
        if memo is None or not getattr(active.policy, "pure", False):  # unknown engines: never reused
            return self._evaluate_policy(active, view, request, tenant, subject, types)
        if active.asks_schema and getattr(view, "has_meta", True):
            # Conditions read the request's context and expiries the clock: not a function of
            # the question and the relations state alone, so never reused.
            return self._evaluate_policy(active, view, request, tenant, subject, types)
        key = question_key(request.subject, request.action, request.resource, request.context)
        if key is None:
            return self._evaluate_policy(active, view, request, tenant, subject, types)
        epoch = memo.epoch(active, relations, view.seq)
        verdict = memo.get(epoch, key, request.claims)
        if verdict is not None:
            return verdict
        # The same question as far as this bundle can tell (verdicts.projected_key): the
        # members of the input its modules read, the tenant and the subject.
        input_doc = self._with_permissions(active, view, request, subject,
                                           policy_input(request, tenant, subject, self.service, {}))
        projected = projected_key(tenant, subject, input_doc,
                                  (*getattr(active.policy, "input_paths", ((),)), CORE_READS))
        verdict = memo.get_projected(epoch, projected) if projected is not None else None
        if verdict is None:
            verdict = self._evaluate_policy(active, view, request, tenant, subject, types, input_doc)
            if projected is not None:
                memo.put_projected(epoch, projected, verdict)
        memo.put(epoch, key, request.claims, verdict)
        return verdict

    def _evaluate_policy(self, active: PolicyRevision, view: TenantRelations, request: DecisionRequest,
                         tenant: str, subject: str, types: frozenset[str] | None = None,
                         input_doc: dict[str, Any] | None = None) -> Verdict:
        """Steps 3-5 (see :func:`evaluate_input`). Raises on evaluation errors (never memoized).

        A policy that cannot read ``input.relations`` (engine.reads_input_relations) gets ``{}``:
        the same verdict, without a walk whose cost grows with what the subject holds.
        ``input_doc``: the input already built with ``{}`` for relations, to complete."""
        reads = getattr(active.policy, "reads_relations", True)
        if input_doc is None:
            input_doc = self._with_permissions(active, view, request, subject,
                                               policy_input(request, tenant, subject, self.service, {}))
        if reads:
            input_doc["relations"] = view.relations_of(subject)
        return evaluate_input(active, view, input_doc, tenant, types)

    def policy_input(self, view: TenantRelations, request: DecisionRequest, tenant: str,
                     subject: str, with_relations: bool = True,
                     revision: PolicyRevision | None = None) -> dict[str, Any]:
        """The input a policy sees for ``request`` (shadow evaluation rebuilds it off the path;
        ``with_relations`` as the policy being evaluated needs; ``revision``'s schema gives
        ``input.permissions`` when its policy reads them)."""
        relations = view.relations_of(subject) if with_relations else {}
        doc = policy_input(request, tenant, subject, self.service, relations)
        return doc if revision is None else self._with_permissions(revision, view, request, subject, doc)

    @staticmethod
    def _with_permissions(active: PolicyRevision, view: TenantRelations, request: DecisionRequest, subject: str,
                          input_doc: dict[str, Any]) -> dict[str, Any]:
        """``input_doc`` with the schema's permissions of ``subject`` on the resource, when the
        revision's policy reads them (see ``tenantguard.decision.permissions``)."""
        if active.asks_permissions:
            assert active.schema is not None
            input_doc.update(permissions_of(active.schema, view, request.resource, subject,  # type: ignore[arg-type]
                                            condition_context(input_doc)))
        return input_doc

    def _confirm_high_risk(
        self, request: DecisionRequest, tenant: str, reasons: tuple[str, ...]
    ) -> tuple[bool, tuple[str, ...]]:
        if self.confirmer is None:
            return False, ("high_risk_unconfirmed",)
        try:
            confirmed = self.confirmer.confirm(request, tenant)
        except Exception as exc:  # the authoritative store is down: fail closed
            log.warning("high-risk confirmation failed: %s", exc)
            return False, ("high_risk_unconfirmed",)
        return (True, reasons) if confirmed else (False, ("high_risk_denied",))

    def _record(self, request: DecisionRequest, decision: Decision, active: PolicyRevision | None,
                latency_ns: int) -> None:
        assert self.on_decision is not None
        resource = f"{request.resource.get('type', '')}:{request.resource.get('id', '')}"
        claims = request.claims
        record = DecisionRecord(
            decision_id=decision.decision_id,
            time=self._clock(),
            service=self.service,
            tenant=decision.tenant,
            subject=decision.subject,
            action=str(request.action.get("name", "")),
            resource=resource,
            allow=decision.allow,
            reasons=decision.reasons,
            bundle_revision=decision.bundle_revision,
            relations_seq=decision.relations_seq,
            actor_chain=tuple(claims.actor_chain) if claims is not None else (),
            act_as=decision.act_as,
            high_risk=decision.high_risk,
            path=active.entrypoint if active is not None else None,
            latency_ns=latency_ns,
            request=request,
        )
        try:
            self.on_decision(record)
        except Exception:  # a log sink must never change or block a decision
            log.exception("decision log sink failed")


def interpret(result: Any) -> tuple[bool, tuple[str, ...], bool]:
    """A rule may return a boolean or an object with ``allow`` (+ ``reasons``, ``high_risk``).

    Anything else (undefined, a string, ``allow`` not a boolean) is a deny: fail closed.
    """
    if result is True:
        return True, (), False
    if result is False:
        return False, ("policy_denied",), False
    if isinstance(result, Mapping) and isinstance(result.get("allow"), bool):
        reasons = result.get("reasons") or ()
        if isinstance(reasons, str):
            reasons = (reasons,)
        reasons = tuple(str(r) for r in reasons) if isinstance(reasons, list | tuple | set | frozenset) else ()
        allow = result["allow"]
        if not allow and not reasons:
            reasons = ("policy_denied",)
        return allow, tuple(sorted(reasons)), bool(result.get("high_risk", False))
    if result is None:
        return False, ("policy_undefined",), False
    return False, ("policy_result_invalid",), False
