"""``EmbeddedAuthorizer``: the sidecar's decision core, in process, without a socket.

Same core (``tenantguard.decision.core.DecisionCore``), same signed-bundle verification,
same token verification as a sidecar, so an embedded service and a sidecar answer
alike; only the network hop is gone. What a service gives up: the sidecar's live feed
(relations, revocations, trust and bundle updates arrive over NATS there). Here the
bundle, trust and relations are what you hand in, and :meth:`activate_bundle` /
``relations`` swaps are yours to drive.

Token exchange: an exchanged token must be signed by a key the *target* trusts. A
sidecar has such a key (``sidecar:<service>``, registered with the plane). An embedded
authorizer can exchange only when given one (``exchange_key``), and its public key
must then be in the targets' trust sets; without it :meth:`exchange` raises
:class:`~tenantguard.client.errors.NotSupported`, and outbound propagation that
needs an exchange should use the sidecar client.

Regorus engines are per thread (see ``tenantguard.policy.engine``): the first decision on a
new thread builds that thread's engine (~1 ms for the example bundle).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tenantguard.bundle import TrustSetVerifier, verify_bundle
from tenantguard.client import wire
from tenantguard.client.base import log_denied, merge_defaults
from tenantguard.client.errors import NotSupported
from tenantguard.client.wire import CheckResult, ExchangedToken, Semantic
from tenantguard.decision.core import (
    DEFAULT_DECISION_ENTRYPOINT,
    RELATED_EXTENSION,
    DecisionCore,
    DecisionRequest,
    PolicyRevision,
    RelationSource,
)
from tenantguard.decision.permissions import schema_engine
from tenantguard.decision.verdicts import DEFAULT_MEMO_SIZE, VerdictMemo
from tenantguard.errors import InvalidInput, TenantGuardError
from tenantguard.exchange import (
    TOKEN_TYPE_JWT,
    ExchangeRequest,
    PropagationMode,
    Subject,
    TokenExchanger,
    parse_scope,
    propagation_mode,
)
from tenantguard.identity.keys import PublicKey, SigningKey, TrustSet, load_public_key_file
from tenantguard.identity.revocations import RevocationList
from tenantguard.identity.tokens import Claims, TokenVerifier, VerifyOptions
from tenantguard.policy.engine import RegorusEngine
from tenantguard.relations import RelationIndex

BUNDLE_ISSUER = "plane"


def load_policy(bundle: bytes | str | os.PathLike[str], bundle_trust: TrustSet, *,
                decision: str | None = None) -> PolicyRevision:
    """Verify a signed bundle against ``bundle_trust`` and prepare it, as a sidecar does."""
    verified = verify_bundle(bundle, TrustSetVerifier(bundle_trust, issuer=BUNDLE_ISSUER))
    meta = verified.manifest.metadata.get("decision")
    entrypoint = decision or (meta if isinstance(meta, str) and meta else DEFAULT_DECISION_ENTRYPOINT)
    policy = RegorusEngine().prepare(verified.modules, verified.data, extensions=RELATED_EXTENSION,
                                     entrypoints=(entrypoint,))
    return PolicyRevision(revision=verified.revision, policy=policy, entrypoint=entrypoint,
        schema=schema_engine(verified.schema))


def _bundle_trust(key: PublicKey | TrustSet | str | os.PathLike[str]) -> TrustSet:
    if isinstance(key, TrustSet):
        return key
    public = load_public_key_file(key) if isinstance(key, str | os.PathLike) else key
    trust = TrustSet()
    trust.add_public_key(public, BUNDLE_ISSUER)
    return trust


class EmbeddedAuthorizer:
    """Decides in process with the same signature as the sidecar clients (sync calls).

    Use :meth:`aio` for an awaitable facade (decisions take microseconds, so it does
    not hop to a thread).
    """

    in_process = True  # callers need not move a check off the event loop

    def __init__(self, service: str, *, bundle: bytes | str | os.PathLike[str],
                 bundle_key: PublicKey | TrustSet | str | os.PathLike[str], verifier: TokenVerifier,
                 relations: RelationSource | None = None, revocations: RevocationList | None = None,
                 exchange_key: SigningKey | None = None, decision: str | None = None,
                 memo_size: int = DEFAULT_MEMO_SIZE) -> None:
        if verifier.options.audience != service:
            raise InvalidInput(f"the verifier's audience {verifier.options.audience!r} is not {service!r}")
        self.service = service
        self.verifier = verifier
        self.bundle_trust = _bundle_trust(bundle_key)
        self._decision = decision
        self.core = DecisionCore(service, relations if relations is not None else RelationIndex(),
                                 revocations=revocations if revocations is not None else verifier.revocations,
                                 memo=VerdictMemo(memo_size) if memo_size else None)
        self.activate_bundle(bundle)
        self._exchanger = None if exchange_key is None else TokenExchanger(
            service, exchange_key, verifier, lambda: self.core.active)

    @classmethod
    def from_files(cls, service: str, *, bundle: str | os.PathLike[str], bundle_key: str | os.PathLike[str],
                   trust: str | os.PathLike[str], relations: RelationSource | None = None,
                   **kwargs: Any) -> EmbeddedAuthorizer:
        """Bundle file, bundle public key (PEM) and token trust file (JWKS with ``iss``)."""
        verifier = TokenVerifier(TrustSet.load(trust), VerifyOptions(audience=service))
        return cls(service, bundle=Path(bundle), bundle_key=bundle_key, verifier=verifier,
                   relations=relations, **kwargs)

    def activate_bundle(self, bundle: bytes | str | os.PathLike[str]) -> PolicyRevision:
        """Verify, prepare, then swap: a rejected bundle raises and the active one stays."""
        revision = load_policy(bundle, self.bundle_trust, decision=self._decision)
        self.core.activate(revision)
        return revision

    @property
    def bundle_revision(self) -> str | None:
        return self.core.active.revision if self.core.active else None

    # -- the one interface --------------------------------------------------------------

    def check(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str, *,
              subject: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
              token: str | None = None) -> CheckResult:
        """One decision; raises token errors as a sidecar's 401 would, never for a deny."""
        body = wire.question(action, resource, subject=subject, context=context)
        return self._decide(body, self._claims(token, subject))

    def is_allowed(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str,
                   **kwargs: Any) -> bool:
        try:
            return self.check(action, resource, **kwargs).allow
        except TenantGuardError as exc:
            log_denied(exc, "is_allowed")
            return False

    def check_many(self, evaluations: Sequence[Mapping[str, Any]], *,
                   action: Mapping[str, Any] | str | None = None,
                   resource: Mapping[str, Any] | str | None = None,
                   subject: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                   token: str | None = None, semantic: Semantic = "execute_all") -> list[CheckResult]:
        """AuthZEN evaluations semantics, evaluated lazily (a stop skips the rest)."""
        if semantic not in wire.SEMANTICS:
            raise InvalidInput(f"evaluations_semantic must be one of {sorted(wire.SEMANTICS)}")
        defaults = merge_defaults(subject, action, resource, context)
        claims = self._claims(token, defaults.get("subject"))
        results: list[CheckResult] = []
        for item in wire.evaluation_items(evaluations):
            try:
                result = self._decide(wire.merged(defaults, item), claims)
            except InvalidInput as exc:  # one malformed entry is that entry's deny, as in the sidecar
                result = wire.error_result(exc)
            results.append(result)
            if wire.stop_after(result, semantic):
                break
        return results

    def exchange(self, token: str | None, audience: str, scope: Sequence[str] | str | None = None) -> ExchangedToken:
        """RFC 8693 exchange signed with ``exchange_key``; NotSupported without one."""
        if self._exchanger is None:
            raise NotSupported("embedded mode exchanges tokens only with an exchange_key; use the sidecar client")
        claims = self._claims(token, None)
        assert claims is not None
        request = ExchangeRequest(subject_token="", subject_token_type=TOKEN_TYPE_JWT, audience=audience,
                                  scope=parse_scope(wire.scope_string(scope) or None))
        result = self._exchanger.exchange_subject(Subject.from_claims(claims), request)
        return ExchangedToken(result.access_token, audience, time.time() + result.expires_in, result.scope,
                              result.issued_token_type)

    def propagation_mode(self, target: str) -> PropagationMode:
        return propagation_mode(self.core.active, self.service, target)

    def aio(self) -> AsyncEmbeddedAuthorizer:
        return AsyncEmbeddedAuthorizer(self)

    # -- internals ----------------------------------------------------------------------

    def _claims(self, token: str | None, subject: Mapping[str, Any] | None) -> Claims | None:
        """Verified claims (a verified-token cache hit costs a SHA-256; revocations are rechecked)."""
        resolved = wire.resolve_token(token, subject)
        return None if resolved is None else self.verifier.verify(resolved)

    def _decide(self, body: Mapping[str, Any], claims: Claims | None) -> CheckResult:
        return CheckResult.from_decision(self.core.decide(DecisionRequest.from_wire(body, claims)))


class AsyncEmbeddedAuthorizer:
    """Awaitable facade over :class:`EmbeddedAuthorizer` (same methods, same answers)."""

    def __init__(self, inner: EmbeddedAuthorizer) -> None:
        self.inner = inner

    async def check(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str,
                    **kwargs: Any) -> CheckResult:
        return self.inner.check(action, resource, **kwargs)

    async def is_allowed(self, action: Mapping[str, Any] | str, resource: Mapping[str, Any] | str,
                         **kwargs: Any) -> bool:
        return self.inner.is_allowed(action, resource, **kwargs)

    async def check_many(self, evaluations: Sequence[Mapping[str, Any]], **kwargs: Any) -> list[CheckResult]:
        return self.inner.check_many(evaluations, **kwargs)

    async def exchange(self, token: str | None, audience: str,
                       scope: Sequence[str] | str | None = None) -> ExchangedToken:
        return self.inner.exchange(token, audience, scope)

    async def propagation_mode(self, target: str) -> PropagationMode:
        return self.inner.propagation_mode(target)

    async def aclose(self) -> None:
        return None


__all__ = ["AsyncEmbeddedAuthorizer", "EmbeddedAuthorizer", "load_policy"]
