"""Typed errors of the schema engine: each carries a machine-readable ``rule``.

A query the engine cannot answer correctly within its bounds fails with one of these,
never with a partial or guessed answer (an error is never an allow). HTTP/gRPC mapping
sits on the class, like every ``TenantGuardError``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from tenantguard.errors import InvalidInput, TenantGuardError


class EngineError(TenantGuardError):
    """Base of the engine's errors; ``rule`` names what stopped the query."""

    code: ClassVar[str] = "schema_query_failed"
    http_status: ClassVar[int] = 422
    rule: str = "engine_error"

    def __init__(self, message: str, *, rule: str | None = None, **detail: Any) -> None:
        if rule is not None:
            self.rule = rule
        super().__init__(message, rule=self.rule, **detail)


class ResolutionTooComplex(EngineError):
    """The rewrite graph is deeper than the dialect's engine allows (OpenFGA 25, SpiceDB 50)."""

    code = "resolution_too_complex"
    rule = "max_depth"


class QueryTooBroad(EngineError):
    """The query read more tuples / visited more nodes than the per-query step budget."""

    code = "query_too_broad"
    rule = "step_budget"


class UnknownRelation(EngineError, InvalidInput):
    """The query names a type or relation/permission the schema does not define."""

    code = "unknown_relation"
    http_status = 400
    rule = "undefined_relation"


class InvalidQuery(EngineError, InvalidInput):
    """A malformed object, subject or cursor."""

    code = "invalid_query"
    http_status = 400
    rule = "malformed"


class ConditionError(EngineError):
    """A condition/caveat that cannot be evaluated: the expression errored at run time,
    a parameter has the wrong type, or the expression exceeds the cost bound. Both OpenFGA
    (check returns an error) and SpiceDB (the dispatch fails) answer this with an error,
    not with a denial, so the engine raises; callers fail closed."""

    code = "condition_failed"
    rule = "condition_eval"
