"""Context on asynchronous paths: queue messages carry the token, consumers re-verify it.

A message is a request that arrives later, so it gets the same treatment as an HTTP
request: the producer attaches the context token, the consumer verifies it with its
own :class:`~tenantguard.identity.tokens.TokenVerifier`, checks that the body's tenant (when it
names one) is the token's, and runs the handler inside that context.

* NATS: the token travels in the ``Tg-Context-Token`` header (:func:`nats_headers`),
  never in the payload, so payload logging cannot leak it.
* Other brokers: :func:`wrap` / :func:`unwrap` put it beside the body in a plain dict.
* Long queues: :func:`job_headers` exchanges the request's token for a *job token*
  whose audience is the worker and whose scope is narrowed to what the job needs.
  RFC 8693 rules still apply: the job token never outlives the token it came from
  (5 minutes by default), so a job that may wait longer than that needs its tenant and
  subject re-established by other means (documented in docs/sdk.md).

:func:`consumer` wraps a nats-py subscription callback. What it does with a message it
refuses (the handler never runs, the message is never acked):

=====================================  =========================================
missing, malformed, forged or expired  JetStream ``term()``: a redelivery would
token; body tenant != token tenant     carry the same token, so retrying is
                                       pointless and the message is poison
verification cannot be done right now  JetStream ``nak()``: redelivered later
handler raised                         JetStream ``nak()``: redelivered later
=====================================  =========================================

Core NATS messages (no JetStream) cannot be nak'ed or terminated: they are dropped.
Every refusal is logged (with the token's fingerprint only) and counted in
``tenantguard_sdk_messages_rejected_total{reason}``.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from prometheus_client import Counter

from tenantguard.context import RequestContext, current_context, use_context
from tenantguard.errors import TenantGuardError, TokenError, TokenMissing
from tenantguard.identity.tokens import TokenVerifier, token_fingerprint

log = logging.getLogger("tenantguard.envelope")

HEADER = "Tg-Context-Token"
ENVELOPE_TOKEN = "tg_context_token"
ENVELOPE_BODY = "body"

MESSAGES_REJECTED = Counter(
    "tenantguard_sdk_messages_rejected", "Queue messages refused by tenantguard.envelope.consumer", ["reason"])


class TenantMismatchInMessage(TokenError):
    """The message body names a tenant other than its token's: treated as forged."""

    code = "message_tenant_mismatch"


# --------------------------------------------------------------------------- producing


def nats_headers(token: str | None = None, headers: Mapping[str, str] | None = None) -> dict[str, str]:
    """Headers for ``nc.publish``/``js.publish``: the given token, else the current context's."""
    return {**(headers or {}), HEADER: token if token is not None else current_context().token}


def wrap(body: Any, token: str | None = None) -> dict[str, Any]:
    """A plain-dict envelope for brokers without headers."""
    return {ENVELOPE_TOKEN: token if token is not None else current_context().token, ENVELOPE_BODY: body}


def unwrap(envelope: Mapping[str, Any], verifier: TokenVerifier, *,
           tenant_of: Callable[[Any], str | None] | None = None) -> tuple[RequestContext, Any]:
    """Verify a :func:`wrap` envelope: the context to run the body in, and the body."""
    if not isinstance(envelope, Mapping):
        raise TokenMissing("message is not a tenantguard envelope")
    body = envelope.get(ENVELOPE_BODY)
    ctx = verify_message(envelope.get(ENVELOPE_TOKEN), body, verifier, tenant_of or body_tenant)
    return ctx, body


async def job_headers(authorizer: Any, audience: str, scope: Sequence[str] | str,
                      headers: Mapping[str, str] | None = None) -> dict[str, str]:
    """Enqueue-time exchange: a token for the worker ``audience`` with only ``scope``."""
    result = authorizer.exchange(None, audience, scope)
    if hasattr(result, "__await__"):
        result = await result
    return nats_headers(result.access_token, headers)


# --------------------------------------------------------------------------- consuming


def body_tenant(body: Any) -> str | None:
    """Default: a JSON object's ``tenant_id`` member, when there is one."""
    return body.get("tenant_id") if isinstance(body, Mapping) else None


def verify_message(token: Any, body: Any, verifier: TokenVerifier,
                   tenant_of: Callable[[Any], str | None]) -> RequestContext:
    """The verified context of a message; raises a :class:`TokenError` otherwise."""
    if not isinstance(token, str) or not token:
        raise TokenMissing("message carries no context token")
    claims = verifier.verify(token)
    stated = tenant_of(body)
    if stated is not None and stated != claims.tenant_id:
        raise TenantMismatchInMessage("message body names another tenant than its token",
                                      token_tenant=claims.tenant_id)
    return RequestContext(claims=claims, token=token)


def _decode(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except (ValueError, UnicodeDecodeError):
        return None


def _is_jetstream(msg: Any) -> bool:
    reply = getattr(msg, "reply", "") or ""
    return reply.startswith("$JS.ACK.")


async def _refuse(msg: Any, reason: str, *, terminal: bool, token: Any) -> None:
    MESSAGES_REJECTED.labels(reason).inc()
    label = token_fingerprint(token) if isinstance(token, str) and token else "-"
    log.warning("refused message on %s: %s (token %s)", getattr(msg, "subject", "?"), reason, label)
    if _is_jetstream(msg):
        await (msg.term() if terminal else msg.nak())


Handler = Callable[..., Awaitable[Any]]


def consumer(verifier: TokenVerifier, *, tenant_of: Callable[[Any], str | None] = body_tenant,
             auto_ack: bool = True) -> Callable[[Handler], Handler]:
    """Decorate a nats-py ``cb(msg)``: verify, restore the context, then call it.

    The handler runs inside ``use_context(ctx)`` and receives ``(msg)``; with
    ``auto_ack`` a JetStream message is acked after the handler returns and nak'ed if
    it raises.
    """

    def decorate(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def on_message(msg: Any) -> None:
            token = (getattr(msg, "headers", None) or {}).get(HEADER)
            try:
                ctx = verify_message(token, _decode(msg.data), verifier, tenant_of)
            except TokenError as exc:
                await _refuse(msg, exc.code, terminal=True, token=token)
                return
            except TenantGuardError as exc:
                await _refuse(msg, exc.code, terminal=not exc.retryable, token=token)
                return
            try:
                with use_context(ctx):
                    await handler(msg)
            except Exception:
                log.exception("handler failed for message on %s (%r)", getattr(msg, "subject", "?"), ctx)
                await _refuse(msg, "handler_error", terminal=False, token=token)
                return
            if auto_ack and _is_jetstream(msg):
                await msg.ack()

        return on_message

    return decorate


__all__ = [
    "HEADER",
    "MESSAGES_REJECTED",
    "TenantMismatchInMessage",
    "body_tenant",
    "consumer",
    "job_headers",
    "nats_headers",
    "unwrap",
    "verify_message",
    "wrap",
]
