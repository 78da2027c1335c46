"""Typed errors of search and lookup, each with its stable code and HTTP/gRPC mapping."""

from __future__ import annotations

from typing import Any

from tenantguard.errors import GRPC_FAILED_PRECONDITION, InvalidInput, TenantGuardError


class SearchLimitExceeded(InvalidInput):
    """The question needs more work than the limits allow (page size, graph fan-out,
    decisions for a filter, candidate actions). ``detail.limit`` names the limit; narrow
    the question (a smaller page, a more specific type) rather than retry it."""

    code = "search_limit_exceeded"
    http_status = 422

    def __init__(self, message: str, *, limit: str, maximum: int | float, **detail: Any) -> None:
        super().__init__(message, limit=limit, maximum=maximum, **detail)


class PageTokenInvalid(InvalidInput):
    """A page token that this process did not issue, that was altered, or that belongs to
    another question or caller; start again without a token."""

    code = "page_token_invalid"


class PageTokenExpired(TenantGuardError):
    """The state a page token pinned is no longer held (it expired, was evicted, or the
    sidecar restarted). Pages of one search never mix states, so the search must start
    again from the first page; ``detail`` says what was pinned and what is current."""

    code = "page_token_expired"
    http_status = 409
    grpc_status = GRPC_FAILED_PRECONDITION


class RelationsStale(TenantGuardError):
    """``at_least`` asked for a relations sequence this sidecar has not applied in time."""

    code = "relations_stale"
    http_status = 409
    grpc_status = GRPC_FAILED_PRECONDITION
    retryable = True


class SearchNotSupported(TenantGuardError):
    """The active bundle cannot answer this kind of search (e.g. no ``search_actions`` rule)."""

    code = "search_not_supported"
    http_status = 422
    grpc_status = GRPC_FAILED_PRECONDITION
