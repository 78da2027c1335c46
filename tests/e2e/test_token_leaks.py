"""No token reaches a log, a decision record or a file on disk, whatever a caller does with it.

One real deployment (nats-server, the plane, sidecars for orders and billing with decision
logs on). Tokens travel every way a caller can send them: valid, expired, revoked, signed by
an unknown key, with a broken signature, for another audience, shaped like a JWT but made up;
in the Authorization header, inside the body (context, resource properties, AuthZEN subject
properties), in the OPA door's GET query, as the exchange's subject and actor token, as the
plane's admin token and the console's password. Then every byte the deployment wrote (every
process's stdout and stderr, the sidecars' state directories, the plane's files, JetStream's
store holding the decision records) and what the plane serves back (decision export, audit)
is searched for each token and for its signature segment: what makes a token usable.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.dev.natsserver import NatsServer
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import mint

from tests.harness.cluster import JWT, Cluster
from tests.harness.paths import TENANTGUARD
from tests.harness.waiting import eventually

pytestmark = [pytest.mark.nats, pytest.mark.timeout(240)]

SERVICES = ("orders", "billing")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("leaks")
    running = Cluster(root, NatsServer(root / "nats").start())
    try:
        running.init_plane_material(SERVICES)
        running.start_plane(SERVICES)
        running.trust_edge_issuer()
        running.publish_bundle_cli()
        for service in SERVICES:
            running.start_sidecar(service)
        for service in SERVICES:
            eventually(lambda s=service: running.status(s)["ready"] and "edge" in running.status(s)["trust"][
                "issuers"] and all(f"sidecar:{o}" in running.status(s)["trust"]["issuers"] for o in SERVICES),
                f"{service} ready with the plane's trust set")
        yield running
    finally:
        running.close()


def _tokens(cluster: Cluster) -> dict[str, str]:
    """Every kind of token a caller may present, each unique to this run."""
    stranger = SigningKey.generate()
    now = time.time()
    valid = cluster.token("alice", "orders")
    made_up = "eyJhbGciOiJFZERTQSIsImtpZCI6Im5vcGUifQ.eyJzdWIiOiJtYWxsb3J5In0." + "Q" * 40 + "madeupsignature"
    return {
        "valid": valid,
        "valid for billing": cluster.token("alice", "billing"),
        "expired": mint(cluster.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                        roles=["editor"], now=now - 7200),
        "wrong audience": cluster.token("alice", "reports"),
        "unknown key": mint(stranger, issuer="edge", sub="alice", tenant_id="acme", audience="orders",
                            roles=["editor"], now=now - 10),
        "broken signature": valid[:-6] + ("AAAAAA" if not valid.endswith("AAAAAA") else "BBBBBB"),
        "to be revoked": cluster.token("rita", "orders"),
        "made up": made_up,
    }


def _needles(token: str) -> list[str]:
    """The token, and its signature segment when it has one long enough to mean something."""
    signature = token.rsplit(".", 1)[-1]
    return [token, signature] if len(signature) >= 16 else [token]


def _check_body(token: str, resource_id: str = "inv-1") -> dict[str, Any]:
    return {"action": {"name": "invoices:read"},
            "resource": {"type": "invoice", "id": resource_id,
                         "properties": {"tenant_id": "acme", "project": "p1", "copy": token}},
            "context": {"forwarded": f"Bearer {token}", "raw": token, token: "a token as a key",
                        "list": [{"deep": [token]}], "url": f"https://x.example/cb?access_token={token}"}}


def _use_everywhere(cluster: Cluster, name: str, token: str) -> None:
    """Send ``token`` through every door that takes one, as header and as data."""
    orders = cluster.url("orders")
    auth = {"Authorization": f"Bearer {token}"}
    r = httpx.post(f"{orders}/v1/check", json=_check_body(token), headers=auth, timeout=10)
    assert r.status_code in (200, 401), (name, r.status_code, r.text)
    assert token not in r.text, name
    r = httpx.post(f"{orders}/v1/check", json=_check_body(token, resource_id=token), headers=auth, timeout=10)
    assert r.status_code in (200, 400, 401), (name, r.status_code, r.text)
    r = httpx.post(f"{orders}/envoy/ext_authz/invoices/inv-1?access_token={token}", headers=auth, timeout=10)
    assert r.status_code in (200, 401, 403), (name, r.status_code, r.text)
    evaluation = {"subject": {"type": "user", "id": "alice", "properties": {"token": token}},
                  "action": {"name": "invoices:read"},
                  "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": "p1"}},
                  "context": {"token": token}}
    r = httpx.post(f"{orders}/access/v1/evaluation", json=evaluation, headers=auth, timeout=10)
    assert r.status_code in (200, 400, 401), (name, r.status_code, r.text)
    query = urllib.parse.urlencode({"input": json.dumps({"action": {"name": "invoices:read"},
                                                         "resource": {"type": "invoice", "id": "inv-1"},
                                                         "context": {"token": token}})})
    r = httpx.get(f"{orders}/v1/data/tenantguard/decision?{query}", headers=auth, timeout=10)
    assert r.status_code in (200, 400, 401), (name, r.status_code, r.text)
    r = cluster.exchange("orders", token, "billing")
    assert r.status_code in (200, 400, 401), (name, r.status_code, r.text)
    assert token not in r.text, name
    if r.status_code == 200:
        exchanged = r.json()["access_token"]
        used = httpx.post(f"{cluster.url('billing')}/v1/check", json=_check_body(exchanged),
                          headers={"Authorization": f"Bearer {exchanged}"}, timeout=10)
        assert used.status_code == 200, used.text
    r = cluster.exchange("orders", cluster.token("alice", "orders"), "billing", actor_token=token,
                         actor_token_type=JWT)
    assert r.status_code in (200, 400, 401), (name, r.status_code, r.text)
    assert cluster.plane is not None
    r = httpx.get(f"{cluster.plane.url}/v1/relations", params={"tenant": "acme"}, headers=auth, timeout=10)
    assert r.status_code == 403, (name, r.status_code, r.text)  # a wrong credential (auth.py)
    with httpx.Client(base_url=cluster.plane.url, timeout=10) as browser:  # the console's password field
        assert browser.get("/console/login").status_code == 200
        csrf = browser.cookies.get("tg_console_login", "")
        r = browser.post("/console/login", data={"token": token, "login_csrf": csrf},
                         headers={"Origin": cluster.plane.url})
    assert r.status_code == 403 and "neither the admin nor the operator token" in r.text, (name, r.status_code)
    assert token not in r.text, name


def _exchanged_tokens(cluster: Cluster, subject: str) -> list[str]:
    """Tokens the sidecars minted themselves (they are bearer tokens too)."""
    r = cluster.exchange("orders", subject, "billing")
    assert r.status_code == 200, r.text
    return [r.json()["access_token"]]


def _files(root: Path) -> Iterator[Path]:
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            yield path


def test_no_token_is_written_anywhere_the_deployment_writes(cluster: Cluster) -> None:
    assert cluster.plane is not None
    cluster.write("acme/project:p1#member@user:alice", "acme/project:p1#member@user:rita")
    tokens = _tokens(cluster)
    revoked = tokens["to be revoked"]
    assert cluster.check("orders", revoked).json()["allow"] is True
    claims = json.loads(_payload(revoked))
    cluster.revoke(kind="jti", jti=claims["jti"], exp=claims["exp"])
    eventually(lambda: cluster.check("orders", revoked).status_code == 401, "the revocation reached orders")
    tokens["exchanged"] = _exchanged_tokens(cluster, tokens["valid"])[0]
    for name, token in tokens.items():
        _use_everywhere(cluster, name, token)

    def settled() -> bool:
        logs = [cluster.status(s)["decision_log"] for s in SERVICES]
        return all(log["pending"] == 0 and log["stream"]["in_flight"] == 0 for log in logs)

    eventually(settled, "every decision record stored")
    submitted = sum(cluster.status(s)["decision_log"]["submitted"] for s in SERVICES)
    assert submitted >= 4  # the valid token through three doors at orders, the exchanged one at billing
    eventually(lambda: cluster.plane_status()["decisions"]["received"] >= submitted, "the plane has the records")

    served = [_cli(cluster, "decisions", "export", "--tenant", "acme")]
    with cluster.plane_http() as client:
        for path in ("/v1/audit", "/v1/status", "/v1/decisions?tenant=acme&limit=500"):
            r = client.get(path)
            assert r.status_code == 200, (path, r.text)
            served.append(r.text)
    assert '"[redacted]"' in served[0]  # the body copies were there, and were redacted

    needles = {f"{name} ({'token' if n == t else 'signature'})": n
               for name, t in tokens.items() for n in _needles(t)}
    leaks = [f"{what} in {where}" for where, text in (("plane answers", "\n".join(served)),)
             for what, needle in needles.items() if needle in text]
    for path in _files(cluster.root):
        data = path.read_bytes()
        leaks += [f"{what} in {path.relative_to(cluster.root)}" for what, needle in needles.items()
                  if needle.encode() in data]
    assert not leaks, leaks


def _payload(token: str) -> str:
    import base64

    part = token.split(".")[1]
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


def _cli(cluster: Cluster, *args: str) -> str:
    assert cluster.plane is not None
    done = subprocess.run([TENANTGUARD, *args, "--plane", cluster.plane.url,
                           "--token-file", str(cluster.keys / "admin.token")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
