"""The AuthZEN working group's Todo interop table, row by row, through real HTTP.

The interop PEP sends no context token and names no tenant; a sidecar started with
``--tenant acme`` (or one that binds the PEP's key to acme) answers it. Every row of the
table is sent as the working group's runner sends it (``runner.ts``: the request body as
is, to ``/access/v1/evaluation`` or ``/access/v1/evaluations``) and its decision asserted.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.harness.sidecar_process import SidecarProcess

from .conftest import TENANT, TodoWorld, decision_table

TABLE = decision_table()
EVALUATION = TABLE["evaluation"]
EVALUATIONS = TABLE["evaluations"]


def _row_id(row: dict[str, Any]) -> str:
    request = row["request"]
    return f"{request['subject']['id'][:8]}-{request['action']['name']}-{request.get('resource', {}).get('id', '')}"


def test_the_table_is_the_one_expected() -> None:
    """40 single rows and 3 boxcar rows, both permits and denies (the file was not truncated)."""
    assert len(EVALUATION) == 40 and len(EVALUATIONS) == 3
    assert {row["expected"] for row in EVALUATION} == {True, False}


@pytest.mark.parametrize("row", EVALUATION, ids=[_row_id(r) for r in EVALUATION])
def test_evaluation_row(single_tenant: SidecarProcess, row: dict[str, Any]) -> None:
    response = httpx.post(f"{single_tenant.base_url}/access/v1/evaluation", json=row["request"])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["decision"] is row["expected"], body
    assert set(body) <= {"decision", "context"}
    if not row["expected"]:  # a deny from the policy, never from a missing tenant
        assert "tenant_unknown" not in body["context"]["reasons"]


@pytest.mark.parametrize("row", EVALUATIONS, ids=[str(i) for i in range(len(EVALUATIONS))])
def test_evaluations_row(single_tenant: SidecarProcess, row: dict[str, Any]) -> None:
    response = httpx.post(f"{single_tenant.base_url}/access/v1/evaluations", json=row["request"])
    assert response.status_code == 200, response.text
    body = response.json()
    assert "decision" not in body  # the spec recommends omitting it when evaluations are present
    assert [e["decision"] for e in body["evaluations"]] == [e["decision"] for e in row["expected"]]
    # the working group's runner compares the whole array as JSON text: entries carry nothing else
    assert json.dumps(body["evaluations"]) == json.dumps(row["expected"])


def test_every_row_through_a_pep_key(pep_keyed: SidecarProcess, todo_world: TodoWorld) -> None:
    """The same table with the tenant bound to the PEP's key instead of ``--tenant``."""
    headers = {"Authorization": f"Bearer {todo_world.acme_key}"}
    with httpx.Client(base_url=pep_keyed.base_url, headers=headers) as client:
        got = [client.post("/access/v1/evaluation", json=row["request"]).json()["decision"] for row in EVALUATION]
        batches = [[e["decision"] for e in client.post("/access/v1/evaluations", json=row["request"]).json()
                    ["evaluations"]] for row in EVALUATIONS]
    assert got == [row["expected"] for row in EVALUATION]
    assert batches == [[e["decision"] for e in row["expected"]] for row in EVALUATIONS]


def test_without_a_tenant_every_permit_is_a_deny(todo_world: TodoWorld) -> None:
    """Why the modes exist: a multi-tenant sidecar cannot tell whose question this is."""
    from tests.harness.sidecar_process import drain, start_sidecar

    proc = start_sidecar(todo_world.args())
    drain(proc)
    try:
        permit = next(row for row in EVALUATION if row["expected"])
        body = httpx.post(f"{proc.base_url}/access/v1/evaluation", json=permit["request"]).json()
    finally:
        proc.stop()
    assert body["decision"] is False and body["context"]["reasons"] == ["tenant_unknown"]


def test_the_tenant_is_never_taken_from_the_body(single_tenant: SidecarProcess) -> None:
    permit = next(row for row in EVALUATION if row["expected"])["request"]
    subject = {**permit["subject"], "properties": {"tenant_id": "globex"}}
    body = httpx.post(f"{single_tenant.base_url}/access/v1/evaluation", json={**permit, "subject": subject}).json()
    assert body["decision"] is False and body["context"]["reasons"] == ["tenant_mismatch"]
    same = {**permit["subject"], "properties": {"tenant_id": TENANT}}  # agreeing is fine
    assert httpx.post(f"{single_tenant.base_url}/access/v1/evaluation",
                      json={**permit, "subject": same}).json()["decision"] is True
