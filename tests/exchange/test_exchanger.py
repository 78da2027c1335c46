"""TokenExchanger in process, with the example bundle compiled by the real engine, and the
sidecar's app driven over ASGI for what needs the running state (revocations)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from tenantguard import errors
from tenantguard import exchange as ex
from tenantguard.decision.core import PolicyRevision
from tenantguard.identity.tokens import mint

from authz_sidecar.app import create_app
from authz_sidecar.config import SidecarConfig
from authz_sidecar.runtime import Sidecar
from tests.harness.exchangers import Setup
from tests.harness.sidecar_world import World

NOW = time.time()


def test_minting_rules(revision: PolicyRevision) -> None:
    s = Setup(revision)
    subject = s.subject(scope="invoices:* orders:*", act={"sub": "svc:edge"}, lifetime=600)
    result = s.run(subject, scope=("invoices:read",))
    c = s.claims(result)
    assert c["iss"] == "sidecar:orders" and c["sub"] == "alice" and c["tenant_id"] == "acme"
    assert c["act"] == {"sub": "svc:orders", "act": {"sub": "svc:edge"}}
    assert c["scope"] == "invoices:read" and c["roles"] == ["editor"]
    assert c["exp"] - c["iat"] == 120 == result.expires_in  # min(300 configured, 120 from billing's zone)
    header = jwt.get_unverified_header(result.access_token)
    assert header["kid"] == s.own.kid and header["alg"] == "EdDSA"


def test_exp_capped_by_subject_and_configured_lifetime(revision: PolicyRevision) -> None:
    s = Setup(revision, lifetime=60)
    assert s.claims(s.run(s.subject(), scope=("invoices:read",)))["exp"] - int(time.time()) <= 60
    soon = s.subject(lifetime=30)
    c = s.claims(s.run(soon, scope=("invoices:read",)))
    assert c["exp"] <= jwt.decode(soon, options={"verify_signature": False})["exp"]


def test_revoked_subject_token(revision: PolicyRevision) -> None:
    s = Setup(revision)
    token = s.subject()
    s.revocations.revoke_jti(jwt.decode(token, options={"verify_signature": False})["jti"], NOW + 600)
    with pytest.raises(ex.InvalidRequest) as err:
        s.run(token)
    assert err.value.reason == "token_revoked"


def test_kill_switch_stops_exchange_even_for_tokens_issued_after_it(revision: PolicyRevision) -> None:
    s = Setup(revision)
    s.revocations.revoke_tenant("acme", issued_before=NOW - 3600)  # cut-off long before this token
    with pytest.raises(ex.InvalidRequest) as err:
        s.run(s.subject())
    assert err.value.reason == "tenant_revoked"
    s.revocations.lift_tenant("acme")
    assert s.run(s.subject()).access_token


def test_depth_bound_is_the_exchangers(revision: PolicyRevision) -> None:
    s = Setup(revision, max_act_depth=2)
    with pytest.raises(ex.InvalidRequest) as err:
        s.run(s.subject(act={"sub": "svc:edge", "act": {"sub": "svc:x"}}))
    assert err.value.reason == "actor_chain_too_deep"


def test_no_active_policy_is_temporarily_unavailable() -> None:
    s = Setup(None)
    with pytest.raises(ex.TemporarilyUnavailable):
        s.run(s.subject())


class Widening:
    """A broken policy that grants more than was asked: the library still refuses."""

    def evaluate(self, entrypoint: str, input: Any) -> Any:
        return {"allow": True, "reasons": [], "scope": ["invoices:write"], "max_lifetime": 3600}


class Failing:
    def evaluate(self, entrypoint: str, input: Any) -> Any:
        raise RuntimeError("engine fell over")


def test_policy_cannot_widen_scope() -> None:
    s = Setup(PolicyRevision("bad", Widening()))
    with pytest.raises(ex.InvalidScope):
        s.run(s.subject(scope="invoices:read"))
    with pytest.raises(ex.InvalidScope):
        s.run(s.subject(), scope=("invoices:read",))


def test_policy_lifetime_cannot_exceed_the_configured_one() -> None:
    s = Setup(PolicyRevision("bad", Widening()), lifetime=60)
    assert s.run(s.subject()).expires_in <= 60


def test_policy_error_mints_nothing() -> None:
    s = Setup(PolicyRevision("bad", Failing()))
    with pytest.raises(ex.InvalidTarget) as err:
        s.run(s.subject())
    assert err.value.reason == "policy_error"


def test_policy_sees_the_documented_input(revision: PolicyRevision) -> None:
    seen: list[Any] = []

    class Spy:
        def evaluate(self, entrypoint: str, input: Any) -> Any:
            seen.append((entrypoint, input))
            return revision.policy.evaluate(entrypoint, input)

    s = Setup(PolicyRevision("spy", Spy()))
    s.run(s.subject(scope="invoices:read", act={"sub": "svc:edge"}), scope=("invoices:read",))
    entrypoint, doc = seen[0]
    assert entrypoint == ex.EXCHANGE_ENTRYPOINT
    assert doc == {"subject": {"type": "user", "id": "alice",
                               "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": "invoices:read"}},
                   "actor": {"service": "orders"}, "audience": "billing", "scope": ["invoices:read"],
                   "actor_chain": ["svc:edge"]}


# -- the sidecar app in process: revocation pushed into the running state ----------------


async def test_revocation_reaches_the_exchange_door(tmp_path: Path) -> None:
    world = World(tmp_path)
    config = SidecarConfig(service="orders", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
                           trust_file=world.trust_file, relations_file=world.relations_file)
    sidecar = Sidecar.from_config(config)
    token = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders", roles=["editor"])
    form = {"grant_type": ex.GRANT_TYPE_TOKEN_EXCHANGE, "subject_token": token,
            "subject_token_type": ex.TOKEN_TYPE_JWT, "audience": "billing"}
    transport = httpx.ASGITransport(app=create_app(sidecar))
    async with httpx.AsyncClient(transport=transport, base_url="http://sidecar") as client:
        assert (await client.post("/oauth2/token", data=form)).status_code == 200
        sidecar.revocations.revoke_subject("acme", "alice")
        r = await client.post("/oauth2/token", data=form)
        assert r.status_code == 400 and r.json()["error"] == "invalid_request"
        assert r.json()["error_description"].startswith("token_revoked:")
        sidecar.revocations.lift_tenant("acme")
        sidecar.revocations.revoke_tenant("acme")
        assert (await client.post("/oauth2/token", data=form)).json()["error"] == "invalid_request"


class FakeEdge:
    """An edge verifier that claims every token and fails the way it is told to."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def handles(self, token: str) -> bool:
        return True

    async def verify(self, token: str) -> Any:
        raise self.error

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize(("error", "expected"), [
    (errors.Unavailable("IdP JWKS unreachable"), ex.TemporarilyUnavailable),
    (errors.TokenExpired("token has expired"), ex.InvalidRequest),
    (errors.ClaimMissing("no sub"), ex.InvalidRequest),
])
def test_edge_failures_map_to_oauth_errors(revision: PolicyRevision, error: Exception, expected: type) -> None:
    s = Setup(revision, edge=FakeEdge(error))
    with pytest.raises(expected) as err:
        s.run("a.b.c")
    assert err.value.reason == error.code  # type: ignore[attr-defined]
