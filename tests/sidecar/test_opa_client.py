"""Every public method of the installed opa-python-client, sync and async, against a real sidecar.

The methods are enumerated from the installed classes, so a client release that adds
one fails ``test_every_public_method_is_covered`` until it is driven here too. Each
method either works as against OPA or fails as OPA fails for a refused feature, with a
body the client reads (``code``/``message`` land in the client's exception).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
from opa_client import AsyncOpaClient, OpaClient
from opa_client.errors import (
    ConnectionsError,
    DeleteDataError,
    DeletePolicyError,
    PatchDataError,
    PolicyNotFoundError,
    RegoParseError,
)

from tests.harness.paths import REPO
from tests.harness.sidecar_doors import invoice
from tests.harness.sidecar_process import SidecarProcess, start_sidecar
from tests.harness.sidecar_world import World, token

DECISION_REGO = (REPO / "bundles" / "tenantguard" / "decision.rego").read_text()
OWNED = 'path tenantguard is owned by bundle "tenantguard"'


def public_methods(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, callable) if not name.startswith("_")}


@dataclass
class Ctx:
    """What a check needs: the sidecar with the example bundle, one without a bundle, files."""

    sidecar: SidecarProcess
    empty: SidecarProcess
    world: World
    tmp: Path
    policy_url: str

    def hostport(self, sc: SidecarProcess) -> tuple[str, int]:
        host, port = sc.http.rsplit(":", 1)
        return host, int(port)


@pytest.fixture(scope="module")
def empty(world: World) -> Iterator[SidecarProcess]:
    running = start_sidecar(["--service", "billing", "--trust", str(world.trust_file), "--port", "0",
                             "--grpc-port", "0"])
    yield running
    running.stop()


@pytest.fixture(scope="module")
def policy_server() -> Iterator[str]:
    """A real HTTP server holding a policy, for ``update_policy_from_url``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = DECISION_REGO.encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/decision.rego"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def ctx(sidecar: SidecarProcess, empty: SidecarProcess, world: World, policy_server: str,
        tmp_path_factory: pytest.TempPathFactory) -> Ctx:
    return Ctx(sidecar, empty, world, tmp_path_factory.mktemp("opa-client"), policy_server)


# --------------------------------------------------------------------------- sync client


def sync_client(ctx: Ctx, sc: SidecarProcess | None = None) -> OpaClient:
    host, port = ctx.hostport(sc or ctx.sidecar)
    return OpaClient(host=host, port=port, token=token(ctx.world), retries=0)


def http_error(call: Callable[[], Any]) -> dict[str, Any]:
    """The status and body of the ``requests.HTTPError`` that ``raise_for_status`` raised."""
    with pytest.raises(requests.HTTPError) as err:
        call()
    assert err.value.response is not None
    return {"status": err.value.response.status_code, **err.value.response.json()}


def s_close_connection(c: OpaClient, ctx: Ctx) -> None:
    c.close_connection()


def s_check_connection(c: OpaClient, ctx: Ctx) -> None:
    assert c.check_connection() is True


def s_check_health(c: OpaClient, ctx: Ctx) -> None:
    assert c.check_health() is True
    assert c.check_health({"bundles": True}) is True
    assert c.check_health({"plugins": True}) is True
    empty = sync_client(ctx, ctx.empty)
    assert empty.check_health() is True  # up, says nothing about deciding
    assert empty.check_health({"bundles": True}) is False  # OPA: 500 until bundles are activated
    assert empty.check_health({"plugins": True}) is False
    assert empty.check_health({"plugins": True, "exclude-plugin": "bundle"}) is True


def s_get_config(c: OpaClient, ctx: Ctx) -> None:
    result = c.get_config()["result"]
    assert result["default_decision"] == "/tenantguard/decision"
    assert result["labels"]["service"] == "billing"
    assert result["bundles"]["tenantguard"]["resource"] == "file"
    assert str(ctx.world.root) not in json.dumps(result)  # no file paths, let alone key material


def s_get_metrics(c: OpaClient, ctx: Ctx) -> None:
    assert "tg_ready 1.0" in c.get_metrics()


def s_get_status(c: OpaClient, ctx: Ctx) -> None:
    status = c.get_status()
    assert status["result"]["bundles"]["tenantguard"]["active_revision"] == "1"
    assert status["result"]["plugins"]["bundle"] == {"state": "OK"}
    assert status["bundle_revision"] == "1"  # the sidecar's own status is still all there


def s_wait_for_ready(c: OpaClient, ctx: Ctx) -> None:
    assert c.wait_for_ready(timeout=2, interval=0.05, query={"bundles": True}) is True
    with pytest.raises(ConnectionsError):
        sync_client(ctx, ctx.empty).wait_for_ready(timeout=0.2, interval=0.05, query={"bundles": True})


def s_get_policies_list(c: OpaClient, ctx: Ctx) -> None:
    ids = c.get_policies_list()
    assert "tenantguard/decision.rego" in ids and "tenantguard/exchange.rego" in ids
    assert sync_client(ctx, ctx.empty).get_policies_list() == []


def s_get_policies_info(c: OpaClient, ctx: Ctx) -> None:
    info = c.get_policies_info()
    decision = info["tenantguard/decision.rego"]
    assert decision["path"] == f"{c.root_url}/data/tenantguard"
    assert f"{c.root_url}/data/tenantguard/decision" in decision["rules"]
    assert info["tenantguard/exchange.rego"]["path"] == f"{c.root_url}/data/tenantguard/exchange"


def s_update_policy_from_string(c: OpaClient, ctx: Ctx) -> None:
    with pytest.raises(RegoParseError) as err:
        c.update_policy_from_string(DECISION_REGO, "mine")
    assert (err.value.expression, err.value.message) == ("invalid_parameter", OWNED)
    with pytest.raises(RegoParseError) as err:
        c.update_policy_from_string("package elsewhere\n\nallow := true\n", "elsewhere")
    assert "only from signed bundles" in err.value.message


def s_update_policy_from_file(c: OpaClient, ctx: Ctx) -> None:
    path = ctx.tmp / "policy.rego"
    path.write_text(DECISION_REGO)
    with pytest.raises(RegoParseError) as err:
        c.update_policy_from_file(str(path), "mine")
    assert (err.value.expression, err.value.message) == ("invalid_parameter", OWNED)


def s_update_policy_from_url(c: OpaClient, ctx: Ctx) -> None:
    with pytest.raises(RegoParseError) as err:
        c.update_policy_from_url(ctx.policy_url, "mine")
    assert (err.value.expression, err.value.message) == ("invalid_parameter", OWNED)


def s_update_or_create_data(c: OpaClient, ctx: Ctx) -> None:
    with pytest.raises(RegoParseError) as err:
        c.update_or_create_data({"roles": {}}, "tenantguard/config")
    assert (err.value.expression, err.value.message) == (
        "invalid_parameter", 'path tenantguard/config is owned by bundle "tenantguard"')


def s_patch_data(c: OpaClient, ctx: Ctx) -> None:
    with pytest.raises(PatchDataError) as err:
        c.patch_data("tenantguard/config", [{"op": "add", "path": "/x", "value": 1}])
    assert err.value.expression == "invalid_parameter"


def s_get_data(c: OpaClient, ctx: Ctx) -> None:
    undefined_input = c.get_data("tenantguard/decision")
    assert undefined_input["result"] == {"allow": False, "reasons": ["input_missing"], "high_risk": False}
    asked = c.get_data("tenantguard/decision/allow", {"input": json.dumps(invoice("acme"))})
    assert asked["result"] is True and asked["decision_id"]
    for hidden in ("", "tenantguard", "tenantguard/config"):
        with pytest.raises(PolicyNotFoundError) as err:
            c.get_data(hidden)
        assert err.value.expression == "resource_not_found", hidden
    measured = c.get_data("tenantguard/decision", {"input": json.dumps(invoice("acme")), "metrics": True,
                                                   "provenance": True})
    assert measured["metrics"]["timer_rego_query_eval_ns"] > 0
    assert measured["provenance"]["bundles"] == {"tenantguard": {"revision": "1"}}


def s_policy_to_file(c: OpaClient, ctx: Ctx) -> None:
    assert c.policy_to_file("tenantguard/decision.rego", str(ctx.tmp), "saved.rego") is True
    assert (ctx.tmp / "saved.rego").read_text() == DECISION_REGO


def s_get_policy(c: OpaClient, ctx: Ctx) -> None:
    policy = c.get_policy("tenantguard/decision.rego")["result"]
    assert policy["id"] == "tenantguard/decision.rego" and policy["raw"] == DECISION_REGO
    assert [t["value"] for t in policy["ast"]["package"]["path"]] == ["data", "tenantguard"]
    assert {"head": {"ref": [{"type": "var", "value": "allow"}], "name": "allow"}, "default": True} \
        in policy["ast"]["rules"]
    with pytest.raises(PolicyNotFoundError) as err:
        c.get_policy("tenantguard/nope.rego")
    assert err.value.expression == "resource_not_found"


def s_delete_policy(c: OpaClient, ctx: Ctx) -> None:
    with pytest.raises(DeletePolicyError) as err:
        c.delete_policy("tenantguard/decision.rego")
    assert (err.value.expression, err.value.message) == ("invalid_parameter", OWNED)
    with pytest.raises(DeletePolicyError) as err:
        c.delete_policy("tenantguard/nope.rego")
    assert err.value.expression == "resource_not_found"


def s_delete_data(c: OpaClient, ctx: Ctx) -> None:
    with pytest.raises(DeleteDataError) as err:
        c.delete_data("tenantguard")
    assert (err.value.expression, err.value.message) == ("invalid_parameter", OWNED)


def s_query_rule(c: OpaClient, ctx: Ctx) -> None:
    body = c.query_rule(invoice("acme"), "tenantguard", "decision")
    assert body["result"]["allow"] is True and "metrics" not in body
    body = c.query_rule(invoice("globex"), "tenantguard", "decision",
                        query_params={"metrics": True, "provenance": True, "explain": "full"})
    assert body["result"]["reasons"] == ["tenant_mismatch"]
    assert set(body["metrics"]) == {"timer_rego_input_parse_ns", "timer_rego_query_eval_ns",
                                    "timer_server_handler_ns"}
    assert all(isinstance(v, int) for v in body["metrics"].values())
    assert body["provenance"]["bundles"]["tenantguard"]["revision"] == "1"
    assert "explain=full is not supported" in body["warning"]["message"]
    undefined = c.query_rule(invoice("acme"), "tenantguard.decision", "nope")  # OPA: 200, no "result"
    assert "result" not in undefined and undefined["decision_id"]


def s_ad_hoc_query(c: OpaClient, ctx: Ctx) -> None:
    refused = http_error(lambda: c.ad_hoc_query("x := data.tenantguard.config", invoice("acme")))
    assert refused["status"] == 401 and refused["code"] == "unauthorized"
    assert refused["message"].startswith("request rejected by administrative policy")


def s_bulk_query_rule(c: OpaClient, ctx: Ctx) -> None:
    assert c.bulk_query_rule([], "tenantguard", "decision") == []  # nothing to ask: no request
    refused = http_error(lambda: c.bulk_query_rule([invoice("acme")], "tenantguard", "decision"))
    assert refused["status"] == 401 and refused["code"] == "unauthorized"


def s_compile_query(c: OpaClient, ctx: Ctx) -> None:
    refused = http_error(lambda: c.compile_query("data.tenantguard.decision.allow == true", unknowns=["input"]))
    assert refused["status"] == 401 and refused["code"] == "unauthorized"


SYNC_CHECKS: dict[str, Callable[[OpaClient, Ctx], None]] = {
    name.removeprefix("s_"): fn for name, fn in dict(globals()).items() if name.startswith("s_")}


# --------------------------------------------------------------------------- async client


def async_client(ctx: Ctx, sc: SidecarProcess | None = None) -> AsyncOpaClient:
    host, port = ctx.hostport(sc or ctx.sidecar)
    return AsyncOpaClient(host=host, port=port, token=token(ctx.world), retries=0)


async def refused_status(call: Awaitable[Any]) -> int:
    with pytest.raises(aiohttp.ClientResponseError) as err:
        await call
    return err.value.status


async def a_close_connection(c: AsyncOpaClient, ctx: Ctx) -> None:
    await c.close_connection()
    await c.close_connection()  # idempotent


async def a_check_connection(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert await c.check_connection() is True


async def a_check_health(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert await c.check_health({"bundles": True}) is True
    async with async_client(ctx, ctx.empty) as empty:
        assert await empty.check_health() is True
        assert await empty.check_health({"bundles": True}) is False
        assert await empty.check_health({"plugins": True, "exclude-plugin": "bundle"}) is True


async def a_get_config(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert (await c.get_config())["result"]["default_decision"] == "/tenantguard/decision"


async def a_get_metrics(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert "tg_ready 1.0" in await c.get_metrics()


async def a_get_status(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert (await c.get_status())["result"]["bundles"]["tenantguard"]["active_revision"] == "1"


async def a_wait_for_ready(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert await c.wait_for_ready(timeout=2, interval=0.05, query={"bundles": True}) is True
    async with async_client(ctx, ctx.empty) as empty:
        with pytest.raises(ConnectionsError):
            await empty.wait_for_ready(timeout=0.2, interval=0.05, query={"bundles": True})


async def a_get_policies_list(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert "tenantguard/decision.rego" in await c.get_policies_list()


async def a_get_policies_info(c: AsyncOpaClient, ctx: Ctx) -> None:
    info = await c.get_policies_info()
    assert f"{c.root_url}/data/tenantguard/decision" in info["tenantguard/decision.rego"]["rules"]


async def a_update_policy_from_string(c: AsyncOpaClient, ctx: Ctx) -> None:
    with pytest.raises(RegoParseError) as err:
        await c.update_policy_from_string(DECISION_REGO, "mine")
    assert (err.value.expression, err.value.message) == ("invalid_parameter", OWNED)


async def a_update_policy_from_file(c: AsyncOpaClient, ctx: Ctx) -> None:
    path = ctx.tmp / "async-policy.rego"
    path.write_text(DECISION_REGO)
    with pytest.raises(RegoParseError) as err:
        await c.update_policy_from_file(str(path), "mine")
    assert err.value.message == OWNED


async def a_update_policy_from_url(c: AsyncOpaClient, ctx: Ctx) -> None:
    with pytest.raises(RegoParseError) as err:
        await c.update_policy_from_url(ctx.policy_url, "mine")
    assert err.value.message == OWNED


async def a_update_or_create_data(c: AsyncOpaClient, ctx: Ctx) -> None:
    with pytest.raises(RegoParseError) as err:
        await c.update_or_create_data({"x": 1}, "tenantguard/config")
    assert err.value.expression == "invalid_parameter"


async def a_patch_data(c: AsyncOpaClient, ctx: Ctx) -> None:
    with pytest.raises(PatchDataError) as err:
        await c.patch_data("tenantguard", [{"op": "remove", "path": "/config"}])
    assert (err.value.expression, err.value.message) == ("invalid_parameter", OWNED)


async def a_get_data(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert (await c.get_data("tenantguard/decision/allow"))["result"] is False
    with pytest.raises(PolicyNotFoundError) as err:
        await c.get_data("")
    assert err.value.expression == "resource_not_found"


async def a_policy_to_file(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert await c.policy_to_file("tenantguard/decision.rego", str(ctx.tmp), "async-saved.rego") is True
    assert (ctx.tmp / "async-saved.rego").read_text() == DECISION_REGO


async def a_get_policy(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert (await c.get_policy("tenantguard/decision.rego"))["result"]["raw"] == DECISION_REGO
    with pytest.raises(PolicyNotFoundError):
        await c.get_policy("nope.rego")


async def a_delete_policy(c: AsyncOpaClient, ctx: Ctx) -> None:
    with pytest.raises(DeletePolicyError) as err:
        await c.delete_policy("tenantguard/decision.rego")
    assert err.value.message == OWNED


async def a_delete_data(c: AsyncOpaClient, ctx: Ctx) -> None:
    with pytest.raises(DeleteDataError) as err:
        await c.delete_data("")
    assert err.value.message == "can't write to document root with bundle roots configured"


async def a_query_rule(c: AsyncOpaClient, ctx: Ctx) -> None:
    body = await c.query_rule(invoice("acme"), "tenantguard", "decision", query_params={"metrics": "true"})
    assert body["result"]["allow"] is True and body["metrics"]["timer_rego_query_eval_ns"] > 0


async def a_ad_hoc_query(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert await refused_status(c.ad_hoc_query("x := 1")) == 401


async def a_bulk_query_rule(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert await refused_status(c.bulk_query_rule({"a": invoice("acme")}, "tenantguard", "decision")) == 401


async def a_compile_query(c: AsyncOpaClient, ctx: Ctx) -> None:
    assert await refused_status(c.compile_query("data.tenantguard.decision.allow == true")) == 401


ASYNC_CHECKS: dict[str, Callable[[AsyncOpaClient, Ctx], Awaitable[None]]] = {
    name.removeprefix("a_"): fn for name, fn in dict(globals()).items() if name.startswith("a_")}


# --------------------------------------------------------------------------- the tests


def test_every_public_method_is_covered() -> None:
    assert public_methods(OpaClient) == set(SYNC_CHECKS)
    assert public_methods(AsyncOpaClient) == set(ASYNC_CHECKS)


@pytest.mark.parametrize("method", sorted(SYNC_CHECKS))
def test_sync_client(method: str, ctx: Ctx) -> None:
    client = sync_client(ctx)
    try:
        SYNC_CHECKS[method](client, ctx)
    finally:
        client.close_connection()


@pytest.mark.parametrize("method", sorted(ASYNC_CHECKS))
def test_async_client(method: str, ctx: Ctx) -> None:
    async def run() -> None:
        async with async_client(ctx) as client:
            await ASYNC_CHECKS[method](client, ctx)

    asyncio.run(run())


# --------------------------------------------------------------------------- bodies, as OPA writes them


def test_health_parameters_follow_opa(ctx: Ctx) -> None:
    get = partial(httpx.get, timeout=5)
    unready = get(f"{ctx.empty.base_url}/health?bundles")  # present and empty counts as true
    assert unready.status_code == 500
    assert unready.json()["error"] == "one or more bundles are not activated"
    assert get(f"{ctx.empty.base_url}/health?bundles=false").status_code == 200
    plugins = get(f"{ctx.empty.base_url}/health?plugins=true")
    assert plugins.status_code == 500 and plugins.json()["error"] == "one or more plugins are not up"
    assert get(f"{ctx.empty.base_url}/health",
               params=[("plugins", "true"), ("exclude-plugin", "bundle")]).json() == {"status": "ok"}
    assert get(f"{ctx.sidecar.base_url}/health?bundles=true&plugins=true").status_code == 200


def test_opa_error_bodies_carry_both_codes(ctx: Ctx) -> None:
    hidden = httpx.post(f"{ctx.sidecar.base_url}/v1/data", json={"input": invoice("acme")})
    assert hidden.status_code == 404
    assert {k: hidden.json()[k] for k in ("code", "error")} == {"code": "resource_not_found",
                                                                "error": "path_not_exposed"}
    bad = httpx.post(f"{ctx.sidecar.base_url}/v1/data/tenantguard/decision", content=b"{nope",
                     headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_parameter"
    forged = httpx.post(f"{ctx.sidecar.base_url}/v1/data/tenantguard/decision", json={"input": invoice("acme")},
                        headers={"Authorization": "Bearer eyJhbGciOiJub25lIn0.e30."})
    assert forged.status_code == 401 and forged.json()["code"] == "unauthorized"
    assert forged.headers["www-authenticate"].startswith('Bearer realm="tenantguard"')
    no_input = httpx.post(f"{ctx.sidecar.base_url}/v1/data/tenantguard/decision", json={}).json()
    assert no_input["result"]["reasons"] == ["input_missing"]
    assert no_input["warning"] == {"code": "api_usage_warning", "message": "'input' key missing from the request"}


def test_policy_api_is_loopback_only_like_every_door(ctx: Ctx) -> None:
    """The Policy API hands out Rego source: it sits behind the same loopback guard."""
    from authz_sidecar.http.limits import OPEN_PATHS

    assert not any(p.startswith(("/v1/policies", "/v1/config", "/v1/query")) for p in OPEN_PATHS)
