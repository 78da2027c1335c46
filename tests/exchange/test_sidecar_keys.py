"""A sidecar generates its exchange key at start, serves the public half, and keeps it."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest

from authz_sidecar.config import SidecarConfig
from authz_sidecar.runtime import Sidecar
from tests.harness.sidecar_process import drain, start_sidecar
from tests.harness.sidecar_world import World


def kid_of_run(world: World, *extra: str) -> str:
    proc = start_sidecar(world.args("orders", "--grpc-port", "-1", *extra))
    drain(proc)
    try:
        keys = httpx.get(f"{proc.base_url}/v1/keys").json()["keys"]
    finally:
        proc.stop()
    assert len(keys) == 1 and keys[0]["iss"] == "sidecar:orders" and "d" not in keys[0]
    return str(keys[0]["kid"])


def test_key_is_persisted_0600_and_survives_a_restart(tmp_path: Path) -> None:
    world = World(tmp_path)
    state = tmp_path / "state"
    first = kid_of_run(world, "--state-dir", str(state))
    key_file = state / "exchange" / "signing-key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert kid_of_run(world, "--state-dir", str(state)) == first


def test_without_a_state_dir_the_key_lives_in_memory(tmp_path: Path) -> None:
    """In process (no need for two more processes): a fresh key per start, nothing on disk."""
    world = World(tmp_path)
    config = SidecarConfig(service="orders", bundle_file=world.bundle_file, bundle_keys=(world.plane_pub,),
                           trust_file=world.trust_file)
    first, second = Sidecar.from_config(config), Sidecar.from_config(config)
    assert first.exchange.key.kid != second.exchange.key.kid
    assert first.exchange.jwks()["keys"][0]["iss"] == "sidecar:orders"
    assert not any(tmp_path.rglob("signing-key.pem"))


def test_every_plane_url_of_a_list_must_be_http(tmp_path: Path) -> None:
    from tenantguard.errors import ConfigError

    world = World(tmp_path)
    secret = tmp_path / "join.secret"
    secret.write_text("join-" + "s" * 16)
    secret.chmod(0o600)
    base = {"service": "orders", "bundle_file": world.bundle_file, "bundle_keys": (world.plane_pub,),
            "trust_file": world.trust_file, "join_secret_file": secret}
    SidecarConfig(**base, plane_url="http://plane-0:8080, https://plane-1:8443")  # type: ignore[arg-type]
    for bad in ("http://plane-0:8080,plane-1:8080", "ftp://plane", "http://plane-0:8080,,file:///x"):
        with pytest.raises(ConfigError, match="http:// or https://"):
            SidecarConfig(**base, plane_url=bad)  # type: ignore[arg-type]
