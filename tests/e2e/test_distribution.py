"""The plane distributes relationships, revocations and trust to three real sidecars.

One deployment for the module (conftest): nats-server, ``tenantguard plane serve``, and
the orders, billing and reports sidecars, each started with ``--nats --plane-key
--plane-url --join-secret-file`` and no trust file at all. Every wait is a poll with a
deadline that only bounds a hang; nothing asserts on how long anything took.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
from tenantguard.feed import topology
from tenantguard.feed.events import sign_batch
from tenantguard.identity.keys import SigningKey, TrustSet, write_private
from tenantguard.relations import ChangeBatch, RelationChange, Relationship

from authz_sidecar.feed.store import FeedStore
from tests.harness.cluster import SERVICES, Cluster, metric
from tests.harness.nats_raw import publish_js
from tests.harness.paths import TENANTGUARD
from tests.harness.waiting import eventually


def everywhere(cluster: Cluster, sub: str, *, expect: bool, project: str = "p1", tenant: str = "acme") -> None:
    eventually(lambda: all(cluster.allowed(s, sub, project=project, tenant=tenant) is expect for s in SERVICES),
               f"{sub} {'allowed' if expect else 'denied'} on {project} ({tenant}) by every sidecar")


# --------------------------------------------------------------------------- (a) convergence


def test_relationships_written_through_the_plane_converge_on_every_sidecar(cluster: Cluster) -> None:
    cluster.write("acme/project:p1#member@user:alice", "acme/group:eng#member@user:bob",
                  "acme/project:p2#member@group:eng#member")
    cluster.write(*(f"globex/project:g{i}#member@user:u{i}" for i in range(50)))
    cluster.write("globex/project:g0#member@user:u0", op="delete")
    last = cluster.write("acme/project:p3#owner@user:alice")
    converged = eventually(cluster.converged, "every sidecar holds the plane's relations digest")
    assert converged["seq"] == last and converged["count"] == 3 + 49 + 1
    for service in SERVICES:
        status = cluster.status(service)
        assert status["relations_seq"] == last and status["relations_count"] == converged["count"]


# --------------------------------------------------------------------------- (b) deny -> allow, at_least


def test_a_write_flips_the_decision_on_every_sidecar(cluster: Cluster) -> None:
    assert not any(cluster.allowed(s, "erin", project="p4") for s in SERVICES)
    cluster.write("acme/project:p4#member@user:erin")
    everywhere(cluster, "erin", project="p4", expect=True)


def test_at_least_the_consistency_token_sees_the_write_right_away(cluster: Cluster) -> None:
    """One check per sidecar, sent as soon as the plane answered the write: no polling."""
    assert not any(cluster.allowed(s, "frank", project="p5") for s in SERVICES)
    token = cluster.write("acme/project:p5#member@user:frank")
    for service in SERVICES:
        r = cluster.check(service, cluster.token("frank", service), project="p5", at_least=token)
        assert r.status_code == 200 and r.json()["allow"] is True, (service, r.text)
        assert r.json()["relations_seq"] >= token
    token = cluster.write("acme/project:p5#member@user:frank", op="delete")
    for service in SERVICES:
        r = cluster.check(service, cluster.token("frank", service), project="p5", at_least=token)
        assert r.json()["allow"] is False and r.json()["reasons"] != ["relations_stale"], (service, r.text)


# --------------------------------------------------------------------------- (c) revocations


def test_revoking_a_subject_and_killing_a_tenant_deny_everywhere(cluster: Cluster) -> None:
    token = cluster.write("acme/project:p1#member@user:carol", "initech/project:p1#member@user:ivan")
    assert all(cluster.allowed(s, "carol", at_least=token) for s in SERVICES)
    assert all(cluster.allowed(s, "ivan", tenant="initech", at_least=token) for s in SERVICES)
    carol = {s: cluster.token("carol", s) for s in SERVICES}  # issued before the revocation

    cluster.revoke(kind="subject", tenant="acme", sub="carol")
    eventually(lambda: all(cluster.check(s, carol[s]).status_code == 401 for s in SERVICES),
               "carol's tokens refused by every sidecar")
    assert all(cluster.check(s, carol[s]).json()["error"] == "token_revoked" for s in SERVICES)
    assert all(cluster.allowed(s, "alice") for s in SERVICES)  # nobody else is affected

    cluster.revoke(kind="tenant", tenant="initech")  # the kill switch
    everywhere(cluster, "ivan", tenant="initech", expect=False)
    assert all(cluster.allowed(s, "alice") for s in SERVICES)


# --------------------------------------------------------------------------- (f) forged events


def test_a_forged_relations_event_is_dropped_and_the_next_genuine_write_applies(cluster: Cluster) -> None:
    before = {s: metric(cluster.metrics(s), "tg_events_rejected_total") for s in SERVICES}
    seq = cluster.plane_digest()["seq"]
    attacker = SigningKey.generate()
    change = RelationChange("write", Relationship.parse("acme/project:p1#member@user:mallory"))
    forged = sign_batch(attacker, ChangeBatch(seq + 1, (change,)))  # the right shape and the next seq
    publish_js(cluster.nats.url, topology.relations_subject("c0"), forged, topology.STREAM_RELATIONS)

    eventually(lambda: all(metric(cluster.metrics(s), "tg_events_rejected_total") > before[s] for s in SERVICES),
               "every sidecar counted the forged event in tg_events_rejected_total")
    assert not any(cluster.allowed(s, "mallory") for s in SERVICES)

    token = cluster.write("acme/project:p6#member@user:grace")
    assert token == seq + 1  # the forgery did not take the sequence number
    assert all(cluster.allowed(s, "grace", project="p6", at_least=token) for s in SERVICES)
    assert eventually(cluster.converged, "every sidecar at the plane's digest")["seq"] == token
    assert not any(cluster.allowed(s, "mallory") for s in SERVICES)


# --------------------------------------------------------------------------- (h) key registration


def test_every_sidecar_key_is_registered_and_published_in_the_plane_jwks(cluster: Cluster) -> None:
    published = {k["kid"]: k for k in cluster.jwks()["keys"]}
    for service in SERVICES:
        assert "--trust" not in cluster.sidecar_args(service)  # no local trust file anywhere
        own = httpx.get(f"{cluster.url(service)}/v1/keys", timeout=10).json()["keys"][0]
        assert published[own["kid"]]["iss"] == f"sidecar:{service}"
        assert "d" not in published[own["kid"]]  # public half only
        status = cluster.status(service)
        assert status["registration"]["state"] == "registered" and status["registration"]["kid"] == own["kid"]
        assert status["trust"]["own_key_trusted"] and status["trust"]["own_key_in_plane_set"]
        assert status["trust"]["source"] == "plane"


def test_exchange_chain_works_with_trust_distributed_by_the_plane(cluster: Cluster) -> None:
    """orders exchanges alice's token for billing; billing verifies it with orders' key, which it
    only knows from the plane's trust set (registered by orders, delivered over NATS)."""
    token = cluster.write("acme/project:p8#member@user:alice")
    r = cluster.exchange("orders", cluster.token("alice", "orders", age=1), "billing", scope="invoices:read")
    assert r.status_code == 200, r.text
    for_billing = r.json()["access_token"]
    header = jwt.get_unverified_header(for_billing)
    claims = jwt.decode(for_billing, options={"verify_signature": False})
    assert (claims["iss"], claims["aud"], claims["act"]) == ("sidecar:orders", "billing", {"sub": "svc:orders"})
    assert header["kid"] in {k["kid"] for k in cluster.jwks()["keys"] if k["iss"] == "sidecar:orders"}
    r = cluster.check("billing", for_billing, project="p8", at_least=token)
    assert r.status_code == 200 and r.json()["allow"] is True, r.text
    r = cluster.check("reports", for_billing, project="p8")  # the token is for billing only
    assert r.status_code == 401 and r.json()["error"] == "audience_invalid", r.text


def test_revoking_the_parent_jti_through_the_plane_refuses_the_token_exchanged_from_it(cluster: Cluster) -> None:
    """orders exchanges alice's token for billing; the parent's jti is revoked at the plane;
    billing, which never saw the parent, refuses the derived token (already cached there)."""
    seq = cluster.write("acme/project:p9#member@user:alice")
    parent = cluster.token("alice", "orders", age=1)
    r = cluster.exchange("orders", parent, "billing", scope="invoices:read")
    assert r.status_code == 200, r.text
    derived = r.json()["access_token"]
    parent_claims = jwt.decode(parent, options={"verify_signature": False})
    assert jwt.decode(derived, options={"verify_signature": False})["tg_chain"] == [parent_claims["jti"]]
    for _ in range(2):  # the second answer comes from billing's verified-token cache
        r = cluster.check("billing", derived, project="p9", at_least=seq)
        assert r.status_code == 200 and r.json()["allow"] is True, r.text

    cluster.revoke(kind="jti", jti=parent_claims["jti"], exp=parent_claims["exp"])
    eventually(lambda: cluster.check("billing", derived, project="p9").status_code == 401,
               "billing refuses the token exchanged from the revoked one")
    assert cluster.check("billing", derived, project="p9").json()["error"] == "token_revoked"
    assert cluster.check("orders", parent, project="p9").json()["error"] == "token_revoked"
    revocation = _explained_revocation(cluster, derived)  # explain says so for billing's earlier allow
    assert revocation["ancestor_revoked_now"] is True and revocation["jti_revoked_now"] is False
    assert revocation["token"]["chain"] == [parent_claims["jti"]]
    other = cluster.exchange("orders", cluster.token("alice", "orders", age=1), "billing", scope="invoices:read")
    r = cluster.check("billing", other.json()["access_token"], project="p9")  # alice's other tokens live
    assert r.status_code == 200 and r.json()["allow"] is True, r.text


def _explained_revocation(cluster: Cluster, token: str) -> dict[str, Any]:
    """The plane's explain of billing's first recorded decision for ``token``: its revocation part."""
    jti = jwt.decode(token, options={"verify_signature": False})["jti"]
    with cluster.plane_http() as client:
        def recorded() -> list[dict[str, Any]] | None:
            found: list[dict[str, Any]] = client.get("/v1/decisions", params={"jti": jti}).json()["decisions"]
            return found or None

        record = eventually(recorded, "billing's decision record at the plane")[-1]
        r = client.get(f"/v1/decisions/{record['decision_id']}/explain")
    assert r.status_code == 200, r.text
    revocation: dict[str, Any] = r.json()["builtin_checks"]["revocation"]
    return revocation


def test_revoking_a_kid_through_the_plane_refuses_the_tokens_exchanged_from_what_it_signed(
        cluster: Cluster) -> None:
    """A second edge key signs alice's token; orders exchanges it for billing (signed by orders'
    own key, which stays trusted). The edge key's kid is revoked at the plane: billing, which
    never saw the parent, refuses the derived token (cached there) because its tg_chain_kids
    names the revoked kid. Before, it lived on until its exp."""
    seq = cluster.write("acme/project:p10#member@user:alice")
    leaked = SigningKey.generate()
    with cluster.plane_http() as client:
        r = client.post("/v1/trust/issuers", json={"jwk": {**leaked.public_jwk(), "iss": "edge"}})
    assert r.status_code == 200, r.text
    parent = cluster.token("alice", "orders", key=leaked, age=1)
    eventually(lambda: cluster.exchange("orders", parent, "billing", scope="invoices:read").status_code == 200,
               "orders trusts the second edge key")
    derived = cluster.exchange("orders", parent, "billing", scope="invoices:read").json()["access_token"]
    assert jwt.decode(derived, options={"verify_signature": False})["tg_chain_kids"] == [leaked.kid]
    for _ in range(2):  # the second answer comes from billing's verified-token cache
        r = cluster.check("billing", derived, project="p10", at_least=seq)
        assert r.status_code == 200 and r.json()["allow"] is True, r.text

    cluster.revoke(kind="kid", kid=leaked.kid)
    eventually(lambda: cluster.check("billing", derived, project="p10").status_code == 401,
               "billing refuses the token exchanged from one the revoked kid signed")
    assert cluster.check("billing", derived, project="p10").json()["error"] == "token_revoked"
    assert leaked.kid not in {k["kid"] for k in cluster.jwks()["keys"]}
    revocation = _explained_revocation(cluster, derived)  # what the operator sees for billing's allow
    assert revocation["ancestor_revoked_now"] is True and revocation["kid_revoked_now"] is False
    assert revocation["token"]["chain_kids"] == [leaked.kid]
    other = cluster.exchange("orders", cluster.token("alice", "orders", age=1), "billing", scope="invoices:read")
    r = cluster.check("billing", other.json()["access_token"], project="p10")  # the edge's own key lives on
    assert r.status_code == 200 and r.json()["allow"] is True, r.text


def test_a_wrong_join_secret_is_refused_and_the_key_never_published(cluster: Cluster, tmp_path: Path) -> None:
    """exports presents a wrong join secret. It still serves (bundle, trust from NATS), keeps retrying,
    and its key never reaches the JWKS. It also had a local trust file: the plane's set replaced it."""
    wrong_secret = "exports-wrong-secret-" + "z9" * 16
    secret_file = tmp_path / "wrong.secret"
    write_private(secret_file, wrong_secret.encode())
    stray_file = tmp_path / "stray-trust.json"
    TrustSet([*TrustSet.from_jwks({"keys": [{**cluster.stray.public_jwk(), "iss": "stray"}]})]).save(stray_file)
    proc = cluster.start_sidecar("exports", "--trust", str(stray_file), join_secret_file=secret_file,
                                 name="sidecar-exports-wrong-secret")
    try:
        def status() -> dict[str, Any]:
            return httpx.get(f"{proc.url}/v1/status", timeout=10).json()

        refused = eventually(lambda: status()["registration"]["state"] == "refused" and status(),
                             "the plane refused the registration")
        assert refused["registration"]["last_error"].startswith("forbidden")
        kid = httpx.get(f"{proc.url}/v1/keys", timeout=10).json()["keys"][0]["kid"]
        assert kid not in {k["kid"] for k in cluster.jwks()["keys"]}
        # it serves anyway, from the plane's bundle and trust set ...
        eventually(lambda: httpx.get(f"{proc.url}/ready", timeout=10).status_code == 200, "exports ready")
        eventually(lambda: status()["trust"]["source"] == "plane", "exports applied the plane's trust set")
        # ... in which the locally trusted stray key is gone (the plane is authoritative), the edge key is in,
        # and its own key is still trusted locally even though the plane never published it
        trust = status()["trust"]
        assert "stray" not in trust["issuers"] and "edge" in trust["issuers"]
        assert trust["own_key_trusted"] and not trust["own_key_in_plane_set"]
        stray_token = cluster.token("alice", "exports", key=cluster.stray, issuer="stray")
        r = httpx.post(f"{proc.url}/v1/check", headers={"Authorization": f"Bearer {stray_token}"},
                       json={"action": {"name": "exports:read"}, "resource": {"type": "export", "id": "x"}})
        assert r.status_code == 401 and r.json()["error"] == "unknown_kid", r.text
        # the other sidecars never trust the unregistered key: a token it mints is refused by billing
        assert all("sidecar:exports" not in cluster.status(s)["trust"]["issuers"] for s in SERVICES)
    finally:
        proc.stop()
    assert kid not in {k["kid"] for k in cluster.jwks()["keys"]}
    assert wrong_secret not in proc.log.read_text(errors="replace")  # never logged


def test_a_join_secret_file_others_can_read_is_refused_at_start(cluster: Cluster, tmp_path: Path) -> None:
    secret = "open-secret-" + "q7" * 16
    loose = tmp_path / "loose.secret"
    loose.write_text(secret)
    loose.chmod(0o644)
    done = subprocess.run([TENANTGUARD, *cluster.sidecar_args("exports", join_secret_file=loose)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "listening" not in done.stdout
    assert "chmod 600" in done.stderr and secret not in done.stderr + done.stdout


def test_a_revoked_sidecar_key_is_replaced_and_can_never_be_registered_again(cluster: Cluster) -> None:
    """An operator revokes a sidecar's exchange key (say it leaked). The sidecar learns it over
    NATS, generates and persists a new key and registers that one; the plane refuses the old one."""
    proc = cluster.start_sidecar("exports", name="sidecar-exports-rotation")
    try:
        def status() -> dict[str, Any]:
            return httpx.get(f"{proc.url}/v1/status", timeout=10).json()

        def own_jwk() -> dict[str, Any]:
            jwk: dict[str, Any] = httpx.get(f"{proc.url}/v1/keys", timeout=10).json()["keys"][0]
            return jwk

        def own_kid() -> str:
            return str(own_jwk()["kid"])

        eventually(lambda: status()["registration"]["state"] == "registered", "exports registered its key")
        old_jwk = {k: v for k, v in own_jwk().items() if k != "iss"}
        old = str(old_jwk["kid"])
        cluster.revoke(kind="kid", kid=old)
        new = eventually(lambda: own_kid() != old and own_kid(), "exports replaced its revoked key")
        eventually(lambda: status()["registration"]["kid"] == new and status()["registration"]["state"] == "registered"
                   and new in {k["kid"] for k in cluster.jwks()["keys"]}, "the new key registered and published")
        persisted = SigningKey.load(cluster.state_dir("exports") / "exchange" / "signing-key.pem")
        assert persisted.kid == new  # a restart keeps the new key, not the revoked one
        assert status()["trust"]["own_key_trusted"] and status()["trust"]["own_kid"] == new
        with cluster.plane_http(token=cluster.join_secret_file("exports").read_text().strip()) as client:
            again = client.post("/v1/trust/sidecars/exports/keys", json={"jwk": old_jwk})
        assert again.status_code == 409 and again.json()["error"] == "key_revoked", again.text
        assert old not in {k["kid"] for k in cluster.jwks()["keys"]}
    finally:
        proc.stop()


def test_a_sidecar_killed_during_a_slow_shutdown_keeps_what_it_applied(cluster: Cluster) -> None:
    """SIGTERM, then a supervisor that loses patience (SIGKILL) while the HTTP drain still waits
    for an unfinished request: the feed's state was persisted first, so a restart serves it."""
    proc = cluster.start_sidecar("exports", name="sidecar-exports-slow-stop")
    try:
        token = cluster.write("acme/project:p9#member@user:zed")
        eventually(lambda: httpx.get(f"{proc.url}/v1/status", timeout=10).json()["relations_seq"] >= token,
                   "exports applied the write")
        host, port = proc.http.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as held:
            # headers and half a body: uvicorn's graceful drain waits for this request to finish
            held.sendall(b"POST /v1/check HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{")
            time.sleep(0.2)
            proc.popen.send_signal(signal.SIGTERM)
            time.sleep(2.0)  # less than the drain's 5 s
            assert proc.alive(), "the drain should still be waiting for the held request"
            proc.popen.kill()
            proc.popen.wait(timeout=5)
    finally:
        proc.stop()
    index = FeedStore(cluster.state_dir("exports") / "feed").load_relations()
    assert index is not None and index.applied_seq >= token
    assert index.check("acme", "project:p9", "member", "user:zed")
