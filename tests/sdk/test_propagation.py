"""Outbound propagation with a real sidecar for modes and exchange, and a real HTTP server
that records what arrived: forward, exchange (cached), deny, and no token for anyone else."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from tenantguard.client import AsyncAuthzClient, AuthzClient
from tenantguard.context import NoTenantContext, use_context
from tenantguard.identity.keys import TrustSet
from tenantguard.propagation import PropagationDenied, TenantGuardAuth
from tenantguard.testing import LocalSidecar, TestIssuer

from .flaky import FlakyServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
def target() -> Iterator[FlakyServer]:
    with FlakyServer(default=(200, {"ok": True})) as server:
        yield server


def host_of(server: FlakyServer) -> str:
    return server.url.removeprefix("http://")


def received_token(server: FlakyServer) -> str | None:
    header = server.requests[-1][2].get("Authorization")
    return header.removeprefix("Bearer ") if header else None


def billing_verifier(issuer: TestIssuer, sidecar: LocalSidecar) -> TestIssuer:
    billing = TestIssuer("edge")
    billing.trust = TrustSet(list(issuer.trust) + list(sidecar.exchange_trust()))
    return billing


async def test_exchange_for_a_sensitive_target_is_cached_per_user(
    target: FlakyServer, orders_sidecar: LocalSidecar, issuer: TestIssuer
) -> None:
    verifier = billing_verifier(issuer, orders_sidecar).verifier("billing")
    async with AsyncAuthzClient(orders_sidecar.base_url) as sidecar:
        auth = TenantGuardAuth({host_of(target): "billing"}, authorizer=sidecar, scopes={"billing": ["invoices:read"]})
        async with httpx.AsyncClient(auth=auth, timeout=5) as http:
            alice = issuer.context(audience="orders")
            with use_context(alice):
                await http.get(f"{target.url}/invoices/inv-1")
                first = received_token(target)
                await http.get(f"{target.url}/invoices/inv-2")
                assert received_token(target) == first  # cached, not exchanged again
            with use_context(issuer.context("bob", audience="orders")):
                await http.get(f"{target.url}/invoices/inv-1")
                bobs = received_token(target)
    assert auth.exchanges == 2 and first is not None and bobs is not None
    assert first != alice.token  # never the caller's own token across a zone boundary
    claims = verifier.verify(first)
    assert (claims.sub, claims.aud, claims.scope, claims.actor_chain) == (
        "alice", ("billing",), ("invoices:read",), ["svc:orders"])
    assert verifier.verify(bobs).sub == "bob"


def test_sync_exchange_and_deny(target: FlakyServer, orders_sidecar: LocalSidecar, issuer: TestIssuer) -> None:
    with AuthzClient(orders_sidecar.base_url) as sidecar:
        auth = TenantGuardAuth({host_of(target): "billing", "reports.internal": "reports"}, authorizer=sidecar)
        with httpx.Client(auth=auth, timeout=5) as http, use_context(issuer.context(audience="orders")):
            http.get(f"{target.url}/x")
            token = received_token(target)
            assert token is not None
            claims = billing_verifier(issuer, orders_sidecar).verifier("billing").verify(token)
            assert claims.actor_chain == ["svc:orders"]
            calls = target.count
            with pytest.raises(PropagationDenied):  # policy: reports accepts no calls from orders
                http.get("http://reports.internal/x")
            assert target.count == calls  # refused before anything was sent


async def test_forward_inside_the_zone_and_nothing_for_other_hosts(target: FlakyServer, issuer: TestIssuer) -> None:
    port = target.url.rsplit(":", 1)[1]
    auth = TenantGuardAuth({f"127.0.0.1:{port}": "inventory"}, modes={"inventory": "forward"})
    ctx = issuer.context(audience="orders")
    async with httpx.AsyncClient(auth=auth, timeout=5) as http:
        with use_context(ctx):
            await http.get(f"http://127.0.0.1:{port}/a")
            assert received_token(target) == ctx.token
            # same server under another name: not configured, so no token at all
            await http.get(f"http://localhost:{port}/b", headers={"Authorization": "Bearer caller-set"})
            assert received_token(target) == "caller-set"  # left untouched, and ours never added
            await http.get(f"http://localhost:{port}/c")
            assert received_token(target) is None


async def test_redirect_to_a_third_party_drops_the_token(issuer: TestIssuer) -> None:
    with FlakyServer(default=(200, {})) as third_party, FlakyServer(default=(200, {})) as internal:
        internal.then(("redirect", f"{third_party.url}/landing"))
        auth = TenantGuardAuth({host_of(internal): "inventory"}, modes={"inventory": "forward"})
        ctx = issuer.context(audience="orders")
        async with httpx.AsyncClient(auth=auth, timeout=5, follow_redirects=True) as http:
            with use_context(ctx):
                response = await http.get(f"{internal.url}/start")
        assert response.status_code == 200 and len(response.history) == 1
        assert received_token(internal) == ctx.token
        assert third_party.count == 1 and received_token(third_party) is None


async def test_configured_host_without_context_is_refused(target: FlakyServer) -> None:
    auth = TenantGuardAuth({host_of(target): "inventory"}, modes={"inventory": "forward"})
    async with httpx.AsyncClient(auth=auth, timeout=5) as http:
        with pytest.raises(NoTenantContext):
            await http.get(f"{target.url}/x")
    lenient = TenantGuardAuth({host_of(target): "inventory"}, modes={"inventory": "forward"}, require_context=False)
    async with httpx.AsyncClient(auth=lenient, timeout=5) as http:
        await http.get(f"{target.url}/x")
    assert received_token(target) is None


@pytest.mark.parametrize("where", ["authorization", "other-header", "query"])
async def test_the_callers_token_set_by_the_app_never_reaches_an_unconfigured_host(
        target: FlakyServer, issuer: TestIssuer, where: str) -> None:
    """Copied incoming headers or a token in a callback URL: refused before anything is sent."""
    port = target.url.rsplit(":", 1)[1]
    auth = TenantGuardAuth({f"127.0.0.1:{port}": "inventory"}, modes={"inventory": "forward"})
    ctx = issuer.context(audience="orders")
    headers = {"Authorization": f"Bearer {ctx.token}"} if where == "authorization" else {}
    if where == "other-header":
        headers = {"X-Forwarded-Authorization": f"Bearer {ctx.token}"}
    params = {"access_token": ctx.token} if where == "query" else {}
    async with httpx.AsyncClient(auth=auth, timeout=5) as http:
        with use_context(ctx), pytest.raises(PropagationDenied):
            await http.get(f"http://localhost:{port}/hook", headers=headers, params=params)
    with httpx.Client(auth=auth, timeout=5) as blocking, use_context(ctx), pytest.raises(PropagationDenied):
        blocking.get(f"http://localhost:{port}/hook", headers=headers, params=params)
    assert target.count == 0
