"""A sidecar whose exchange key is revoked stops signing with it: new key, persisted, registered."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import jwt
from tenantguard.exchange import TOKEN_TYPE_JWT, ExchangeRequest
from tenantguard.identity.keys import SigningKey
from tenantguard.identity.tokens import mint

from authz_sidecar.config import SidecarConfig
from authz_sidecar.registration import PlaneRegistrar
from authz_sidecar.runtime import Sidecar
from tests.harness.sidecar_world import World


def exchanged_kid(sidecar: Sidecar, world: World) -> str:
    subject = mint(world.edge, issuer="edge", sub="alice", tenant_id="acme", audience="orders", roles=["editor"])
    result = asyncio.run(sidecar.exchange.exchange(ExchangeRequest(subject, TOKEN_TYPE_JWT, "billing", None)))
    return str(jwt.get_unverified_header(result.access_token)["kid"])


def test_a_revoked_exchange_key_is_replaced_persisted_trusted_and_registered(world: World, tmp_path: Path) -> None:
    config = SidecarConfig(service="orders", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
                           trust_file=world.trust_file, state_dir=tmp_path / "state")
    sidecar = Sidecar.from_config(config)
    registrar = sidecar.exchange_keys.registrar = PlaneRegistrar("http://127.0.0.1:9", "join-" + "s" * 16)
    old = sidecar.exchange_keys.own_key.kid
    assert exchanged_kid(sidecar, world) == old
    assert sidecar.exchange_keys.rotate_if_revoked() is False  # nothing revoked: nothing happens

    sidecar.revocations.revoke_kid(old)
    assert sidecar.exchange_keys.rotate_if_revoked() is True
    new = sidecar.exchange_keys.own_key.kid
    assert new != old and exchanged_kid(sidecar, world) == new
    assert old not in sidecar.trust and new in sidecar.trust
    key_file = tmp_path / "state" / "exchange" / "signing-key.pem"
    assert SigningKey.load(key_file).kid == new and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert registrar.kid == new and registrar.state == "pending"
    assert json.loads(json.dumps(sidecar.exchange.jwks()))["keys"][0]["kid"] == new
    assert sidecar.exchange_keys.rotate_if_revoked() is False  # the new key is not revoked
    assert Sidecar.from_config(config).exchange_keys.own_key.kid == new  # a restart keeps the replacement
