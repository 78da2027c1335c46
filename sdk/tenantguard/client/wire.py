"""Sans-IO core shared by every client: questions out, typed answers in.

Both the async and the sync sidecar client build their requests and read their
responses here, so the two cannot drift apart (the Cerbos SDK learnt this by
generating one from the other; here the I/O loop is the only part written twice, and
it is twenty lines). The embedded authorizer reuses the question shaping and the
AuthZEN evaluation semantics, so the three answer alike.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tenantguard.client.errors import UnexpectedResponse, error_from_body, oauth_error_from_body
from tenantguard.context import NoTenantContext, optional_context
from tenantguard.decision.core import Decision
from tenantguard.errors import InvalidInput, TenantGuardError, TokenMalformed
from tenantguard.exchange import GRANT_TYPE_TOKEN_EXCHANGE, TOKEN_TYPE_JWT, PropagationMode
from tenantguard.identity.tokens import token_fingerprint
from tenantguard.search.core import ResourceFilter

Semantic = Literal["execute_all", "deny_on_first_deny", "permit_on_first_permit"]
SEMANTICS: frozenset[str] = frozenset({"execute_all", "deny_on_first_deny", "permit_on_first_permit"})
PROPAGATION_MODES: frozenset[str] = frozenset({"forward", "exchange", "deny"})

CHECK_PATH = "/v1/check"
FILTER_PATH = "/v1/lookup/filter"
EVALUATIONS_PATH = "/access/v1/evaluations"
TOKEN_PATH = "/oauth2/token"
PROPAGATION_PATH = "/v1/propagation"


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One decision, whichever door answered it. Truthy exactly when allowed.

    ``relations_seq`` is None when the door does not report it (AuthZEN evaluations).
    """

    allow: bool
    reasons: tuple[str, ...] = ()
    decision_id: str | None = None
    bundle_revision: str | None = None
    relations_seq: int | None = None
    high_risk: bool = False

    def __bool__(self) -> bool:
        return self.allow

    @classmethod
    def from_decision(cls, decision: Decision) -> CheckResult:
        return cls(decision.allow, decision.reasons, decision.decision_id, decision.bundle_revision,
                   decision.relations_seq, decision.high_risk)

    def to_dict(self) -> dict[str, Any]:
        return {"allow": self.allow, "reasons": list(self.reasons), "decision_id": self.decision_id,
                "bundle_revision": self.bundle_revision, "relations_seq": self.relations_seq,
                "high_risk": self.high_risk}


@dataclass(frozen=True, slots=True, repr=False)
class ExchangedToken:
    """An RFC 8693 2.2.1 answer: a context token for ``audience`` (never shown by repr)."""

    access_token: str
    audience: str
    expires_at: float
    scope: tuple[str, ...] = ()
    issued_token_type: str = TOKEN_TYPE_JWT
    token_type: str = "Bearer"
    obtained_at: float = field(default_factory=time.time)

    @property
    def expires_in(self) -> float:
        return max(0.0, self.expires_at - time.time())

    def __repr__(self) -> str:
        return (f"ExchangedToken(audience={self.audience!r}, scope={self.scope!r}, "
                f"expires_at={self.expires_at:.0f}, token=<{token_fingerprint(self.access_token)}>)")


# --------------------------------------------------------------------------- questions


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP exchange with the sidecar, before any I/O."""

    method: str
    path: str
    parse: Callable[[int, Any], Any]
    json: Mapping[str, Any] | None = None
    form: Mapping[str, str] | None = None
    params: Mapping[str, str] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


def entity(value: Mapping[str, Any] | str, kind: str) -> dict[str, Any]:
    """``"invoice"`` -> ``{"type": "invoice"}``; a mapping is copied after a shape check."""
    if isinstance(value, str):
        if not value:
            raise InvalidInput(f"{kind} type must be a non-empty string")
        return {"type": value}
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str) or not value["type"]:
        raise InvalidInput(f"{kind} must be a mapping with a non-empty 'type'")
    return dict(value)


def action_of(value: Mapping[str, Any] | str) -> dict[str, Any]:
    if isinstance(value, str):
        if not value:
            raise InvalidInput("action name must be a non-empty string")
        return {"name": value}
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str) or not value["name"]:
        raise InvalidInput("action must be a name or a mapping with a non-empty 'name'")
    return dict(value)


def resolve_token(token: str | None, subject: Mapping[str, Any] | None) -> str | None:
    """The explicit token, else the current request's; a PEP-stated subject needs neither.

    Without any of the three there is nobody to decide for: fail loudly rather than
    send a question the sidecar can only refuse.
    """
    if token is not None:
        return token
    ctx = optional_context()
    if ctx is not None:
        return ctx.token
    if subject is None:
        raise NoTenantContext("check() needs a token, a subject, or a current tenant context")
    return None


def question(action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str, *,
             subject: Mapping[str, Any] | None = None,
             context: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An AuthZEN-shaped question (docs/decision-input.md)."""
    body: dict[str, Any] = {"action": action_of(action), "resource": entity(resource, "resource")}
    if subject is not None:
        body["subject"] = entity(subject, "subject")
    if context:
        body["context"] = dict(context)
    return body


# RFC 6750 2.1 b64token: what a context token (a JWS compact serialization) is made of.
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def bearer(token: str | None) -> dict[str, str]:
    """The ``Authorization`` header for ``token``; :class:`TokenMalformed` for one no header can carry.

    Why here, before any I/O: a non-ASCII or control character makes the HTTP library
    raise a ValueError that escapes every ``except TenantGuardError`` (a 500 where the
    caller's bad token deserves a 401), or fails as if the sidecar were down (a 503).
    """
    if not token:
        return {}
    if _B64TOKEN.fullmatch(token) is None:
        raise TokenMalformed("a context token is a JWS compact serialization (RFC 6750 b64token characters only)")
    return {"Authorization": f"Bearer {token}"}


def check_call(body: Mapping[str, Any], token: str | None, at_least: int | None = None) -> Call:
    payload = dict(body)
    if at_least is not None:
        payload["at_least"] = at_least
    return Call("POST", CHECK_PATH, parse_check, json=payload, headers=bearer(token))


def filter_call(body: Mapping[str, Any], attribute: str, via: str | None, token: str | None,
                at_least: int | None = None) -> Call:
    """``POST /v1/lookup/filter``: the values of ``resource.properties[attribute]`` the caller may act on."""
    if not isinstance(attribute, str) or not attribute:
        raise InvalidInput("attribute must be a non-empty property name", field="attribute")
    payload = {**body, "attribute": attribute}
    if via is not None:
        payload["via"] = via
    if at_least is not None:
        payload["at_least"] = at_least
    return Call("POST", FILTER_PATH, parse_filter, json=payload, headers=bearer(token))


def evaluation_items(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each entry's own members, shaped like :func:`question` (any member may be omitted)."""
    shaped = []
    for item in items:
        entry: dict[str, Any] = {}
        if "action" in item:
            entry["action"] = action_of(item["action"])
        if "resource" in item:
            entry["resource"] = entity(item["resource"], "resource")
        if "subject" in item:
            entry["subject"] = entity(item["subject"], "subject")
        if item.get("context"):
            entry["context"] = dict(item["context"])
        shaped.append(entry)
    return shaped


def evaluations_call(defaults: Mapping[str, Any], items: list[dict[str, Any]], semantic: Semantic,
                     token: str | None) -> Call:
    if semantic not in SEMANTICS:
        raise InvalidInput(f"evaluations_semantic must be one of {sorted(SEMANTICS)}")
    # the sidecar answers bare {"decision": ...} entries unless asked: CheckResult carries reasons and ids
    body = {**defaults, "evaluations": items,
            "options": {"evaluations_semantic": semantic, "tenantguard_context": True}}
    asked = len(items)
    return Call("POST", EVALUATIONS_PATH,
                lambda status, doc: answered_in_full(parse_evaluations(status, doc), asked, semantic),
                json=body, headers=bearer(token))


def answered_in_full(results: list[CheckResult], asked: int, semantic: Semantic) -> list[CheckResult]:
    """The answers, one per question in order; a list that cannot be that is refused.

    Why: callers zip the answers with their questions or test ``all(results)``; one
    ``allow`` answered for three questions (a truncated list, a single-decision body)
    would read as three allows. Only a semantic that stops may answer fewer, and then
    the last answer is the one that stopped it.
    """
    if not asked:
        return results
    complete = len(results) == asked
    stopped = 0 < len(results) < asked and stop_after(results[-1], semantic)
    if not (complete or stopped):
        raise UnexpectedResponse(f"evaluations answer has {len(results)} decision(s) for {asked} question(s)")
    return results


def exchange_call(token: str, audience: str, scope: Sequence[str] | str | None,
                  authorization: str | None) -> Call:
    form = {"grant_type": GRANT_TYPE_TOKEN_EXCHANGE, "subject_token": token,
            "subject_token_type": TOKEN_TYPE_JWT, "audience": audience,
            "requested_token_type": TOKEN_TYPE_JWT}
    joined = scope_string(scope)
    if joined:
        form["scope"] = joined
    headers = {"Authorization": authorization} if authorization else {}
    return Call("POST", TOKEN_PATH, lambda status, body: parse_exchange(status, body, audience), form=form,
                headers=headers)


def propagation_call(target: str) -> Call:
    return Call("GET", PROPAGATION_PATH, parse_propagation, params={"target": target})


def scope_string(scope: Sequence[str] | str | None) -> str:
    if scope is None:
        return ""
    return scope if isinstance(scope, str) else " ".join(scope)


# --------------------------------------------------------------------------- answers


def _ok(status: int, body: Any, *, oauth: bool = False) -> Mapping[str, Any]:
    if status >= 400:
        raise (oauth_error_from_body if oauth else error_from_body)(status, body)
    if not 200 <= status < 300:  # a redirect or an informational answer is no answer, whatever its body
        raise UnexpectedResponse(f"expected HTTP 2xx, got HTTP {status}")
    if not isinstance(body, Mapping):
        raise UnexpectedResponse(f"expected a JSON object, got HTTP {status}")
    return body


def parse_check(status: int, body: Any) -> CheckResult:
    doc = _ok(status, body)
    allow = doc.get("allow")
    if not isinstance(allow, bool):
        raise UnexpectedResponse("check answer has no boolean 'allow'")
    if allow and not (isinstance(doc.get("decision_id"), str) and doc["decision_id"]):
        # every sidecar decision has an id (the audit trail's key); an allow without one is not the sidecar's
        raise UnexpectedResponse("check answer allows without a decision_id")
    reasons = _reasons(doc.get("reasons"))
    if reasons is None:
        raise UnexpectedResponse("check answer has 'reasons' that are not a list")
    seq = doc.get("relations_seq")
    return CheckResult(allow, reasons, doc.get("decision_id"),
                       doc.get("bundle_revision"), seq if isinstance(seq, int) else None,
                       bool(doc.get("high_risk", False)))


def _reasons(value: Any) -> tuple[str, ...] | None:
    """``reasons`` as strings; None when it is neither absent/null nor a list (a TypeError
    from iterating a number would escape every ``except TenantGuardError``)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        return None
    return tuple(str(r) for r in value)


def parse_filter(status: int, body: Any) -> ResourceFilter:
    """A filter the service can turn into SQL; anything malformed is refused (no filter, no list)."""
    doc = _ok(status, body)
    try:
        return ResourceFilter.from_wire(doc)
    except InvalidInput as exc:
        raise UnexpectedResponse(f"filter answer is malformed: {exc.message}") from None
    except OverflowError:  # "relations_seq": Infinity (Python's json reads it)
        raise UnexpectedResponse("filter answer is malformed: relations_seq is not a number") from None


def parse_evaluation(doc: Any) -> CheckResult:
    """One AuthZEN evaluation; anything but ``decision: true`` is a deny (fail closed)."""
    if not isinstance(doc, Mapping):
        return CheckResult(False, ("invalid_evaluation",))
    raw = doc.get("context")
    context: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    allow = doc.get("decision") is True
    reasons = _reasons(context.get("reasons"))
    if reasons is None:  # not the sidecar's shape: no allow can be read from it
        return CheckResult(False, ("invalid_evaluation",))
    if not allow and not reasons:
        error = context.get("error")
        reasons = ("invalid_request",) if error else ("denied",)
    return CheckResult(allow, reasons, context.get("decision_id"), context.get("bundle_revision"))


def parse_evaluations(status: int, body: Any) -> list[CheckResult]:
    doc = _ok(status, body)
    items = doc.get("evaluations")
    if items is None and "decision" in doc:  # no array sent: a single evaluation
        return [parse_evaluation(doc)]
    if not isinstance(items, list):
        raise UnexpectedResponse("evaluations answer has no 'evaluations' list")
    return [parse_evaluation(item) for item in items]


def parse_exchange(status: int, body: Any, audience: str) -> ExchangedToken:
    doc = _ok(status, body, oauth=True)
    token, expires_in = doc.get("access_token"), doc.get("expires_in")
    if not isinstance(token, str) or not token or isinstance(expires_in, bool) or not isinstance(expires_in, int):
        raise UnexpectedResponse("token response lacks access_token/expires_in")
    if str(doc.get("token_type", "")).lower() != "bearer":
        raise UnexpectedResponse("token response is not a Bearer token")
    scope = tuple(s for s in str(doc.get("scope") or "").split(" ") if s)
    return ExchangedToken(token, audience, time.time() + expires_in, scope,
                          str(doc.get("issued_token_type") or TOKEN_TYPE_JWT))


def parse_propagation(status: int, body: Any) -> PropagationMode:
    mode = _ok(status, body).get("mode")
    return mode if isinstance(mode, str) and mode in PROPAGATION_MODES else "deny"


# --------------------------------------------------------------------------- semantics


def stop_after(result: CheckResult, semantic: Semantic) -> bool:
    """AuthZEN 1.0 evaluations semantics: where a boxcar stops."""
    return (semantic == "deny_on_first_deny" and not result.allow) or (
        semantic == "permit_on_first_permit" and result.allow)


def merged(defaults: Mapping[str, Any], item: Mapping[str, Any]) -> dict[str, Any]:
    return {**defaults, **item}


def error_result(exc: TenantGuardError) -> CheckResult:
    return CheckResult(False, (exc.code,))


__all__ = [
    "CheckResult",
    "ExchangedToken",
    "Semantic",
    "question",
]
