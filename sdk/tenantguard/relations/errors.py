"""Typed errors of the relations package (subclasses of the shared hierarchy).

Kept here rather than in ``tenantguard.errors`` so the package owns its contract; each
class still carries its stable ``code`` and transport mapping like every other error.
"""

from __future__ import annotations

from typing import Any

from tenantguard.errors import GRPC_FAILED_PRECONDITION, InvalidInput, PayloadTooLarge, TenantGuardError


class RelationshipInvalid(InvalidInput):
    """A tuple, or one of its parts, breaks the grammar or a length limit."""

    code = "relationship_invalid"


class ChangeBatchInvalid(InvalidInput):
    """A change event or batch is malformed (bad op, bad sequence, too many changes)."""

    code = "change_batch_invalid"


class ChangeBatchTooLarge(PayloadTooLarge):
    """A batch carries more changes than one atomic unit may hold."""

    code = "change_batch_too_large"


class SequenceGap(TenantGuardError):
    """A batch arrived ahead of the next expected sequence; the caller must resynchronise.

    Retrying the same batch cannot help (``retryable`` is False): the missing batches, or
    a snapshot, have to be fetched first.
    """

    code = "sequence_gap"
    http_status = 409
    grpc_status = GRPC_FAILED_PRECONDITION

    def __init__(self, *, expected: int, got: int, **detail: Any) -> None:
        super().__init__(
            f"expected batch {expected}, got {got}; resynchronise from a snapshot or replay",
            expected=expected,
            got=got,
            **detail,
        )
        self.expected = expected
        self.got = got


class SnapshotInvalid(TenantGuardError):
    """A relations snapshot is corrupted, truncated or not a snapshot; nothing is loaded."""

    code = "relations_snapshot_invalid"
    http_status = 422
    grpc_status = GRPC_FAILED_PRECONDITION


class SnapshotTooLarge(SnapshotInvalid):
    """A snapshot (compressed or expanded) exceeds the configured bound."""

    code = "relations_snapshot_too_large"
    http_status = 413
