"""What the decision doors share: parsing bytes into a model, and the reply they return.

A door is a plain function of ``(sidecar, scope, body bytes)`` returning a
:class:`Reply`, so it runs the same under FastAPI (the documented route) and under the
framework-free front that answers it in production (``hot.py``). Bodies must be
announced as JSON (else 415) and are parsed by ``tenantguard.util.jsonlimits`` (nesting
bound, I-JSON: no duplicate keys, NaN or out-of-range numbers; else 400) before the
pydantic model checks their shape; answers are pre-serialised JSON. Both measured
cheaper than FastAPI's body/response machinery.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel, ValidationError
from starlette.types import Scope
from tenantguard.errors import InvalidInput, TokenMissing, UnsupportedMediaType
from tenantguard.server.asgi import (
    DuplicateHeader,
    Reply,
    decoded_body,
    header,
    is_loopback,
    schema_problems,
    single_header,
)
from tenantguard.util.jsonlimits import is_json_media_type, loads_object

if TYPE_CHECKING:
    from tenantguard.identity.tokens import Claims

    from ..runtime import Sidecar

M = TypeVar("M", bound=BaseModel)
__all__ = ["AuthzenBadMediaType", "Door", "DuplicateHeader", "Reply", "as_route", "authorization", "json_reply",
           "parse_authzen", "parse_json",
           "request_body_doc", "require_json", "require_local_or_credential"]


Door = Callable[["Sidecar", Scope, bytes], Awaitable[Reply]]
"""A decision door: the sidecar, the request's ASGI scope and its (bounded) body."""


async def as_route(door: Door, request: Request) -> Response:
    """Run ``door`` for a FastAPI route: the documented route and the front share one body."""
    reply = await door(request.app.state.sidecar, request.scope, await request.body())
    return reply.response()


def json_reply(body: dict[str, Any], *, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None) -> Reply:
    return Reply(json.dumps(body, separators=(",", ":")).encode(), status, headers or [])


def parse_json(scope: Scope, body: bytes, model: type[M], *, limit: int) -> M:
    """``body`` as ``model``: :class:`UnsupportedMediaType` (415) unless the request says
    it is JSON, :class:`InvalidInput` (400) for text that is not bounded I-JSON or does
    not match the model. A gzip ``Content-Encoding`` is undone first, to at most ``limit``
    bytes (``tenantguard.server.asgi.decoded_body``); another coding is 415.

    A request without ``Content-Type`` is refused too: AuthZEN and OPA clients (and
    opa-python-client, requests' and aiohttp's ``json=``) always send
    ``application/json``, while a browser may send a body without one, or as
    ``text/plain``, without a CORS preflight, to a sidecar on its own loopback.
    """
    require_json(scope)
    document = loads_object(decoded_body(scope, body, limit))
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        raise InvalidInput("request body does not match the schema", problems=schema_problems(exc.errors())) from None


class AuthzenBadMediaType(InvalidInput):
    """A body not announced as JSON (or in a coding not taken), on an AuthZEN door: 400, since
    AuthZEN 1.0's error table ("Error Responses") has 400, 401, 403 and 500 and no 415, and its
    certification scenario expects 400 (c-2-4-3)."""

    code = "unsupported_media_type"


def parse_authzen(scope: Scope, body: bytes, model: type[M], *, limit: int) -> M:
    """:func:`parse_json` for the AuthZEN doors: the same checks, a media-type refusal as 400."""
    try:
        return parse_json(scope, body, model, limit=limit)
    except UnsupportedMediaType as exc:
        raise AuthzenBadMediaType(exc.message, **exc.detail) from None


def require_json(scope: Scope) -> None:
    """415 unless ``Content-Type`` is ``application/json`` or ``application/*+json``, with no
    ``charset`` but UTF-8: the body is read as UTF-8, so a PEP or proxy honouring another
    charset would read another question from the same bytes (RFC 8259 8.1)."""
    content_type = header(scope, b"content-type")
    if not is_json_media_type(content_type):
        stated = f"not {content_type[:100]}" if content_type else "with a Content-Type header"
        raise UnsupportedMediaType(f"send the body as application/json ({stated})")
    charset = _charset(content_type or "")
    if charset is not None and charset not in UTF8_NAMES:
        raise UnsupportedMediaType(f"send the body as UTF-8 JSON (not charset={charset[:40]})")


UTF8_NAMES = frozenset({"utf-8", "utf8"})


def _charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a media type, lower case and unquoted; None when absent."""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def authorization(scope: Scope) -> str | None:
    """The request's one ``Authorization`` value (:func:`tenantguard.server.asgi.single_header`). The Envoy
    doors refuse the same (``envoy_authz.EnvoyRequest.header``)."""
    return single_header(scope, b"authorization")


def require_local_or_credential(scope: Scope, claims: Claims | None, pep: str | None) -> None:
    """401 ``token_missing`` for a caller off loopback that presents neither a context token nor
    a PEP key (``pep``: the name of the key it presented).

    Why: without a token the sidecar believes the subject, its roles and (without
    ``--tenant`` or a PEP key) the tenant the caller states, because the service and its
    sidecar are one trust domain. That domain is the pod: with ``--allow-remote`` any host
    could otherwise name any tenant, subject and roles and be answered (and listed) for
    them. ``--tenant`` binds the tenant but authenticates nobody. The TCP peer is judged
    (a unix socket counts as local), never ``X-Forwarded-For``.
    """
    if claims is not None or pep is not None:
        return
    client = scope.get("client")
    if not is_loopback(client[0] if client else None):
        raise TokenMissing("callers off loopback must present a context token (or a PEP key on the AuthZEN "
                           "doors): only the local service may state who asks")


def request_body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` that documents a body the endpoint parses itself."""
    return {"requestBody": {"required": True,
                            "content": {"application/json": {"schema": model.model_json_schema()}}}}
