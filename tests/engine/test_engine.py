"""The embedded engine: prepare/evaluate, errors, entrypoint validation, threads, swaps."""

from __future__ import annotations

import contextvars
import gc
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import regorus
from tenantguard.decision.core import RELATED_EXTENSION
from tenantguard.errors import InvalidInput, PolicyError
from tenantguard.policy.engine import (
    EntrypointInvalid,
    PolicyCompileError,
    PolicyEngine,
    PolicyEvaluationError,
    PreparedPolicy,
    RegorusEngine,
    RegorusPreparedPolicy,
    input_paths,
    to_json_value,
    validate_entrypoint,
)
from tenantguard.policy.testrunner import load_bundle_dir

BUNDLE = Path(__file__).resolve().parents[2] / "bundles" / "tenantguard"

SIMPLE = {
    "simple.rego": """package simple
import rego.v1

default allow := false
allow if input.user in data.simple.admins
echo := input.value
greeting := sprintf("hello %s", [input.user])
tags contains t if { some t in input.tags }
boom := 1 / input.zero
""",
}
SIMPLE_DATA = {"simple": {"admins": ["alice"]}}


@pytest.fixture(scope="module")
def engine() -> RegorusEngine:
    return RegorusEngine()


@pytest.fixture(scope="module")
def simple(engine: RegorusEngine) -> RegorusPreparedPolicy:
    return engine.prepare(SIMPLE, SIMPLE_DATA)


def in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on a fresh thread and return its result (or raise its exception)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# --------------------------------------------------------------------------- prepare / evaluate


def test_implements_the_protocols(engine: RegorusEngine, simple: RegorusPreparedPolicy) -> None:
    chosen: PolicyEngine = engine
    assert isinstance(simple, PreparedPolicy)
    assert chosen is engine
    assert simple.packages == ("data.simple",)


def test_evaluate_returns_rule_values(simple: RegorusPreparedPolicy) -> None:
    assert simple.evaluate("data.simple.allow", {"user": "alice"}) is True
    assert simple.evaluate("data.simple.allow", {"user": "mallory"}) is False
    assert simple.evaluate("data.simple.greeting", {"user": "bob"}) == "hello bob"


def test_sets_come_back_as_sorted_lists(simple: RegorusPreparedPolicy) -> None:
    assert simple.evaluate("data.simple.tags", {"tags": ["b", "a", "b"]}) == ["a", "b"]


def test_undefined_rule_value_is_none(simple: RegorusPreparedPolicy) -> None:
    assert simple.evaluate("data.simple.echo", {}) is None


def test_missing_rule_is_undefined_not_an_error(simple: RegorusPreparedPolicy) -> None:
    assert simple.evaluate("data.simple.nope", {}) is None
    assert simple.evaluate("data.nowhere.at_all", {}) is None


def test_data_documents_and_packages_evaluate_like_the_opa_data_api(
    simple: RegorusPreparedPolicy,
) -> None:
    assert simple.evaluate("data.simple.admins", {}) == ["alice"]
    package = simple.evaluate("data.simple", {"user": "alice", "value": 3, "tags": []})
    assert package["allow"] is True
    assert package["echo"] == 3


def test_input_may_be_any_mapping(simple: RegorusPreparedPolicy) -> None:
    from types import MappingProxyType

    assert simple.evaluate("data.simple.allow", MappingProxyType({"user": "alice"})) is True


def test_input_that_is_not_json_like_is_invalid_input(simple: RegorusPreparedPolicy) -> None:
    with pytest.raises(InvalidInput):
        simple.evaluate("data.simple.allow", {"user": object()})


def test_data_is_snapshotted_at_prepare(engine: RegorusEngine) -> None:
    data = {"simple": {"admins": ["alice"]}}
    policy = engine.prepare(SIMPLE, data)
    data["simple"]["admins"].append("mallory")
    assert policy.evaluate("data.simple.allow", {"user": "mallory"}) is False


def test_prepared_policy_is_immutable(simple: RegorusPreparedPolicy) -> None:
    with pytest.raises(AttributeError):
        simple.packages = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        simple.modules["simple.rego"] = "package evil"  # type: ignore[index]


# --------------------------------------------------------------------------- errors


def test_parse_error_names_the_file(engine: RegorusEngine) -> None:
    modules = {**SIMPLE, "policies/broken.rego": "package broken\nx := if {\n"}
    with pytest.raises(PolicyCompileError) as caught:
        engine.prepare(modules, {})
    assert isinstance(caught.value, PolicyError)
    assert caught.value.file == "policies/broken.rego"
    assert caught.value.line == 2
    assert "policies/broken.rego:2" in caught.value.message
    assert caught.value.to_dict()["detail"]["file"] == "policies/broken.rego"


def test_unsafe_variable_is_a_compile_error_at_prepare(engine: RegorusEngine) -> None:
    modules = {**SIMPLE, "unsafe.rego": "package unsafe\nimport rego.v1\nx if { y > 1 }\n"}
    with pytest.raises(PolicyCompileError) as caught:
        engine.prepare(modules, {})
    assert caught.value.file == "unsafe.rego"
    assert "unsafe" in caught.value.message


def test_rego_v0_syntax_is_rejected(engine: RegorusEngine) -> None:
    with pytest.raises(PolicyCompileError, match=r"old\.rego"):
        engine.prepare({"old.rego": "package old\nallow { true }\n"}, {})


def test_no_modules_is_a_compile_error(engine: RegorusEngine) -> None:
    with pytest.raises(PolicyCompileError):
        engine.prepare({}, {})


def test_data_that_is_not_json_is_a_compile_error(engine: RegorusEngine) -> None:
    with pytest.raises(PolicyCompileError):
        engine.prepare(SIMPLE, {"x": {1, 2}})


def test_missing_entrypoint_fails_prepare(engine: RegorusEngine) -> None:
    engine.prepare(SIMPLE, SIMPLE_DATA, entrypoints=["data.simple.allow", "data.simple.admins"])
    with pytest.raises(PolicyCompileError, match=r"data\.simple\.alow"):
        engine.prepare(SIMPLE, SIMPLE_DATA, entrypoints=["data.simple.alow"])


def test_evaluation_error_is_a_policy_error(simple: RegorusPreparedPolicy) -> None:
    with pytest.raises(PolicyEvaluationError) as caught:
        simple.evaluate("data.simple.boom", {"zero": 0})
    assert isinstance(caught.value, PolicyError)
    assert "divide by zero" in caught.value.message
    assert caught.value.detail["file"] == "simple.rego"
    # The engine is still usable afterwards.
    assert simple.evaluate("data.simple.allow", {"user": "alice"}) is True


def test_error_messages_carry_no_rust_backtrace(simple: RegorusPreparedPolicy) -> None:
    with pytest.raises(PolicyEvaluationError) as caught:
        simple.evaluate("data.simple.boom", {"zero": 0})
    assert "backtrace" not in str(caught.value).lower()


# --------------------------------------------------------------------------- entrypoints


@pytest.mark.parametrize(
    "entrypoint",
    [
        "data.tenantguard.decision",
        "data.a",
        "data.a_b.C9._x",
    ],
)
def test_valid_entrypoints(entrypoint: str) -> None:
    assert validate_entrypoint(entrypoint) == entrypoint


@pytest.mark.parametrize(
    "entrypoint",
    [
        "",
        "data",
        "input.x",
        "tenantguard.decision.core",
        "data.x; true",
        "data.x == data.y",
        "data.x with input as {}",
        'data.x["y"]',
        "data.x[_]",
        "data..x",
        "data.x.",
        "data.1x",
        "data.x\n",
        " data.x",
        "data.x.some",
        "data.x.if",
        "data.é",
        "data." + "a" * 300,
        "http.send({})",
    ],
)
def test_entrypoint_injection_is_rejected(simple: RegorusPreparedPolicy, entrypoint: str) -> None:
    with pytest.raises(EntrypointInvalid) as caught:
        simple.evaluate(entrypoint, {})
    assert isinstance(caught.value, InvalidInput)
    assert caught.value.code == "entrypoint_invalid"


def test_non_string_entrypoint_is_rejected(simple: RegorusPreparedPolicy) -> None:
    with pytest.raises(EntrypointInvalid):
        simple.evaluate(42, {})  # type: ignore[arg-type]


# --------------------------------------------------------------------------- threads


def test_evaluate_works_from_a_thread_that_did_not_prepare(simple: RegorusPreparedPolicy) -> None:
    assert in_thread(lambda: simple.evaluate("data.simple.allow", {"user": "alice"})) is True


def test_prepare_on_one_thread_evaluate_on_another(engine: RegorusEngine) -> None:
    policy = in_thread(lambda: engine.prepare(SIMPLE, SIMPLE_DATA))
    assert policy.evaluate("data.simple.allow", {"user": "alice"}) is True


def test_concurrent_evaluation_from_many_threads_is_correct(
    simple: RegorusPreparedPolicy,
) -> None:
    users = [f"user{i}" for i in range(400)] + ["alice"] * 100

    def decide(user: str) -> tuple[str, Any, Any]:
        return (
            user,
            simple.evaluate("data.simple.allow", {"user": user}),
            simple.evaluate("data.simple.greeting", {"user": user}),
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(decide, users * 4))
    for user, allowed, greeting in results:
        assert allowed is (user == "alice")
        assert greeting == f"hello {user}"


def test_thread_engines_are_released_by_their_own_thread(
    engine: RegorusEngine, capfd: pytest.CaptureFixture[str]
) -> None:
    """A policy dropped while other threads hold engines for it must not break them.

    regorus prints "is being dropped on another thread" (and leaks) when an engine is
    released off its own thread; the per-thread cache must never let that happen.
    """
    holder = {"old": engine.prepare(SIMPLE, SIMPLE_DATA)}
    replacement = engine.prepare(SIMPLE, SIMPLE_DATA)
    ready, release = threading.Event(), threading.Event()
    outcome: list[Any] = []

    def first_use() -> None:  # a separate frame, so no local keeps the old policy alive
        outcome.append(holder["old"].evaluate("data.simple.allow", {"user": "alice"}))

    def worker() -> None:
        first_use()
        ready.set()
        release.wait(10)
        # The old policy is gone; using the new one sweeps the stale engine, on this thread.
        outcome.append(replacement.evaluate("data.simple.allow", {"user": "alice"}))

    thread = threading.Thread(target=worker)
    thread.start()
    ready.wait(10)
    holder.clear()
    gc.collect()
    release.set()
    thread.join()
    gc.collect()
    assert outcome == [True, True]
    assert "another thread" not in capfd.readouterr().err


def test_regorus_engines_are_bound_to_their_thread() -> None:
    """The fact the design rests on: a regorus engine, even clone(), is unusable off-thread."""
    raw = regorus.Engine()
    raw.add_policy("t.rego", "package t\nx := 1\n")
    for use in (lambda: raw.eval_rule("data.t.x"), raw.clone):
        with pytest.raises(BaseException) as caught:
            in_thread(use)
        assert type(caught.value).__name__ == "PanicException"
    assert raw.eval_rule("data.t.x") == 1  # still fine on its own thread


# --------------------------------------------------------------------------- extensions

current_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "current_tenant", default=None
)

EXT_MODULE = {
    "ext.rego": """package ext
import rego.v1

member := tg.related(input.object, "member")
fails := tg.fails(1)
""",
}


def related(obj: str, relation: str) -> bool:
    tenant = current_tenant.get()
    members = {"acme": {("project:p1", "member")}, "globex": set()}
    return (obj, relation) in members.get(tenant or "", set())


def fails(_: Any) -> Any:
    raise RuntimeError("index unavailable")


@pytest.fixture(scope="module")
def with_extensions(engine: RegorusEngine) -> RegorusPreparedPolicy:
    return engine.prepare(
        EXT_MODULE, {}, extensions={"tg.related": (2, related), "tg.fails": (1, fails)}
    )


def decide_as(policy: PreparedPolicy, tenant: str | None, entrypoint: str) -> Any:
    token = current_tenant.set(tenant)
    try:
        return policy.evaluate(entrypoint, {"object": "project:p1"})
    finally:
        current_tenant.reset(token)


def test_extension_sees_the_state_bound_by_the_caller(
    with_extensions: RegorusPreparedPolicy,
) -> None:
    assert decide_as(with_extensions, "acme", "data.ext.member") is True
    assert decide_as(with_extensions, "globex", "data.ext.member") is False
    assert decide_as(with_extensions, None, "data.ext.member") is False


def test_extension_state_is_per_thread_context(with_extensions: RegorusPreparedPolicy) -> None:
    tenants = ["acme", "globex"] * 50
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda t: (t, decide_as(with_extensions, t, "data.ext.member")), tenants)
        )
    assert all(member is (tenant == "acme") for tenant, member in results)


def test_extension_error_is_an_evaluation_error(with_extensions: RegorusPreparedPolicy) -> None:
    with pytest.raises(PolicyEvaluationError, match="index unavailable"):
        decide_as(with_extensions, "acme", "data.ext.fails")


def test_bad_extension_spec_is_rejected(engine: RegorusEngine) -> None:
    with pytest.raises(PolicyCompileError):
        engine.prepare(EXT_MODULE, {}, extensions={"tg related": (2, related)})
    with pytest.raises(PolicyCompileError):
        engine.prepare(EXT_MODULE, {}, extensions={"tg.related": (-1, related)})


# --------------------------------------------------------------------------- swapping revisions


def test_swapping_revisions_is_one_reference_assignment(engine: RegorusEngine) -> None:
    """Deciders read the current reference once per decision; a swap never mixes revisions."""
    revision_1 = engine.prepare({"r.rego": "package r\nrevision := 1\nalso := 1\n"}, {})
    revision_2 = engine.prepare({"r.rego": "package r\nrevision := 2\nalso := 2\n"}, {})
    holder = {"policy": revision_1}
    stop = threading.Event()
    mixed: list[tuple[Any, Any]] = []
    seen: set[Any] = set()

    def decider() -> None:
        while not stop.is_set():
            policy = holder["policy"]  # one read per decision
            pair = (policy.evaluate("data.r.revision", {}), policy.evaluate("data.r.also", {}))
            seen.add(pair[0])
            if pair[0] != pair[1]:
                mixed.append(pair)

    threads = [threading.Thread(target=decider) for _ in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(200):
        holder["policy"] = revision_2
        holder["policy"] = revision_1
    holder["policy"] = revision_2
    stop.set()
    for thread in threads:
        thread.join()
    assert not mixed
    assert holder["policy"].evaluate("data.r.revision", {}) == 2
    assert seen <= {1, 2}


def test_old_revision_keeps_answering_while_referenced(engine: RegorusEngine) -> None:
    old = engine.prepare(SIMPLE, {"simple": {"admins": ["alice"]}})
    new = engine.prepare(SIMPLE, {"simple": {"admins": ["bob"]}})
    assert old.evaluate("data.simple.allow", {"user": "alice"}) is True
    assert new.evaluate("data.simple.allow", {"user": "alice"}) is False
    assert in_thread(lambda: old.evaluate("data.simple.allow", {"user": "alice"})) is True


# --------------------------------------------------------------------------- example bundle


def test_example_bundle_prepares_with_its_entrypoints(engine: RegorusEngine) -> None:
    modules, data = load_bundle_dir(BUNDLE, include_tests=False)
    policy = engine.prepare(
        modules,
        data,
        extensions=RELATED_EXTENSION,  # relations.rego asks the schema through tg.related
        entrypoints=[
            "data.tenantguard.decision",
            "data.tenantguard.act_as",
            "data.tenantguard.exchange.decision",
            "data.tenantguard.propagation.mode",
        ],
    )
    request = {
        "subject": {
            "type": "user",
            "id": "alice",
            "properties": {"tenant_id": "acme", "roles": ["editor"], "scope": ["invoices:read"]},
        },
        "action": {"name": "invoices:read"},
        "resource": {
            "type": "invoice",
            "id": "inv-1",
            "properties": {"tenant_id": "acme"},
        },
        "context": {"service": "billing"},
        "token": None,
        "actor_chain": ["svc:orders", "svc:edge"],
        "relations": {"project:p1": ["member"], "group:eng": ["member"]},
    }
    assert policy.evaluate("data.tenantguard.decision", request) == {
        "allow": True,
        "reasons": [],
        "high_risk": False,
    }
    # In a project: membership is the schema's, and tg.related outside a decision knows no tenant.
    in_project = {**request, "resource": {**request["resource"], "properties": {"tenant_id": "acme", "project": "p1"}}}
    assert policy.evaluate("data.tenantguard.decision", in_project)["reasons"] == ["not_project_member"]
    other_tenant = {**request, "resource": {"properties": {"tenant_id": "globex"}}}
    denied = policy.evaluate("data.tenantguard.decision", other_tenant)
    assert denied["allow"] is False
    assert "tenant_mismatch" in denied["reasons"]
    mode = policy.evaluate(
        "data.tenantguard.propagation.mode", {"source": "orders", "target": "billing"}
    )
    assert mode == "exchange"


def test_to_json_value_handles_mixed_sets() -> None:
    assert to_json_value({"s": {3, 1}, "m": {1, "a"}}) in (
        {"s": [1, 3], "m": [1, "a"]},
        {"s": [1, 3], "m": ["a", 1]},
    )


# --------------------------------------------------------------------------- preparing in slices


def big_data(tenants: int = 2_000) -> dict[str, Any]:
    return {
        "simple": {"admins": ["alice"]},
        "tenants": {
            f"t{t}": {f"project:p{r}": {"member": [f"user:u{t}-{r}"]} for r in range(5)}
            for t in range(tenants)
        },
        "empty": {},
        "list": list(range(10)),
        1: "an int key, written as a string like json.dumps does",
    }


def test_data_slices_merge_back_into_the_data() -> None:
    from tenantguard.policy.engine import DATA_SLICE_BYTES, _data_slices

    data = big_data()
    slices = list(_data_slices(data))
    assert len(slices) > 10
    assert all(len(text) < 2 * DATA_SLICE_BYTES for text in slices)
    raw = regorus.Engine()
    for text in slices:
        raw.add_data_json(text)  # disjoint parts: each merges, none conflicts
    loaded = raw.eval_query("data")["result"][0]["expressions"][0]["value"]
    assert loaded == json.loads(json.dumps(data))


def test_small_data_is_one_slice() -> None:
    from tenantguard.policy.engine import _data_slices

    assert list(_data_slices(SIMPLE_DATA)) == [json.dumps(SIMPLE_DATA, separators=(",", ":"))]
    assert list(_data_slices({})) == ["{}"]


def test_prepare_steps_pauses_and_returns_a_policy_ready_on_this_thread(engine: RegorusEngine) -> None:
    from tenantguard.policy.engine import _THREAD_ENGINES

    steps = engine.prepare_steps(SIMPLE, big_data(), entrypoints=["data.simple.allow"])
    pauses = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            policy = done.value
            break
        pauses += 1
    assert pauses > 5
    assert isinstance(policy, RegorusPreparedPolicy)
    assert _THREAD_ENGINES.get(policy.key) is not None  # no rebuild at the first decision
    assert policy.evaluate("data.simple.allow", {"user": "alice"}) is True
    assert policy.evaluate("data.tenants.t1999", {}) == {
        f"project:p{r}": {"member": [f"user:u1999-{r}"]} for r in range(5)
    }
    assert in_thread(lambda: policy.evaluate("data.tenants.t7", {}))["project:p3"] == {"member": ["user:u7-3"]}
    assert in_thread(lambda: policy.evaluate("data.empty", {})) == {}


def test_prepare_steps_reports_errors_like_prepare(engine: RegorusEngine) -> None:
    broken = {**SIMPLE, "broken.rego": "package broken\nx := if {\n"}
    with pytest.raises(PolicyCompileError, match=r"broken\.rego"):
        for _ in engine.prepare_steps(broken, {}):
            pass
    with pytest.raises(PolicyCompileError):
        for _ in engine.prepare_steps(SIMPLE, {"x": {1, 2}}):
            pass
    with pytest.raises(PolicyCompileError, match=r"data\.simple\.alow"):
        for _ in engine.prepare_steps(SIMPLE, SIMPLE_DATA, entrypoints=["data.simple.alow"]):
            pass


# --------------------------------------------------------------------------- per-decision overhead


def test_a_rejected_entrypoint_is_never_remembered(simple: RegorusPreparedPolicy) -> None:
    for _ in range(2):
        with pytest.raises(EntrypointInvalid):
            simple.evaluate("data.x; true", {})
    assert simple.evaluate("data.simple.allow", {"user": "alice"}) is True
    assert simple.evaluate("data.simple.allow", {"user": "alice"}) is True


def test_results_are_plain_json_values(simple: RegorusPreparedPolicy) -> None:
    from tenantguard.policy.engine import _result_value

    assert _result_value({"a": [{"s": {2, 1}}], "b": {"c"}, "d": 1.5, "e": None}) == {
        "a": [{"s": [1, 2]}],
        "b": ["c"],
        "d": 1.5,
        "e": None,
    }
    assert simple.evaluate("data.simple", {"user": "alice", "tags": ["b", "a"]})["tags"] == ["a", "b"]


# ---------------------------------------------------------------- what of the input a policy reads


@pytest.mark.parametrize(("source", "paths"), [
    ("x := input.a.b\ny := input.a", (("a",),)),
    ("x := input.subject.id\ny := input.resource.properties.project", (("resource", "properties", "project"),
                                                                         ("subject", "id"))),
    ("x := input . a . b", (("a", "b"),)),
    ('x := input.a["b"]', (("a",),)),  # a bracket ends the path: all of input.a
    ("x := input", ((),)),
    ('x := input["a"]', ((),)),
    ("x := object.keys(input)", ((),)),
    ("import input.subject as s\nx := s.id", (("subject",),)),
    ("# reads input and input.secret\nx := 1", ()),  # comments are not reads
    ('x := "input.a"\ny := `input`', ()),  # nor strings
    ("x := data.input.a\ny := input_x\nz := my.input", ()),  # nor other names
    ("t if { f with input as {} }\nu if { g with input.a.b as 1 }", ()),  # `with` replaces, never reads
    ('x := "a\\"input.b"\ny := input.c', (("c",),)),
])
def test_input_paths(source: str, paths: tuple[tuple[str, ...], ...]) -> None:
    assert input_paths({"p.rego": "package p\nimport rego.v1\n" + source}) == paths


def test_the_example_bundle_never_reads_the_resource_id_or_the_token_id() -> None:
    modules, data = load_bundle_dir(BUNDLE)
    policy = RegorusEngine().prepare(modules, data)
    assert policy.input_paths == input_paths(modules)
    assert ("subject", "id") in policy.input_paths and ("token", "scope") in policy.input_paths
    for unread in (("resource", "id"), ("token",), ("token", "jti"), ("action",)):
        assert unread not in policy.input_paths
