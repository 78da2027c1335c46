"""Attacks on staged rollouts at a real plane: scopes a bundle was not written for, the read-only
operator token, forged rollout ids and steps out of order."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tenantguard.bundle import build_bundle
from tenantguard.feed import topology as topo
from tenantguard.identity.keys import write_private

from tests.harness.nats_raw import publish_js, read_stream
from tests.harness.plane_bundles import bundle_dir
from tests.harness.plane_process import PlaneProcess
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(120)]

OPERATOR_TOKEN = "operator-token-" + "d4" * 16
GZIP = {"Content-Type": "application/gzip"}


def stage(http: httpx.Client, archive: bytes, stages: str) -> httpx.Response:
    return http.post("/v1/bundles", params={"stages": stages}, content=archive, headers=GZIP)


def test_a_staged_rollout_reaches_only_the_services_its_bundle_declares(world: World, plane: PlaneProcess,
                                                                        tmp_path: Path) -> None:
    """A bundle written and reviewed for billing (``metadata.services``) staged onto orders, or
    onto ``all``, was announced there and activated by those sidecars: refused, nothing stored."""
    http = plane.client()
    billing_only = build_bundle(bundle_dir(tmp_path / "b", services=["billing"]), "r1", serial=1)
    for stages in ("orders", "billing;orders", "billing;all", "all"):
        refused = stage(http, billing_only, stages)
        assert refused.status_code == 400, (stages, refused.text)
        body = refused.json()
        assert body["error"] == "invalid_request" and body["detail"]["field"] == "stages"
        assert body["detail"]["declared"] == ["billing"] and "billing" not in body["detail"]["undeclared"]
    assert http.get("/v1/rollouts").json()["rollout"] is None
    assert plane.status()["bundles"] == {}  # no scope announced anything
    started = stage(http, billing_only, "billing")
    assert started.status_code == 200, started.text
    assert started.json()["rollout"]["reached"] == ["billing"]
    # a bundle that declares no services is for every scope: stages may name any, and all last
    anywhere = build_bundle(bundle_dir(tmp_path / "a"), "r2", serial=2)
    assert stage(http, anywhere, "orders;all").status_code == 200


def test_the_operator_token_reads_no_rollout_and_changes_none(world: World, tmp_path: Path) -> None:
    operator_file = world.root / "operator.token"
    write_private(operator_file, OPERATOR_TOKEN.encode())
    plane = world.start("--operator-token-file", str(operator_file))
    admin = plane.client()
    started = stage(admin, build_bundle(bundle_dir(tmp_path / "a"), "r1", serial=1), "billing;orders")
    assert started.status_code == 200, started.text
    rollout = started.json()["rollout"]["id"]
    operator = plane.client(OPERATOR_TOKEN)
    refused = [operator.get("/v1/rollouts"),
               *(operator.post(f"/v1/rollouts/{rollout}/{step}") for step in ("advance", "halt", "resume", "abort")),
               stage(operator, build_bundle(bundle_dir(tmp_path / "o"), "r9", serial=9), "billing"),
               operator.post("/v1/bundles/rollback", json={"scope": "billing"})]
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert all(r.json()["error"] == "forbidden" for r in refused)
    after = admin.get("/v1/rollouts").json()["rollout"]
    assert (after["stage"], after["status"], len(after["history"])) == (0, "in_progress", 1)


def test_forged_ids_and_steps_out_of_order_change_nothing(world: World, plane: PlaneProcess, tmp_path: Path) -> None:
    http = plane.client()
    started = stage(http, build_bundle(bundle_dir(tmp_path / "a"), "r1", serial=1), "billing;orders;all")
    rollout = started.json()["rollout"]["id"]
    for forged in ("r1.2", rollout + "x", "..", "r1.1%2F..%2Fadvance", "a" * 161):
        answer = http.post(f"/v1/rollouts/{forged}/advance")
        assert answer.status_code in (404, 400, 422), (forged, answer.status_code)
        assert answer.headers["content-type"].startswith("application/json")
    assert http.post(f"/v1/rollouts/{rollout}/rewind").status_code in (400, 404, 422)
    assert http.post(f"/v1/rollouts/{rollout}/resume").json()["error"] == "rollout_conflict"  # not halted
    assert http.post(f"/v1/rollouts/{rollout}/halt").status_code == 200
    halted = http.post(f"/v1/rollouts/{rollout}/advance")
    assert (halted.status_code, halted.json()["error"]) == (409, "rollout_conflict")
    second = stage(http, build_bundle(bundle_dir(tmp_path / "b"), "r2", serial=2), "billing")
    assert (second.status_code, second.json()["error"]) == (409, "rollout_conflict")  # one at a time
    assert http.post(f"/v1/rollouts/{rollout}/abort").status_code == 200
    assert http.post(f"/v1/rollouts/{rollout}/resume").json()["error"] == "rollout_conflict"
    assert http.post(f"/v1/rollouts/{rollout}/advance").json()["error"] == "rollout_conflict"
    final = http.get("/v1/rollouts").json()
    assert final["rollout"]["reached"] == ["billing"] and "orders" not in final["scopes"]


def test_replayed_rollout_states_never_reopen_an_aborted_rollout(world: World, plane: PlaneProcess,
                                                                  tmp_path: Path) -> None:
    """Someone with NATS write access stores every genuine, older ``rollout.state`` again (stage 0
    in progress, then halted) after an abort: the running replica and one started afterwards both
    keep the aborted state, and neither advances it."""
    http = plane.client()
    rollout = stage(http, build_bundle(bundle_dir(tmp_path / "a"), "r1", serial=1), "billing;orders").json()["rollout"]
    genuine = [m.data for m in read_stream(world.nats.url, topo.STREAM_ROLLOUTS)]  # in progress, stage 0
    assert http.post(f"/v1/rollouts/{rollout['id']}/halt").status_code == 200
    genuine += [m.data for m in read_stream(world.nats.url, topo.STREAM_ROLLOUTS)]  # halted
    assert http.post(f"/v1/rollouts/{rollout['id']}/abort").status_code == 200
    assert len(set(genuine)) >= 2
    for old in genuine * 2:  # every older state, replayed twice, after the abort
        publish_js(world.nats.url, topo.SUBJECT_ROLLOUT, old)
    later = world.start()
    for replica in (plane, later):
        view = replica.client().get("/v1/rollouts").json()["rollout"]
        assert (view["status"], view["stage"], view["reached"]) == ("aborted", 0, ["billing"]), replica.base_url
        refused = replica.client().post(f"/v1/rollouts/{rollout['id']}/advance")
        assert (refused.status_code, refused.json()["error"]) == (409, "rollout_conflict")
    assert "orders" not in later.status()["bundles"]
