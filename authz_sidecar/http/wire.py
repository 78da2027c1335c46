"""Fast request parsing and JSON responses for the decision doors.

The doors take the raw ``Request`` and validate with pydantic's Rust JSON parser
(``model_validate_json``) instead of FastAPI's body/header dependency machinery, and
answer with pre-serialised JSON: measured here, that is ~1.7x more requests/s on the
same stack. The models still document the API through ``openapi_extra``.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel, ValidationError
from tenantguard.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)
MAX_PROBLEMS = 20


async def parse_body(request: Request, model: type[M]) -> M:
    """The body as ``model``, or :class:`InvalidInput` (400) listing what is wrong."""
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as exc:
        problems = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
                    for e in exc.errors()[:MAX_PROBLEMS]]
        raise InvalidInput("request body does not match the schema", problems=problems) from None


def json_response(body: dict[str, Any], *, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body, separators=(",", ":")), status_code=status, headers=headers,
                    media_type="application/json")


def request_body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` that documents a body the endpoint parses itself."""
    return {"requestBody": {"required": True,
                            "content": {"application/json": {"schema": model.model_json_schema()}}}}
