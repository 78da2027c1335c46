"""``--ops-port``: probes and metrics on a listener of their own, nothing else on it.

The kubelet and Prometheus reach a pod on its IP; the decision doors must stay on
loopback. The ops listener answers ``/health``, ``/ready`` and ``/metrics`` to anyone and
every other path (decisions, exchange, status, docs) with 404.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from tenantguard.errors import ConfigError

from authz_sidecar.app import create_ops_app
from authz_sidecar.config import SidecarConfig
from authz_sidecar.runtime import Sidecar
from tests.harness.sidecar_doors import invoice
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World, token

REMOTE = ("203.0.113.9", 5000)  # not loopback: what the kubelet or a scraper looks like


@pytest.fixture(scope="module")
def with_ops(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(world.args("billing", "--ops-port", "0", "--ops-host", "127.0.0.1"))
    yield running
    running.stop()


def test_the_ops_listener_serves_probes_and_metrics_on_its_own_port(with_ops: SidecarProcess, world: World) -> None:
    assert with_ops.ops is not None and with_ops.ops != with_ops.http
    ops = f"http://{with_ops.ops}"
    assert httpx.get(f"{ops}/health").json() == {"status": "ok"}
    assert httpx.get(f"{ops}/ready").json()["bundle_revision"] == "1"
    headers = {"Authorization": f"Bearer {token(world)}"}
    assert httpx.post(f"{with_ops.base_url}/v1/check", json=invoice("acme"), headers=headers).json()["allow"]
    metrics = httpx.get(f"{ops}/metrics")
    assert metrics.status_code == 200 and 'tg_decisions_total{door="native",result="allow"}' in metrics.text
    for method, path in (("POST", "/v1/check"), ("POST", "/access/v1/evaluation"), ("GET", "/v1/status"),
                         ("POST", "/oauth2/token"), ("GET", "/v1/keys"), ("GET", "/docs"), ("GET", "/openapi.json")):
        r = httpx.request(method, f"{ops}{path}", json=invoice("acme"), headers=headers)
        assert r.status_code == 404 and r.json()["error"] == "not_found", (path, r.text)


def test_the_ops_app_answers_remote_callers_but_only_its_three_paths(world: World) -> None:
    sidecar = Sidecar.from_config(SidecarConfig(service="billing", bundle_file=world.bundle_file,
                                                bundle_keys=(world.plane_pub,), trust_file=world.trust_file))

    async def ask(method: str, path: str, body: bytes = b"") -> httpx.Response:
        transport = httpx.ASGITransport(app=create_ops_app(sidecar), client=REMOTE)
        async with httpx.AsyncClient(transport=transport, base_url="http://pod") as http:
            return await http.request(method, path, content=body)

    assert asyncio.run(ask("GET", "/ready")).status_code == 200
    assert asyncio.run(ask("GET", "/metrics")).status_code == 200
    assert asyncio.run(ask("POST", "/v1/check", json.dumps(invoice("acme")).encode())).status_code == 404
    assert asyncio.run(ask("POST", "/health", b"x" * 2048)).status_code == 413  # bodies bounded here too


def test_the_ops_port_must_not_collide_with_the_doors() -> None:
    with pytest.raises(ConfigError):
        SidecarConfig(service="billing", port=8181, ops_port=8181, ops_host="127.0.0.1")
