"""Relationships (membership tuples): model, safe NATS/KV encoding, local index, snapshots.

Library only: no NATS and no HTTP here. The plane writes :class:`ChangeBatch` events and
snapshots; a sidecar applies them to a :class:`RelationIndex` in sequence order and
hands ``relations_of`` (or a :class:`TenantRelations` bound to the decision's tenant) to
the policy.
"""

from tenantguard.relations.cells import (
    OUT_OF_SCOPE,
    CellRelations,
    CellsMixed,
    CellsView,
    OutOfScope,
    RelationScope,
    scope_of,
)
from tenantguard.relations.encoding import (
    decode_id,
    encode_id,
    object_subject,
    relationship_from_key,
    relationship_from_subject,
    relationship_key,
    relationship_subject,
    tenant_key_filter,
    tenant_subject,
)
from tenantguard.relations.errors import (
    ChangeBatchInvalid,
    ChangeBatchTooLarge,
    RelationshipInvalid,
    SequenceGap,
    SnapshotInvalid,
    SnapshotTooLarge,
)
from tenantguard.relations.index import MAX_DEPTH, IndexView, RelationIndex, TenantRelations
from tenantguard.relations.model import MAX_BATCH_CHANGES, ChangeBatch, RelationChange, Relationship
from tenantguard.relations.snapshot import (
    SnapshotHeader,
    index_from_snapshot_bytes,
    read_header,
    read_snapshot,
    snapshot_bytes,
    snapshot_digest,
    write_snapshot,
)

__all__ = [
    "MAX_BATCH_CHANGES",
    "MAX_DEPTH",
    "OUT_OF_SCOPE",
    "CellRelations",
    "CellsMixed",
    "CellsView",
    "ChangeBatch",
    "ChangeBatchInvalid",
    "ChangeBatchTooLarge",
    "IndexView",
    "OutOfScope",
    "RelationChange",
    "RelationIndex",
    "RelationScope",
    "Relationship",
    "RelationshipInvalid",
    "SequenceGap",
    "SnapshotHeader",
    "SnapshotInvalid",
    "SnapshotTooLarge",
    "TenantRelations",
    "decode_id",
    "encode_id",
    "index_from_snapshot_bytes",
    "object_subject",
    "read_header",
    "read_snapshot",
    "relationship_from_key",
    "relationship_from_subject",
    "relationship_key",
    "relationship_subject",
    "scope_of",
    "snapshot_bytes",
    "snapshot_digest",
    "tenant_key_filter",
    "tenant_subject",
    "write_snapshot",
]
