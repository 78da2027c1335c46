"""Hostile decision-log queries against a real plane: forged cursors, ad hoc explain bodies
and stored records of an odd shape are refused with typed 400s (or explained as not
replayable), never a 500. Each case here was a 500 before the checks it names."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.bundle import build_bundle

from policy_plane.decisions.query import DecisionQuery
from tests.harness.decision_records import publish, record
from tests.harness.plane_bundles import bundle_dir, upload
from tests.harness.plane_world import World

pytestmark = [pytest.mark.nats, pytest.mark.timeout(60)]


def _cursor(raw: bytes | dict[str, Any]) -> str:
    data = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _typed_400(response: httpx.Response, field: str) -> None:
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request" and response.json()["detail"]["field"] == field


def test_forged_cursors_are_refused_400(world: World) -> None:
    plane = world.start()
    publish(world, [record(i) for i in range(3)])
    desc, asc = DecisionQuery().fingerprint(), DecisionQuery(order="asc").fingerprint()
    forged = [
        (b'{"p": [Infinity, 0], "o": "desc", "f": "%s"}' % desc.encode(), "desc"),  # was int(inf): 500
        (b'{"p": [NaN, 0], "o": "desc", "f": "%s"}' % desc.encode(), "desc"),
        ({"p": [1.5e300, 0], "o": "desc", "f": desc}, "desc"),
        ({"p": [2**64, 0], "o": "asc", "f": asc}, "asc"),
        ({"p": "12", "o": "desc", "f": desc}, "desc"),  # was read as position (1, 2)
        ({"p": {"1": 0, "2": 0}, "o": "desc", "f": desc}, "desc"),
        ({"p": [True, 0], "o": "desc", "f": desc}, "desc"),
        ({"p": [-1, 0], "o": "desc", "f": desc}, "desc"),
        ({"p": ["1", "0"], "o": "desc", "f": desc}, "desc"),
        ({"p": [1, 0, 0], "o": "desc", "f": desc}, "desc"),
        ({"p": [1, 0], "o": ["desc"], "f": desc}, "desc"),
        ({"p": [1, 0], "o": "desc", "f": 7}, "desc"),
        (b'{"p": [1, 0], "p": [2, 0], "o": "desc", "f": "%s"}' % desc.encode(), "desc"),
        (b"[" * 20 + b"]" * 20, "desc"),
        (b"[1, 2]", "desc"),
    ]
    with plane.client() as http:
        for raw, order in forged:
            _typed_400(http.get("/v1/decisions", params={"cursor": _cursor(raw), "order": order}), "cursor")
        good = http.get("/v1/decisions", params={"limit": 1}).json()["next_cursor"]
        assert http.get("/v1/decisions", params={"limit": 1, "cursor": good}).status_code == 200


ADHOC = {"service": "billing", "tenant": "acme", "subject": "user:alice",
         "input": {"subject": {"type": "user", "id": "alice"}, "action": {"name": "read"},
                   "resource": {"type": "doc", "id": "d1"}}}


@pytest.mark.parametrize(("change", "field"), [
    ({"bundle_revision": {"r": 1}}, "body"),  # was an unhashable revision: 500
    ({"bundle_revision": ["r1"]}, "body"),
    ({"bundle_revision": "r" * 129}, "body"),
    ({"input": {**ADHOC["input"], "context": 5}}, "input"),  # was {**5}: 500
    ({"input": {**ADHOC["input"], "context": ["x"]}}, "input"),
])
def test_adhoc_explain_bodies_of_the_wrong_shape_are_400(world: World, change: dict[str, Any], field: str) -> None:
    plane = world.start()
    with plane.client() as http:
        _typed_400(http.post("/v1/explain", json={**ADHOC, **change}), field)
        assert http.post("/v1/explain", json=ADHOC).status_code == 200  # still serving, same connection


def test_a_stored_record_without_a_resource_object_is_explained_as_not_replayable(world: World,
                                                                                  tmp_path: Path) -> None:
    plane = world.start()
    status, body = upload(plane, build_bundle(bundle_dir(tmp_path / "b"), "r1", serial=100))
    assert status == 200, body
    odd = [record(1, input={"subject": {"type": "user", "id": "alice"}, "action": {"name": "read"}}),
           record(2, input={**record(2)["input"], "resource": "invoice:i2"}),
           record(3, input={**record(3)["input"], "resource": {"type": "invoice", "properties": [1]}})]
    publish(world, odd)
    with plane.client() as http:
        for i in (1, 2, 3):
            response = http.get(f"/v1/decisions/d{i:04d}/explain")  # was KeyError/TypeError: 500
            assert response.status_code == 200, response.text
            assert response.json()["reevaluation"]["error"]["error"] == "input_malformed"


WILDCARD_TENANTS = ["*", ">", "acme.>", "acme.*", "acme,globex", " acme", "acme ", "ACME", "acme\u200b", "\u0430cme",
                    "=", "=61636d65", "acme.globex", "tg.decisions.billing.globex", "%2A"]


def test_a_tenant_or_service_filter_is_one_name_never_a_subject_pattern(world: World) -> None:
    """The tenant filter becomes a NATS subject filter on TG_DECISIONS: a wildcard, a dotted or
    look-alike name, or the escaped form of a name, selects no other tenant's records (the page
    of ``*`` is empty, not everyone's); the service filter is a service name or 400."""
    plane = world.start()
    publish(world, [record(i) for i in range(3)])
    publish(world, [record(i, tenant="globex") for i in range(10, 13)], tenant="globex")
    publish(world, [record(i, tenant="acme.globex") for i in range(20, 22)], tenant="acme.globex")
    with plane.client() as http:
        plane.wait_until(lambda s: s["decisions"]["received"] >= 8)
        assert len(http.get("/v1/decisions", params={"tenant": "globex"}).json()["decisions"]) == 3
        for tenant in WILDCARD_TENANTS:
            for path in ("/v1/decisions", "/v1/decisions/d0010"):
                answer = http.get(path, params={"tenant": tenant})
                if tenant == "acme.globex" and path == "/v1/decisions":
                    assert {d["tenant"] for d in answer.json()["decisions"]} == {"acme.globex"}
                    continue
                if path == "/v1/decisions":
                    assert answer.status_code == 200 and answer.json()["decisions"] == [], tenant
                else:  # globex's record, asked for under another tenant's name
                    assert (answer.status_code, answer.json()["error"]) == (404, "not_found"), tenant
        for service in ("*", ">", "billing.>", "billing.*", "Billing", "billing.acme"):
            _typed_400(http.get("/v1/decisions", params={"service": service}), "service")
            _typed_400(http.get("/v1/decisions/d0010", params={"service": service}), "service")
