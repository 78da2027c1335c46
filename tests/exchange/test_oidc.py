"""Edge mode: external IdP tokens verified against a real local HTTP server serving JWKS."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from tenantguard import errors
from tenantguard.identity.oidc import EdgeConfig, EdgeTenant, EdgeVerifier, JwksCache
from tenantguard.identity.revocations import RevocationList

from tests.harness.forged_tokens import signed_text

from .idp import LocalIdP


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def server() -> Any:
    idp = LocalIdP()
    idp.realm("acme")
    idp.realm("globex", "ES256")
    idp.realm("initech", "EdDSA")
    yield idp
    idp.close()


def config(idp: LocalIdP, **kw: Any) -> EdgeConfig:
    tenants = [EdgeTenant.from_wire(idp.tenant_config(name, name)) for name in ("acme", "globex", "initech")]
    return EdgeConfig(tenants=tuple(tenants), **{"min_refetch_interval": 30, "http_timeout": 1, **kw})


@pytest.fixture()
async def verifier(server: LocalIdP) -> AsyncIterator[tuple[EdgeVerifier, Clock]]:
    clock = Clock()
    cfg = config(server)
    v = EdgeVerifier(cfg, jwks=JwksCache(ttl=cfg.jwks_ttl, min_refetch_interval=cfg.min_refetch_interval,
                                         timeout=cfg.http_timeout, clock=clock))
    yield v, clock
    await v.aclose()


@pytest.mark.parametrize("realm", ["acme", "globex", "initech"])  # RS256, ES256, EdDSA
async def test_each_algorithm_verifies_and_maps(server: LocalIdP, verifier: Any, realm: str) -> None:
    v, _ = verifier
    identity = await v.verify(server.realms[realm].token(sub="alice", groups=["editor", "viewer"]))
    assert (identity.sub, identity.tenant_id, identity.roles) == ("alice", realm, ("editor", "viewer"))


@pytest.mark.parametrize("configured", ["Ed25519", "EdDSA"])
async def test_an_idp_that_names_eddsa_ed25519_as_rfc_9864_does_verifies(server: LocalIdP, configured: str) -> None:
    """Its JWKS says ``"alg": "Ed25519"``, and so do its tokens; configured under either name."""
    server.realm("hooli", "Ed25519").add_key("hooli-rsa", "RS256")  # published beside it
    tenant = EdgeTenant.from_wire({**server.tenant_config("hooli", "hooli"), "algorithms": [configured]})
    cfg = EdgeConfig(tenants=(tenant,), min_refetch_interval=30, http_timeout=1)
    v = EdgeVerifier(cfg, jwks=JwksCache(ttl=cfg.jwks_ttl, min_refetch_interval=30, timeout=1))
    try:
        assert [k["alg"] for k in server.realms["hooli"].jwks()["keys"]] == ["Ed25519", "RS256"]
        assert (await v.verify(server.realms["hooli"].token(sub="alice"))).tenant_id == "hooli"
        forged = signed_text(server.realms["hooli"].keys["hooli-rsa"][1], json.dumps(
            {"alg": "Ed25519", "kid": "hooli-rsa"}), json.dumps(jwt.decode(
                server.realms["hooli"].token(), options={"verify_signature": False})))
        with pytest.raises(errors.AlgorithmNotAllowed):  # the name on another key type
            await v.verify(forged)
    finally:
        await v.aclose()


async def test_tenant_comes_from_the_issuer_not_the_claims(server: LocalIdP, verifier: Any) -> None:
    v, _ = verifier
    identity = await v.verify(server.realms["acme"].token(tenant_id="globex"))
    assert identity.tenant_id == "acme"


async def test_jwks_is_cached(server: LocalIdP, verifier: Any) -> None:
    v, _ = verifier
    for _ in range(5):
        await v.verify(server.realms["acme"].token())
    assert server.fetches["acme"] == 1


async def test_ttl_expiry_refetches(server: LocalIdP, verifier: Any) -> None:
    v, clock = verifier
    await v.verify(server.realms["acme"].token())
    clock.now += 301
    await v.verify(server.realms["acme"].token())
    assert server.fetches["acme"] == 2


async def test_unknown_kid_refetches_once_then_rate_limits(server: LocalIdP, verifier: Any) -> None:
    v, clock = verifier
    acme = server.realms["acme"]
    await v.verify(acme.token())
    acme.add_key("acme-k2")  # the IdP rotates: a new key, published
    clock.now += 31
    assert (await v.verify(acme.token(kid="acme-k2"))).sub == "alice"
    assert server.fetches["acme"] == 2
    acme.add_key("acme-k3", publish=False)  # a kid the IdP does not publish
    for _ in range(3):
        with pytest.raises(errors.UnknownKey):
            await v.verify(acme.token(kid="acme-k3"))
    assert server.fetches["acme"] == 2  # within min_refetch_interval: no fetch at all
    clock.now += 31
    with pytest.raises(errors.UnknownKey):
        await v.verify(acme.token(kid="acme-k3"))
    assert server.fetches["acme"] == 3  # one refetch per interval


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], payload: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(payload).encode())}"


async def test_none_and_hmac_are_refused(server: LocalIdP, verifier: Any) -> None:
    v, _ = verifier
    acme = server.realms["acme"]
    payload = jwt.decode(acme.token(), options={"verify_signature": False})
    with pytest.raises(errors.AlgorithmNotAllowed):
        await v.verify(_unsigned({"alg": "none", "kid": "acme-k1"}, payload) + ".")
    # HS256 keyed with the public JWKS document: the classic confusion attack
    secret = json.dumps(acme.jwks()).encode()
    signing_input = _unsigned({"alg": "HS256", "kid": "acme-k1", "typ": "JWT"}, payload)
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    with pytest.raises(errors.AlgorithmNotAllowed):
        await v.verify(f"{signing_input}.{_b64(mac)}")


async def test_alg_not_enabled_for_the_tenant(server: LocalIdP, verifier: Any) -> None:
    v, _ = verifier
    acme = server.realms["acme"]
    acme.add_key("acme-ec", "ES256")  # published, but acme's config allows RS256 only
    with pytest.raises(errors.AlgorithmNotAllowed):
        await v.verify(acme.token(kid="acme-ec"))


@pytest.mark.parametrize(("claims", "error"), [
    ({"aud": "someone-else"}, errors.AudienceInvalid),
    ({"lifetime": -120}, errors.TokenExpired),
    ({"nbf": int(time.time()) + 3600}, errors.TokenNotYetValid),
    ({"sub": ""}, errors.ClaimMissing),
    ({"groups": {"not": "a list"}}, errors.ClaimInvalid),
])
async def test_claim_checks(server: LocalIdP, verifier: Any, claims: dict[str, Any], error: type[Exception]) -> None:
    v, _ = verifier
    with pytest.raises(error):
        await v.verify(server.realms["acme"].token(**claims))


async def test_tampered_token_and_unknown_issuer(server: LocalIdP, verifier: Any) -> None:
    v, _ = verifier
    token = server.realms["acme"].token()
    head, payload, sig = token.split(".")
    changed = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    changed["sub"] = "admin"
    with pytest.raises(errors.SignatureInvalid):
        await v.verify(f"{head}.{_b64(json.dumps(changed).encode())}.{sig}")
    stranger = LocalIdP()
    try:
        stranger.realm("acme")
        assert not v.handles(stranger.realms["acme"].token())
        with pytest.raises(errors.IssuerNotTrusted):
            await v.verify(stranger.realms["acme"].token())
    finally:
        stranger.close()


async def test_revoked_subject_and_tenant(server: LocalIdP) -> None:
    revocations = RevocationList()
    v = EdgeVerifier(config(server), revocations=revocations)
    try:
        revocations.revoke_subject("acme", "alice")
        with pytest.raises(errors.TokenRevoked):
            await v.verify(server.realms["acme"].token())
        revocations.revoke_tenant("globex")
        with pytest.raises(errors.TokenRevoked):
            await v.verify(server.realms["globex"].token(sub="bob"))
    finally:
        await v.aclose()


async def test_unreachable_slow_or_oversized_jwks_is_unavailable(server: LocalIdP) -> None:
    server.oversize = True
    v = EdgeVerifier(config(server))
    try:
        with pytest.raises(errors.Unavailable):
            await v.verify(server.realms["acme"].token())
        server.oversize, server.delay = False, 1.5
        with pytest.raises(errors.Unavailable):
            await v.verify(server.realms["globex"].token())
    finally:
        server.delay = 0
        await v.aclose()
    gone = EdgeConfig(tenants=(EdgeTenant(tenant_id="x", issuer="https://idp.invalid/x",
                                          jwks_uri="http://127.0.0.1:1/jwks", audience="a"),), http_timeout=1)
    v = EdgeVerifier(gone)
    try:
        with pytest.raises(errors.Unavailable):
            await v.jwks.key("http://127.0.0.1:1/jwks", "k")
    finally:
        await v.aclose()


def test_role_map_and_claim_paths(server: LocalIdP) -> None:
    tenant = EdgeTenant.from_wire({**server.tenant_config("acme", "acme"),
                                   "claims": {"sub": "email", "roles": "realm_access.roles"},
                                   "role_map": {"acme-editors": "editor"}})
    from tenantguard.identity.oidc import _roles

    assert _roles({"realm_access": {"roles": ["acme-editors", "acme-admins"]}}, tenant) == ("editor",)
    assert tenant.sub_claim == "email"


@pytest.mark.parametrize("patch", [
    {"jwks_uri": "http://idp.example.com/jwks"},  # plain http off loopback
    {"issuer": "not a url"},
    {"algorithms": ["HS256"]},
    {"algorithms": ["none"]},
    {"algorithms": []},
    {"audience": ""},
    {"role_map": {"a": 1}},
])
def test_config_is_validated(server: LocalIdP, patch: dict[str, Any]) -> None:
    with pytest.raises(errors.ConfigError):
        EdgeTenant.from_wire({**server.tenant_config("acme", "acme"), **patch})


def test_one_issuer_one_tenant_and_file_loading(server: LocalIdP, tmp_path: Path) -> None:
    doc = {"tenants": [server.tenant_config("acme", "acme"), server.tenant_config("acme", "globex")]}
    with pytest.raises(errors.ConfigError):
        EdgeConfig.from_wire(doc)
    path = tmp_path / "edge.json"
    path.write_text(json.dumps({"tenants": [server.tenant_config("acme", "acme")], "jwks_ttl": 60}))
    assert EdgeConfig.load(path).jwks_ttl == 60
    path.write_text("{")
    with pytest.raises(errors.ConfigError):
        EdgeConfig.load(path)


def _text_token(realm: Any, tail: str = "", **raw: str) -> str:
    """An IdP token built as JSON text and signed with the realm's real key (initech: Ed25519)."""
    kid, (alg, key) = next(iter(realm.keys.items()))
    now = int(time.time())
    members = {"iss": json.dumps(realm.issuer), "sub": '"alice"', "aud": '"edge-app"', "iat": str(now),
               "exp": str(now + 300), "groups": '["editor"]', **raw}
    body = "{" + ",".join(f'"{k}":{v}' for k, v in members.items()) + tail + "}"
    return signed_text(key, json.dumps({"alg": alg, "kid": kid}), body)


async def test_hand_built_idp_token_control(server: LocalIdP, verifier: Any) -> None:
    v, _ = verifier
    assert (await v.verify(_text_token(server.realms["initech"]))).tenant_id == "initech"


@pytest.mark.parametrize(("tail", "raw", "error"), [
    (',"iss":"https://elsewhere.example"', {}, errors.TokenMalformed),
    (',"sub":"admin"', {}, errors.TokenMalformed),
    (',"aud":"edge-app"', {}, errors.TokenMalformed),
    ("", {"exp": "NaN"}, errors.TokenMalformed),
    ("", {"iat": "NaN"}, errors.TokenMalformed),
    ("", {"nbf": "-Infinity"}, errors.TokenMalformed),
    ("", {"exp": "1e400"}, errors.TokenMalformed),
    ("", {"exp": "true"}, errors.ClaimInvalid),
    ("", {"iat": '"now"'}, errors.ClaimInvalid),
    ("", {"nbf": "null"}, errors.ClaimInvalid),
    ("", {"exp": "99999999999999"}, errors.ClaimInvalid),
])
async def test_idp_tokens_are_decoded_strictly(server: LocalIdP, verifier: Any, tail: str, raw: dict[str, str],
                                               error: type[Exception]) -> None:
    v, _ = verifier
    token = _text_token(server.realms["initech"], tail, **raw)
    with pytest.raises(error) as info:
        await v.verify(token)
    assert type(info.value) is error


def test_routing_a_deeply_nested_token_is_no_crash(server: LocalIdP) -> None:
    """handles() reads the issuer before any key is known: it must survive anything."""
    v = EdgeVerifier(config(server))
    assert not v.handles(f"{_b64(b'{}')}.{_b64(b'[' * 5000)}.c2ln")
    assert not v.handles(_text_token(server.realms["initech"], ',"iss":"x"'))
    assert v.handles(_text_token(server.realms["initech"]))


async def test_revoked_idp_jti(server: LocalIdP) -> None:
    revocations = RevocationList()
    v = EdgeVerifier(config(server), revocations=revocations)
    try:
        identity = await v.verify(server.realms["acme"].token(jti="idp-1"))
        assert (identity.jti, identity.iat) == ("idp-1", float(int(identity.iat)))
        revocations.revoke_jti("idp-1", time.time() + 600)
        with pytest.raises(errors.TokenRevoked):
            await v.verify(server.realms["acme"].token(jti="idp-1"))
    finally:
        await v.aclose()
