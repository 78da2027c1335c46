"""Data that would shadow a rule is refused, as OPA refuses it (conflicting rule for data path).

regorus answers the data, not the rule, for such a path: a signed ``data.json`` holding
``{"authz": {"allow": true}}`` beside ``default allow := false`` would allow everything
while the Rego reads as deny. Every case is a genuinely signed bundle (real key): the
signature is fine, the content is what must be refused.
"""

from __future__ import annotations

import json

import pytest
import regorus
from tenantguard.bundle import TrustSetVerifier, build_bundle, verify_bundle, write_archive
from tenantguard.bundle.signing import JwtSigner, digests, signatures_file
from tenantguard.errors import BundleMalformed
from tenantguard.identity.keys import SigningKey

POLICY = b"""package authz

default allow := false

allow if input.user == "alice"

f(x) := x

b.c := 2

d["k"] := 3

g[x] := 1 if some x in ["a"]

s contains "one"
"""

SHADOWS = {
    "root data.json over a rule": {"data.json": b'{"authz": {"allow": true}}'},
    "data.json in the rule's own directory": {"authz/allow/data.json": b"true"},
    "data nested under a rule": {"authz/allow/data.json": b'{"x": 1}'},
    "a function's path": {"authz/data.json": b'{"f": 1}'},
    "a multi-segment head": {"authz/b/data.json": b'{"c": 1}'},
    "a string-keyed head": {"authz/d/data.json": b'{"k": 1}'},
    "under a rule with a variable key": {"authz/g/data.json": b'{"zzz": 1}'},
    "a partial set": {"authz/data.json": b'{"s": ["two"]}'},
    "a non-object on the package path": {"data.json": b'{"authz": true}'},
}


def _signed_raw(key: SigningKey, files: dict[str, bytes]) -> bytes:
    """Sign without build_bundle's own content checks: what a forger with the key can ship."""
    files = {".manifest": b'{"revision":"1","metadata":{"serial":1}}', **files}
    return write_archive({**files, ".signatures.json": signatures_file(JwtSigner(key).sign(digests(files)))})


@pytest.mark.parametrize("case", SHADOWS)
def test_data_that_shadows_a_rule_is_refused(key: SigningKey, verifier: TrustSetVerifier, case: str) -> None:
    archive = _signed_raw(key, {"authz/policy.rego": POLICY, **SHADOWS[case]})
    with pytest.raises(BundleMalformed) as refused:
        verify_bundle(archive, verifier)
    assert refused.value.code == "bundle_malformed"
    assert refused.value.file == "authz/policy.rego"


@pytest.mark.parametrize("case", ["root data.json over a rule", "data.json in the rule's own directory"])
def test_build_refuses_them_too(key: SigningKey, case: str) -> None:
    with pytest.raises(BundleMalformed):
        build_bundle({"authz/policy.rego": POLICY, **SHADOWS[case]}, "1", signing_key=key, serial=1)


def test_the_premise_regorus_answers_the_data_not_the_rule() -> None:
    """Why the check exists: without it the engine says allow for anyone."""
    engine = regorus.Engine()
    engine.add_policy("p.rego", POLICY.decode())
    engine.add_data_json('{"authz": {"allow": true}}')
    engine.set_input_json('{"user": "mallory"}')
    assert engine.eval_rule("data.authz.allow") is True


def test_data_beside_rules_is_accepted(key: SigningKey, verifier: TrustSetVerifier) -> None:
    extra = {"authz/data.json": b'{"admins": ["alice"], "b": {"other": 1}, "dd": {"k": 1}}',
             "data.json": b'{"tenants": {"t1": {}}}'}
    bundle = verify_bundle(_signed_raw(key, {"authz/policy.rego": POLICY, **extra}), verifier)
    assert bundle.data["authz"]["admins"] == ["alice"]


def test_a_module_that_does_not_parse_is_left_to_the_engine(key: SigningKey, verifier: TrustSetVerifier) -> None:
    archive = _signed_raw(key, {"authz/policy.rego": b"package authz\nallow if {", "data.json": b'{"x": 1}'})
    assert verify_bundle(archive, verifier).modules  # parsed as a bundle; compiling it is the engine's refusal


@pytest.mark.parametrize(("roots", "package"), [
    (["x"], "authz"),
    (["authz/sub"], "authz"),
    (["authz"], "authzother"),
    (["authz", "tenants"], 'tenants_x["y"]'),
])
def test_a_package_outside_the_manifest_roots_is_refused(key: SigningKey, verifier: TrustSetVerifier,
                                                         roots: list[str], package: str) -> None:
    """OPA refuses such a bundle ("manifest roots do not permit ... in module"): a bundle may not
    define policy outside what it declares it owns."""
    files = {".manifest": json.dumps({"revision": "1", "roots": roots}).encode(),
             "p.rego": f"package {package}\n\nallow := true\n".encode()}
    archive = write_archive({**files, ".signatures.json": signatures_file(JwtSigner(key).sign(digests(files)))})
    with pytest.raises(BundleMalformed) as refused:
        verify_bundle(archive, verifier)
    assert refused.value.file == "p.rego"


@pytest.mark.parametrize(("roots", "package"), [(["authz"], "authz.sub"), (["authz/sub"], 'authz["sub"]'),
                                                ([""], "anything")])
def test_a_package_under_a_root_is_accepted(key: SigningKey, verifier: TrustSetVerifier, roots: list[str],
                                            package: str) -> None:
    files = {".manifest": json.dumps({"revision": "1", "roots": roots}).encode(),
             "p.rego": f"package {package}\n\nallow := true\n".encode()}
    archive = write_archive({**files, ".signatures.json": signatures_file(JwtSigner(key).sign(digests(files)))})
    assert verify_bundle(archive, verifier).modules
