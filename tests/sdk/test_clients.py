"""One interface, three authorizers: the async and sync sidecar clients against a real
sidecar process, and the embedded authorizer in process, answer every question alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tenantguard.client import AsyncAuthzClient, AuthzClient, CheckResult, NotSupported
from tenantguard.client.embedded import EmbeddedAuthorizer
from tenantguard.context import use_context
from tenantguard.errors import TokenError
from tenantguard.exchange import InvalidScope, InvalidTarget
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.relations import RelationIndex
from tenantguard.testing import LocalSidecar, TestIssuer

from .conftest import BUNDLE_DIR, RELATIONSHIPS, SignedBundle, embedded_for, invoice

pytestmark = pytest.mark.timeout(60)


class Sync:
    """Adapts each authorizer to one awaitable call shape, so one test body covers all."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.inner, method)(*args, **kwargs)
        return await result if asyncio.iscoroutine(result) else result


@pytest.fixture(scope="module")
def embedded(issuer: TestIssuer, signed_bundle: SignedBundle, relations_index: RelationIndex) -> EmbeddedAuthorizer:
    return embedded_for("orders", issuer, signed_bundle, relations_index)


@pytest.fixture(params=["async", "sync", "embedded"])
async def authz(request: pytest.FixtureRequest, orders_sidecar: LocalSidecar,
                embedded: EmbeddedAuthorizer) -> AsyncIterator[Sync]:
    if request.param == "embedded":
        yield Sync(embedded)
    elif request.param == "sync":
        with AuthzClient(orders_sidecar.base_url) as client:
            yield Sync(client)
    else:
        async with AsyncAuthzClient(orders_sidecar.base_url) as aclient:
            yield Sync(aclient)


CASES = [
    ("member reads own tenant's invoice", {}, "invoices:read", invoice(), True, None),
    ("viewer may not write", {"roles": ["viewer"]}, "invoices:write", invoice(), False, "missing_role"),
    ("not a member of p2", {}, "invoices:read", invoice(project="p2"), False, "not_project_member"),
    ("colliding id in another tenant", {}, "invoices:read", invoice(tenant="globex"), False, "tenant_mismatch"),
    ("bob via group eng", {"sub": "bob"}, "invoices:read", invoice(project="p2"), True, None),
]


@pytest.mark.parametrize(("name", "tok", "action", "resource", "allow", "reason"), CASES, ids=[c[0] for c in CASES])
async def test_same_answers_from_every_authorizer(authz: Sync, issuer: TestIssuer, name: str, tok: dict[str, Any],
                                                  action: str, resource: dict[str, Any], allow: bool,
                                                  reason: str | None) -> None:
    token = issuer.mint(audience="orders", **tok)
    result = await authz("check", action, resource, token=token)
    assert isinstance(result, CheckResult)
    assert result.allow is allow, result.reasons
    assert result.bundle_revision == "1" and result.decision_id
    if reason is not None:
        assert reason in result.reasons
    assert await authz("is_allowed", action, resource, token=token) is allow


async def test_the_token_comes_from_the_context(authz: Sync, issuer: TestIssuer) -> None:
    with use_context(issuer.context(audience="orders")):
        assert (await authz("check", "invoices:read", invoice())).allow
    with use_context(issuer.context(tenant="globex", sub="mallory", audience="orders")):
        assert (await authz("check", "invoices:read", invoice())).allow  # globex's own p1
        assert not await authz("is_allowed", "invoices:read", invoice(tenant="acme"))


async def test_a_bad_token_is_a_token_error_not_a_deny(authz: Sync, issuer: TestIssuer) -> None:
    wrong_audience = issuer.mint(audience="billing")
    forged = TestIssuer("edge").mint(audience="orders")
    for token in (wrong_audience, forged):
        with pytest.raises(TokenError):
            await authz("check", "invoices:read", invoice(), token=token)
        assert await authz("is_allowed", "invoices:read", invoice(), token=token) is False


@pytest.mark.parametrize(("semantic", "expected"), [("execute_all", [True, False, True]),
                                                    ("deny_on_first_deny", [True, False]),
                                                    ("permit_on_first_permit", [True])])
async def test_check_many_semantics(authz: Sync, issuer: TestIssuer, semantic: str, expected: list[bool]) -> None:
    token = issuer.mint(audience="orders")
    items = [{"resource": invoice()}, {"resource": invoice(tenant="globex")}, {"resource": invoice("inv-2")}]
    results = await authz("check_many", items, action="invoices:read", token=token, semantic=semantic)
    assert [r.allow for r in results] == expected
    if len(results) > 1:
        assert "tenant_mismatch" in results[1].reasons


async def test_check_many_entries_override_defaults(authz: Sync, issuer: TestIssuer) -> None:
    token = issuer.mint(audience="orders", roles=["viewer"])
    results = await authz("check_many", [{}, {"action": "invoices:write"}], action="invoices:read",
                          resource=invoice(), token=token)
    assert [r.allow for r in results] == [True, False]


async def test_propagation_modes(authz: Sync) -> None:
    assert await authz("propagation_mode", "billing") == "exchange"  # core -> sensitive
    assert await authz("propagation_mode", "reports") == "deny"  # reports accepts no calls from orders
    assert await authz("propagation_mode", "nope") == "deny"


# --------------------------------------------------------------------------- exchange


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_exchange_through_the_sidecar(kind: str, orders_sidecar: LocalSidecar, issuer: TestIssuer) -> None:
    billing_trust = TrustSet(list(issuer.trust) + list(orders_sidecar.exchange_trust()))
    billing = TestIssuer(key=SigningKey.generate())
    billing.trust = billing_trust
    subject = issuer.mint(audience="orders")
    if kind == "async":
        async with AsyncAuthzClient(orders_sidecar.base_url) as aclient:
            exchanged = await aclient.exchange(subject, "billing", ["invoices:read"])
            with pytest.raises(InvalidTarget):
                await aclient.exchange(subject, "reports")
    else:
        with AuthzClient(orders_sidecar.base_url) as client:
            exchanged = client.exchange(subject, "billing", "invoices:read")
            with pytest.raises(InvalidScope):
                client.exchange(subject, "billing", "exports:read")
    assert exchanged.access_token not in repr(exchanged)
    claims = billing.verifier("billing").verify(exchanged.access_token)
    assert (claims.sub, claims.tenant_id, claims.scope) == ("alice", "acme", ("invoices:read",))
    assert claims.actor_chain == ["svc:orders"] and claims.iss == "sidecar:orders"
    assert 0 < exchanged.expires_in <= 120  # billing's zone caps the lifetime


def test_embedded_exchange_needs_a_key(issuer: TestIssuer, signed_bundle: SignedBundle,
                                       relations_index: RelationIndex, embedded: EmbeddedAuthorizer) -> None:
    subject = issuer.mint(audience="orders")
    with pytest.raises(NotSupported):
        embedded.exchange(subject, "billing")
    key = SigningKey.generate()
    with_key = embedded_for("orders", issuer, signed_bundle, relations_index, exchange_key=key)
    exchanged = with_key.exchange(subject, "billing", "invoices:read")
    target = TestIssuer("sidecar:orders", key=key)
    claims = target.verifier("billing").verify(exchanged.access_token)
    assert claims.actor_chain == ["svc:orders"] and claims.scope == ("invoices:read",)
    with pytest.raises(InvalidTarget):
        with_key.exchange(subject, "reports")


# --------------------------------------------------------------------------- unix socket


async def test_unix_socket_transport(issuer: TestIssuer, tmp_path_factory: pytest.TempPathFactory) -> None:
    with LocalSidecar("orders", BUNDLE_DIR, issuer=issuer, relationships=RELATIONSHIPS, uds=True,
                      workdir=tmp_path_factory.mktemp("uds")) as sidecar:
        assert sidecar.uds_path is not None
        token = issuer.mint(audience="orders")
        async with AsyncAuthzClient(uds=sidecar.uds_path) as aclient:
            assert (await aclient.check("invoices:read", invoice(), token=token)).allow
        with AuthzClient(uds=sidecar.uds_path) as client:
            assert not client.check("invoices:read", invoice(tenant="globex"), token=token).allow


def test_embedded_refuses_a_bundle_signed_by_another_key(issuer: TestIssuer, signed_bundle: SignedBundle) -> None:
    from tenantguard.errors import BundleRejected

    with pytest.raises(BundleRejected):
        EmbeddedAuthorizer("orders", bundle=signed_bundle.archive, bundle_key=SigningKey.generate().public_key,
                           verifier=issuer.verifier("orders"))


async def test_check_many_answers_type_level_questions_as_check_does(authz: Sync, issuer: TestIssuer) -> None:
    """A resource named by its type only ("may I create an invoice?"): with a context token the boxcar
    answers it as /v1/check does (AuthZEN PEPs without a token must name resource.id)."""
    token = issuer.mint(audience="orders")
    single = await authz("check", "invoices:read", "invoice", token=token)
    many = await authz("check_many", [{"resource": "invoice"}, {"resource": invoice()}], action="invoices:read",
                       token=token)
    assert (many[0].allow, many[0].reasons) == (single.allow, single.reasons), (many[0], single)
    assert many[0].decision_id  # decided, not refused (a refused entry carries no decision id)
