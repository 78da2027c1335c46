"""Decision records as data: the wire format, what a sidecar keeps (sampling, masking), OPA export.

A record (format 2, :meth:`tenantguard.decision.core.DecisionRecord.to_wire`) holds what is
needed to replay its decision: the policy input without the token (``input.token`` is the
token's ``jti``, ``iss``, ``kid`` and ``scope``), the rule (``path``), the bundle revision,
the relations sequence, the result and reasons, latency, door, service and sidecar.

* :mod:`.wire`: batches on NATS and the plane's validation of records (untrusted input);
* :mod:`.policy`: the sidecar's sampling and masking (OPA ``decision_logs`` style);
* :mod:`.opa`: the same record as an OPA decision-log event.
"""

from tenantguard.decisionlog.opa import to_opa_event
from tenantguard.decisionlog.policy import LogPolicy, MaskPointer
from tenantguard.decisionlog.wire import (
           MAX_MESSAGE_BYTES,
           MAX_RECORD_BYTES,
           RecordRefused,
           encode_batches,
           validate_record,
)

__all__ = ["MAX_MESSAGE_BYTES", "MAX_RECORD_BYTES", "LogPolicy", "MaskPointer", "RecordRefused", "encode_batches",
           "to_opa_event", "validate_record"]
