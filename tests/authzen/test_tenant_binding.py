"""Where a tokenless caller's tenant comes from: ``--tenant`` or its PEP key, never the request.

Real sidecars, real tokens minted by the edge key, real HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from tenantguard.errors import ConfigError
from tenantguard.identity.tokens import mint

from authz_sidecar.config import SidecarConfig
from authz_sidecar.pep import PepKeys, secret_digest
from authz_sidecar.runtime import Sidecar
from tests.harness.sidecar_process import SidecarProcess, drain, start_sidecar

from .conftest import TENANT, TodoWorld

RICK = "CiRmZDA2MTRkMy1jMzlhLTQ3ODEtYjdiZC04Yjk2ZjVhNTEwMGQSBWxvY2Fs"
CREATE = {"subject": {"type": "user", "id": RICK}, "action": {"name": "can_create_todo"},
          "resource": {"type": "todo", "id": "todo-1"}}


def token(world: TodoWorld, tenant: str, sub: str = RICK) -> str:
    return mint(world.edge, issuer="edge", sub=sub, tenant_id=tenant, audience="todo")


def ask(proc: SidecarProcess, body: dict[str, Any], authorization: str | None = None,
        path: str = "/access/v1/evaluation") -> httpx.Response:
    headers = {"Authorization": authorization} if authorization else {}
    return httpx.post(proc.base_url + path, json=body, headers=headers)


# -- --tenant ------------------------------------------------------------------------------


def test_single_tenant_answers_its_own_tokens(single_tenant: SidecarProcess, todo_world: TodoWorld) -> None:
    response = ask(single_tenant, CREATE, f"Bearer {token(todo_world, TENANT)}")
    assert response.status_code == 200 and response.json()["decision"] is True


def test_single_tenant_refuses_another_tenants_token(single_tenant: SidecarProcess, todo_world: TodoWorld) -> None:
    """A valid token of globex is not answered by acme's sidecar, on every door, each entry."""
    bearer = f"Bearer {token(todo_world, 'globex')}"
    body = ask(single_tenant, CREATE, bearer).json()
    assert body == {"decision": False, "context": {**body["context"], "reasons": ["tenant_not_served"]}}
    boxcar = {**CREATE, "evaluations": [{}, {"action": {"name": "can_read_todos"}}]}
    bare = ask(single_tenant, boxcar, bearer, "/access/v1/evaluations").json()
    assert bare == {"evaluations": [{"decision": False}] * 2}  # AuthZEN's bare entries unless context is asked for
    batch = ask(single_tenant, {**boxcar, "options": {"tenantguard_context": True}}, bearer,
                "/access/v1/evaluations").json()
    assert [e["context"]["reasons"] for e in batch["evaluations"]] == [["tenant_not_served"]] * 2
    assert all(len(e["context"]["decision_id"]) == 32 for e in batch["evaluations"])
    native = httpx.post(f"{single_tenant.base_url}/v1/check", json=CREATE, headers={"Authorization": bearer}).json()
    assert native["allow"] is False and native["reasons"] == ["tenant_not_served"]


def test_single_tenant_refuses_another_tenants_exchange(single_tenant: SidecarProcess,
                                                        todo_world: TodoWorld) -> None:
    form = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": token(todo_world, "globex"),
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "audience": "billing"}
    response = httpx.post(f"{single_tenant.base_url}/oauth2/token", data=form)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert response.json()["error_description"].startswith("tenant_not_served")


def test_single_tenant_native_door_binds_the_tenant_too(single_tenant: SidecarProcess) -> None:
    """The native door (the local service's) asks tokenless questions in --tenant too."""
    native = httpx.post(f"{single_tenant.base_url}/v1/check", json=CREATE).json()
    assert native["allow"] is True
    tenancy = httpx.get(f"{single_tenant.base_url}/v1/status").json()["tenancy"]
    assert tenancy == {"tenant": TENANT, "pep_keys": 0, "require_token": False}


# -- --pep-keys ------------------------------------------------------------------------------


def test_a_pep_key_binds_its_own_tenant(pep_keyed: SidecarProcess, todo_world: TodoWorld) -> None:
    assert ask(pep_keyed, CREATE, f"Bearer {todo_world.acme_key}").json()["decision"] is True
    # globex's key: the question is globex's, where no todo data says anything about acme's users
    body = ask(pep_keyed, {**CREATE, "subject": {**CREATE["subject"], "properties": {"tenant_id": TENANT}}},
               f"Bearer {todo_world.globex_key}").json()
    assert body["decision"] is False and body["context"]["reasons"] == ["tenant_mismatch"]


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-key-nor-a-token", "Basic abc", "Bearer"])
def test_with_pep_keys_a_credential_is_required(pep_keyed: SidecarProcess, authorization: str | None) -> None:
    response = ask(pep_keyed, CREATE, authorization)
    assert response.status_code == 401
    assert response.json()["error"] in {"token_missing", "token_malformed"}
    assert "www-authenticate" in response.headers


def test_with_pep_keys_a_token_still_works(pep_keyed: SidecarProcess, todo_world: TodoWorld) -> None:
    assert ask(pep_keyed, CREATE, f"Bearer {token(todo_world, TENANT)}").json()["decision"] is True


def test_require_token_refuses_a_pep_key(todo_world: TodoWorld) -> None:
    proc = start_sidecar(todo_world.args("--pep-keys", str(todo_world.pep_keys_file), "--require-token"))
    drain(proc)
    try:
        refused = ask(proc, CREATE, f"Bearer {todo_world.acme_key}")
        allowed = ask(proc, CREATE, f"Bearer {token(todo_world, TENANT)}")
    finally:
        proc.stop()
    assert refused.status_code == 401 and refused.json()["error"] == "token_missing"
    assert allowed.json()["decision"] is True


# -- configuration ------------------------------------------------------------------------------


def _keys_file(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": entries}))
    return path


@pytest.mark.parametrize("entries", [
    [],
    [{"name": "a", "tenant": "acme", "secret_sha256": "abc"}],
    [{"name": "a", "tenant": "acme", "secret_sha256": "zz" * 32}],
    [{"name": "a", "tenant": "acme", "secret": "plain"}],
    [{"name": "a", "tenant": "", "secret_sha256": secret_digest("s" * 40)}],
    [{"name": "a", "tenant": "acme", "secret_sha256": secret_digest("s" * 40)},
     {"name": "b", "tenant": "globex", "secret_sha256": secret_digest("s" * 40)}],
])
def test_bad_pep_key_files_stop_the_start(tmp_path: Path, entries: list[dict[str, Any]]) -> None:
    with pytest.raises(ConfigError):
        PepKeys.load(_keys_file(tmp_path, entries))


def test_pep_keys_must_agree_with_tenant(todo_world: TodoWorld) -> None:
    config = SidecarConfig(service="todo", tenant=TENANT, pep_keys_file=todo_world.pep_keys_file)
    with pytest.raises(ConfigError, match="--tenant"):
        Sidecar.from_config(config)


def test_match_finds_the_key_and_nothing_else(todo_world: TodoWorld) -> None:
    keys = PepKeys.load(todo_world.pep_keys_file)
    found = keys.match(todo_world.globex_key)
    assert found is not None and found.tenant == "globex"
    assert keys.match(todo_world.globex_key[:-1]) is None and keys.match("") is None


@pytest.mark.parametrize("kwargs", [{"tenant": "a b"}, {"tenant": ""}, {"public_url": "ftp://x"},
                                    {"public_url": "https://x/?q=1"}, {"public_url": "pdp.example.com"}])
def test_bad_settings_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        SidecarConfig(service="todo", **kwargs)
