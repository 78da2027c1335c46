"""Trust, revocations, admin authentication, audit, decision sink, and every stream verifying."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tenantguard.bundle import build_bundle
from tenantguard.feed import topology as topo
from tenantguard.feed.events import REVOCATION, TRUST_UPDATE, verify_event
from tenantguard.identity.keys import SigningKey, TrustSet

from tests.harness.nats_raw import next_core_message, read_stream
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import ADMIN_TOKEN, JOIN_SECRET, World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]

ADMIN_CALLS = [
    ("POST", "/v1/relations", {"changes": [{"op": "write", "rel": {
        "tenant": "acme", "object": "project:p1", "relation": "member", "subject": "user:eve"}}]}),
    ("POST", "/v1/bundles", None),
    ("POST", "/v1/trust/issuers", {"jwk": {}}),
    ("DELETE", "/v1/trust/keys/some-kid", None),
    ("POST", "/v1/revocations", {"kind": "tenant", "tenant": "acme"}),
    ("GET", "/v1/audit", None),
    ("GET", "/v1/decisions", None),
    ("GET", "/v1/relations/digest", None),
]


def test_sidecar_key_registration_needs_the_right_join_secret(world: World, plane: PlaneProcess) -> None:
    sidecar = SigningKey.generate()
    body = {"jwk": sidecar.public_jwk()}
    path = "/v1/trust/sidecars/billing/keys"
    assert plane.client(None).post(path, json=body).status_code == 401
    assert plane.client("wrong-secret-0123456789").post(path, json=body).status_code == 403
    assert plane.client(ADMIN_TOKEN).post(path, json=body).status_code == 403  # admin token is not a join secret
    assert plane.client(JOIN_SECRET).post("/v1/trust/sidecars/orders/keys", json=body).status_code == 403

    ok = plane.client(JOIN_SECRET).post(path, json=body)
    assert ok.status_code == 200, ok.text
    assert ok.json() == {"kid": sidecar.kid, "issuer": "sidecar:billing", "trust_seq": 1, "changed": True}
    again = plane.client(JOIN_SECRET).post(path, json=body).json()
    assert again["changed"] is False and again["trust_seq"] == 1

    jwks = plane.client(None).get("/.well-known/jwks.json").json()
    assert [(k["kid"], k["iss"]) for k in jwks["keys"]] == [(sidecar.kid, "sidecar:billing")]
    trusted = TrustSet.from_jwks(jwks)
    assert trusted.get(sidecar.kid).issuer == topo.sidecar_issuer("billing")  # type: ignore[union-attr]

    private = dict(body["jwk"], d="AAAA")
    refused = plane.client(JOIN_SECRET).post(path, json={"jwk": private})
    assert refused.status_code == 400 and refused.json()["error"] == "key_invalid"


def test_issuer_keys_rotate_through_the_trust_set(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    old, new = SigningKey.generate(), SigningKey.generate()
    later = int(time.time()) + 3600
    assert http.post("/v1/trust/issuers", json={"jwk": {**old.public_jwk(), "iss": "edge"}}).status_code == 200
    added = http.post("/v1/trust/issuers", json={"jwk": {**new.public_jwk(), "iss": "edge"}, "not_after": later})
    assert added.json()["trust_seq"] == 2
    reserved = http.post("/v1/trust/issuers", json={"jwk": {**new.public_jwk(), "iss": "plane"}})
    assert reserved.status_code == 400
    assert http.delete(f"/v1/trust/keys/{old.kid}").json()["trust_seq"] == 3
    assert http.delete(f"/v1/trust/keys/{old.kid}").status_code == 404
    keys = plane.client(None).get("/.well-known/jwks.json").json()["keys"]
    assert [(k["kid"], k["iss"], k.get("exp")) for k in keys] == [(new.kid, "edge", later)]

    [last] = read_stream(world.nats.url, topo.STREAM_TRUST)  # last value only
    event = verify_event(last.data, world.event_trust(), expected_type=TRUST_UPDATE)
    assert event.seq == 3 and event.payload["jwks"]["keys"] == keys


def test_revocations_are_published_in_sequence(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    requests = [
        {"kind": "jti", "jti": "token-1", "exp": int(time.time()) + 300},
        {"kind": "subject", "tenant": "acme", "sub": "user:alice"},
        {"kind": "kid", "kid": "leaked-kid"},
        {"kind": "tenant", "tenant": "globex"},
        {"kind": "lift_tenant", "tenant": "globex"},
    ]
    seqs = [http.post("/v1/revocations", json=r).json()["seq"] for r in requests]
    assert seqs == [1, 2, 3, 4, 5]
    assert http.post("/v1/revocations", json={"kind": "tenant", "tenant": "Not A Tenant"}).status_code == 400
    assert http.post("/v1/revocations", json={"kind": "jti", "jti": "x"}).status_code == 400  # exp missing

    listed = http.get("/v1/revocations").json()
    assert [r["kind"] for r in listed["revocations"]] == [r["kind"] for r in requests] and listed["seq"] == 5
    events = [verify_event(m.data, world.event_trust(), expected_type=REVOCATION)
              for m in read_stream(world.nats.url, topo.STREAM_REVOCATIONS)]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert isinstance(events[1].payload["issued_before"], int)  # the cut-off travels with the event


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
def test_admin_endpoints_refuse_missing_and_wrong_tokens(plane: PlaneProcess, method: str, path: str,
                                                         body: object) -> None:
    for token, status in ((None, 401), ("wrong-token-0123456789abcdef", 403), (JOIN_SECRET, 403)):
        response = plane.client(token).request(method, path, json=body)
        assert response.status_code == status, (token, response.text)
        assert response.json()["error"] in ("unauthenticated", "forbidden")
    assert plane.client(None).get("/v1/relations", params={"tenant": "acme"}).status_code == 401


def test_audit_records_admin_changes_without_secrets(world: World, plane: PlaneProcess) -> None:
    http = plane.client()
    http.post("/v1/relations", json=ADMIN_CALLS[0][2]).raise_for_status()
    http.post("/v1/revocations", json={"kind": "tenant", "tenant": "acme"}).raise_for_status()
    plane.client(JOIN_SECRET).post("/v1/trust/sidecars/billing/keys",
                                   json={"jwk": SigningKey.generate().public_jwk()}).raise_for_status()
    entries = http.get("/v1/audit").json()["entries"]
    assert [e["action"] for e in entries] == ["trust.register_sidecar_key", "revocations.add", "relations.write"]
    assert [e["actor"] for e in entries] == ["sidecar:billing", "admin", "admin"]
    code, stderr = plane.stop()
    assert code == 0
    text = json.dumps(entries) + stderr
    assert '"action": "relations.write"' in stderr  # the structured log line
    for secret in (ADMIN_TOKEN, JOIN_SECRET):
        assert secret not in text


def test_every_message_on_the_plane_streams_verifies(world: World, tmp_path: Path) -> None:
    plane = world.start("--snapshot-every", "1")
    http = plane.client()
    http.post("/v1/relations", json=ADMIN_CALLS[0][2]).raise_for_status()
    http.post("/v1/revocations", json={"kind": "kid", "kid": "k1"}).raise_for_status()
    http.post("/v1/trust/issuers", json={"jwk": {**SigningKey.generate().public_jwk(), "iss": "edge"}})
    plane.client(JOIN_SECRET).post("/v1/trust/sidecars/billing/keys",
                                   json={"jwk": SigningKey.generate().public_jwk()}).raise_for_status()
    source = tmp_path / "bundle"
    source.mkdir()
    (source / "p.rego").write_text("package p\n\nallow := true\n")
    http.post("/v1/bundles", content=build_bundle(source, "1", serial=1)).raise_for_status()
    plane.wait_until(lambda s: s["snapshot"] is not None)
    heartbeat = next_core_message(world.nats.url, topo.SUBJECT_HEARTBEAT)

    kinds = {}
    for stream in (topo.STREAM_RELATIONS, topo.STREAM_TRUST, topo.STREAM_REVOCATIONS, topo.STREAM_BUNDLES,
                   topo.STREAM_SNAPSHOTS):
        messages = read_stream(world.nats.url, stream)
        assert messages, stream
        events = [verify_event(m.data, world.event_trust()) for m in messages]
        assert {e.kid for e in events} == {world.event_key.kid}
        kinds[stream] = sorted({e.type for e in events})
    assert kinds == {topo.STREAM_RELATIONS: ["relations.batch"], topo.STREAM_TRUST: ["trust.update"],
                     topo.STREAM_REVOCATIONS: ["revocation"], topo.STREAM_BUNDLES: ["bundle.announce"],
                     topo.STREAM_SNAPSHOTS: ["relations.snapshot"]}
    beat = verify_event(heartbeat, world.event_trust(), expected_type=topo.PLANE_HEARTBEAT)
    assert set(beat.payload) >= {"relations_seq", "trust_seq", "revocations_seq"}
    assert plane.status()["rejected_events"] == {}


def test_ops_endpoints(plane: PlaneProcess) -> None:
    anonymous = plane.client(None)
    assert anonymous.get("/health").json() == {"status": "ok"}
    assert anonymous.get("/ready").json()["status"] == "ready"
    assert "tg_plane_relations_seq" in anonymous.get("/metrics").text
    assert anonymous.get("/openapi.json").json()["info"]["title"] == "tenantguard policy plane"
    assert anonymous.get("/docs").status_code == 200


JSON_ENDPOINTS = ["/v1/relations", "/v1/revocations", "/v1/trust/issuers", "/v1/trust/sidecars/billing/keys"]
HOSTILE_BODIES = [
    (b"[" * 5000 + b"]" * 5000, "application/json", 400, "json_too_deep"),
    (b'{"changes": [], "changes": [{"op": "write"}]}', "application/json", 400, "json_not_interoperable"),
    (b'{"kind": "tenant", "tenant": "acme", "not_after": NaN}', "application/json", 400, "json_not_interoperable"),
    (b'{"not_after": 1' + b"0" * 5000 + b"}", "application/json", 400, "json_not_interoperable"),
    (b'{"kind": "tenant"}', "text/plain", 415, "unsupported_media_type"),
    (b'{"kind": "tenant"}', "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
]


def test_plane_json_bodies_and_queries_are_bounded_i_json(world: World, plane: PlaneProcess) -> None:
    """Every JSON endpoint, with and without credentials: a typed 4xx, never a 500."""
    for credential in (ADMIN_TOKEN, JOIN_SECRET, None):
        http = plane.client(credential)
        for path in JSON_ENDPOINTS:
            for body, content_type, status, code in HOSTILE_BODIES:
                r = http.post(path, content=body, headers={"content-type": content_type})
                assert (r.status_code, r.json()["error"]) == (status, code), (path, body[:40], r.text)
    import base64

    for raw in (b"[" * 3000, b'{"tenant": "acme", "tenant": "globex"}'):
        cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        r = plane.client().get("/v1/relations", params={"tenant": "acme", "cursor": cursor})
        assert (r.status_code, r.json()["error"]) == (400, "invalid_request"), r.text
    ok = plane.client().post("/v1/relations", content=json.dumps(ADMIN_CALLS[0][2]).encode(),
                             headers={"content-type": "application/json; charset=utf-8"})
    assert ok.status_code == 200, ok.text
