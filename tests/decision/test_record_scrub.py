"""A decision record never carries a token: not in a value, not in a member's name, not in the
record's own fields (resource id, request path, reasons...), at the sidecar and again at the plane."""

from __future__ import annotations

import json
import time
from typing import Any

from tenantguard.decisionlog.policy import REDACTED, LogPolicy
from tenantguard.decisionlog.wire import RecordRefused, validate_record
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import mint

TOKEN = mint(SigningKey.generate(), issuer="edge", sub="alice", tenant_id="acme", audience="billing", now=time.time())
SIGNATURE = TOKEN.rsplit(".", 1)[1]


def record(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "v": 2, "decision_id": "d" * 32, "time": time.time(), "service": "billing", "sidecar": "b-1",
        "door": "envoy", "tenant": "acme", "subject": "user:alice", "action": "invoices:read",
        "resource": "invoice:inv-1", "allow": False, "reasons": ["not_project_member"], "bundle_revision": "r1",
        "relations_seq": 3, "path": "/invoices/inv-1", "latency_us": 12, "actor_chain": [], "act_as": False,
        "high_risk": False, "token": {"jti": "j1", "iss": "edge", "kid": "k1"},
        "input": {"context": {"note": "x"}}, "erased": [],
    }
    return {**base, **fields}


def leaked(value: Any) -> bool:
    text = json.dumps(value)
    return TOKEN in text or SIGNATURE in text


SMUGGLED = {
    "a member named by a token": {"input": {"context": {TOKEN: "x", "kept": 1}}},
    "a token nested in lists": {"input": {"context": {"a": [{"b": [f"Bearer {TOKEN}"]}]}}},
    "a resource id": {"resource": f"invoice:{TOKEN}"},
    "a request path with a query": {"path": f"/invoices/inv-1?access_token={TOKEN}"},
    "a subject": {"subject": f"user:{TOKEN}"},
    "an action": {"action": TOKEN},
    "a reason": {"reasons": ["ok", TOKEN]},
    "an actor chain": {"actor_chain": [f"spiffe://x/{TOKEN}"]},
}


def test_the_sidecar_redacts_every_place_a_caller_can_put_a_token() -> None:
    policy = LogPolicy.of()
    for what, fields in SMUGGLED.items():
        assert leaked(record(**fields)), what  # the case really carries it
        kept = policy.apply(record(**fields))
        assert not leaked(kept), what
        assert kept["erased"], what  # and says something was taken out
    kept = policy.apply(record(**SMUGGLED["a member named by a token"]))
    assert kept["input"]["context"] == {"kept": 1} and kept["erased"] == [f"/input/context/{REDACTED}"]
    kept = policy.apply(record(**SMUGGLED["a reason"]))
    assert kept["reasons"] == ["ok", REDACTED] and kept["erased"] == ["/reasons/1"]


def test_the_plane_redacts_them_again_whatever_a_sidecar_sent() -> None:
    forged = {**SMUGGLED, "an erased path": {"erased": [f"/input/{TOKEN}"]},
              "a token id": {"token": {"jti": TOKEN, "iss": "edge", "kid": "k1"}},
              "a sidecar name": {"sidecar": TOKEN}}
    for what, fields in forged.items():
        assert leaked(record(**fields)), what
        try:
            kept = validate_record(record(**fields), service="billing", tenant="acme")
        except RecordRefused:  # too long for its member: not kept at all
            assert len(json.dumps(fields)) > 256, what
            continue
        assert not leaked(kept), what
    clean = validate_record(record(), service="billing", tenant="acme")
    assert clean["resource"] == "invoice:inv-1" and clean["erased"] == []
