"""Token trust merge semantics (authz_sidecar.runtime): in process, no processes needed.

* the own exchange key is always trusted, unless the plane withdraws it after listing it;
* without NATS the ``--trust`` file is the whole set;
* with NATS the file is only the bootstrap: the plane's set replaces it at the first update.

The end-to-end half (a real sidecar drops its file's key once the plane's set arrives) is
``test_distribution.py::test_a_wrong_join_secret_is_refused_and_the_key_never_published``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tenantguard.errors import TokenError
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet
from tenantguard.identity.tokens import mint

from authz_sidecar.config import SidecarConfig
from authz_sidecar.runtime import Sidecar


@pytest.fixture
def keys() -> dict[str, SigningKey]:
    return {name: SigningKey.generate() for name in ("edge", "local", "plane", "peer")}


def _config(tmp_path: Path, keys: dict[str, SigningKey], *, nats: bool) -> SidecarConfig:
    trust_file = tmp_path / "trust.json"
    TrustSet([TrustedKey.of(keys["local"].public_key, "local")]).save(trust_file)
    plane_pem = tmp_path / "plane.pem"
    plane_pem.write_bytes(keys["plane"].public_pem())
    extra = {"nats_url": "nats://127.0.0.1:1", "plane_key": plane_pem} if nats else {}
    return SidecarConfig(service="billing", trust_file=trust_file, grpc_port=None, **extra)  # type: ignore[arg-type]


def _verifies(sidecar: Sidecar, key: SigningKey, issuer: str) -> bool:
    act = {"sub": "svc:" + issuer.removeprefix("sidecar:")} if issuer.startswith("sidecar:") else None
    token = mint(key, issuer=issuer, sub="alice", tenant_id="acme", audience="billing", act=act)
    try:
        sidecar.verifier.verify(token)
    except TokenError:
        return False
    return True


def test_without_nats_the_trust_file_and_the_own_key_are_the_set(tmp_path: Path, keys: dict[str, SigningKey]) -> None:
    sidecar = Sidecar.from_config(_config(tmp_path, keys, nats=False))
    own = sidecar.exchange.key
    assert {k.kid for k in sidecar.trust} == {keys["local"].kid, own.kid}
    assert sidecar.trust.get(own.kid).issuer == "sidecar:billing"  # type: ignore[union-attr]
    assert _verifies(sidecar, keys["local"], "local") and _verifies(sidecar, own, "sidecar:billing")
    status = sidecar.status()["trust"]
    assert status["source"] == "local" and status["own_key_trusted"] and status["issuers"] == {
        "local": 1, "sidecar:billing": 1}


def test_with_nats_the_plane_set_replaces_the_file_bootstrap(tmp_path: Path, keys: dict[str, SigningKey]) -> None:
    sidecar = Sidecar.from_config(_config(tmp_path, keys, nats=True))
    own = sidecar.exchange.key
    assert _verifies(sidecar, keys["local"], "local")  # bootstrap: before the plane has spoken
    plane_set = [TrustedKey.of(keys["edge"].public_key, "edge"),
                 TrustedKey.of(keys["peer"].public_key, "sidecar:orders")]
    sidecar.replace_trust(plane_set)
    assert {k.kid for k in sidecar.trust} == {keys["edge"].kid, keys["peer"].kid, own.kid}
    assert not _verifies(sidecar, keys["local"], "local")  # the file's key is gone: the plane is authoritative
    assert _verifies(sidecar, keys["edge"], "edge") and _verifies(sidecar, keys["peer"], "sidecar:orders")
    assert _verifies(sidecar, own, "sidecar:billing")  # own key kept although the plane does not list it yet
    status = sidecar.status()["trust"]
    assert status["source"] == "plane" and status["own_key_trusted"] and not status["own_key_in_plane_set"]


def test_a_key_the_plane_withdraws_is_dropped_even_the_own_one(tmp_path: Path, keys: dict[str, SigningKey]) -> None:
    sidecar = Sidecar.from_config(_config(tmp_path, keys, nats=True))
    own = TrustedKey.of(sidecar.exchange.key.public_key, "sidecar:billing")
    edge = TrustedKey.of(keys["edge"].public_key, "edge")
    sidecar.replace_trust([edge, own])  # registered: the plane lists it
    assert sidecar.status()["trust"]["own_key_in_plane_set"]
    sidecar.replace_trust([edge])  # an admin removed it at the plane
    assert own.kid not in sidecar.trust and not sidecar.status()["trust"]["own_key_trusted"]
    assert not _verifies(sidecar, sidecar.exchange.key, "sidecar:billing")
    sidecar.replace_trust([edge])  # stays withdrawn
    assert own.kid not in sidecar.trust
    sidecar.replace_trust([edge, own])  # registered again
    assert own.kid in sidecar.trust and _verifies(sidecar, sidecar.exchange.key, "sidecar:billing")


def test_the_join_secret_never_shows(tmp_path: Path, keys: dict[str, SigningKey]) -> None:
    secret = "billing-join-secret-" + "k3" * 16
    secret_file = tmp_path / "join.secret"
    secret_file.write_text(secret + "\n")
    secret_file.chmod(0o600)
    config = SidecarConfig(service="billing", grpc_port=None, plane_url="http://127.0.0.1:1",
                           join_secret_file=secret_file)
    sidecar = Sidecar.from_config(config)
    assert sidecar.exchange_keys.registrar is not None and sidecar.exchange_keys.registrar.state == "pending"
    assert secret not in repr(sidecar.exchange_keys.registrar) and secret not in str(sidecar.status())
