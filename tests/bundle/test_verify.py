"""Signature and file-list verification: every way a bundle can fail to be trusted."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from tenantguard.bundle import (
    BundleUnsigned,
    JwtSigner,
    PublicKeyVerifier,
    TrustSetVerifier,
    build_bundle,
    verify_bundle,
)
from tenantguard.errors import (
    BundleFileMissing,
    BundleFileUnsigned,
    BundleHashMismatch,
    BundleMalformed,
    BundleSignatureInvalid,
    BundleUnknownKey,
)
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet


@pytest.fixture
def signed(key, source) -> bytes:
    return build_bundle(source, "r1", signing_key=key, serial=1)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _payload(tar, archive: bytes) -> dict:
    return json.loads(_unb64(_token_of(tar, archive).split(".")[1]))


def _with_token(tar, archive: bytes, token: str) -> bytes:
    body = json.dumps({"signatures": [token]}).encode()
    return tar.repack(archive, lambda files: files.update({".signatures.json": body}))


def _token_of(tar, archive: bytes) -> str:
    return json.loads(tar.unpack(archive)[".signatures.json"])["signatures"][0]


def test_an_extra_unsigned_file_is_refused(tar, signed, verifier) -> None:
    hostile = tar.repack(signed, lambda f: f.update({"authz/extra.rego": b"package authz\n"}))
    with pytest.raises(BundleFileUnsigned) as exc:
        verify_bundle(hostile, verifier)
    assert exc.value.file == "authz/extra.rego"


def test_a_signed_file_missing_from_the_archive_is_refused(tar, signed, verifier) -> None:
    hostile = tar.repack(signed, lambda f: f.pop("authz/policy.rego"))
    with pytest.raises(BundleFileMissing) as exc:
        verify_bundle(hostile, verifier)
    assert exc.value.file == "authz/policy.rego"


def test_tampered_policy_is_refused(tar, signed, verifier) -> None:
    def tamper(files: dict[str, bytes]) -> None:
        files["authz/policy.rego"] = files["authz/policy.rego"].replace(b"alice", b"mallory")

    with pytest.raises(BundleHashMismatch) as exc:
        verify_bundle(tar.repack(signed, tamper), verifier)
    assert exc.value.file == "authz/policy.rego"


def test_data_json_is_hashed_canonically(tar, signed, verifier) -> None:
    """Same JSON, other key order and whitespace: verifies. Other values: refused."""
    reordered = b'{\n  "viewer": [ "bob", "carol" ],\n  "admin": ["alice"]\n}\n'
    same = tar.repack(signed, lambda f: f.update({"authz/roles/data.json": reordered}))
    assert verify_bundle(same, verifier).data["authz"]["roles"]["viewer"] == ["bob", "carol"]

    changed = b'{"viewer": ["bob", "carol"], "admin": ["mallory"]}'
    hostile = tar.repack(signed, lambda f: f.update({"authz/roles/data.json": changed}))
    with pytest.raises(BundleHashMismatch) as exc:
        verify_bundle(hostile, verifier)
    assert exc.value.file == "authz/roles/data.json"

    reordered_list = b'{"viewer": ["carol", "bob"], "admin": ["alice"]}'
    hostile = tar.repack(signed, lambda f: f.update({"authz/roles/data.json": reordered_list}))
    with pytest.raises(BundleHashMismatch):
        verify_bundle(hostile, verifier)


def test_a_tampered_manifest_is_refused(tar, signed, verifier) -> None:
    hostile = tar.repack(signed, lambda f: f.update({".manifest": b'{"revision":"r1","roots":[""]}'}))
    with pytest.raises(BundleHashMismatch) as exc:
        verify_bundle(hostile, verifier)
    assert exc.value.file == ".manifest"


def test_a_bundle_signed_by_an_untrusted_key_is_refused(source, verifier, keys) -> None:
    stranger = SigningKey.generate("EdDSA")
    archive = build_bundle(source, "r", signing_key=stranger)
    with pytest.raises(BundleUnknownKey) as exc:
        verify_bundle(archive, verifier)
    assert exc.value.detail["kid"] == stranger.kid
    with pytest.raises(BundleSignatureInvalid):
        verify_bundle(archive, PublicKeyVerifier(keys["EdDSA"].public_key))


def test_a_forged_kid_does_not_borrow_a_trusted_key(tar, signed, key, verifier) -> None:
    """Signed by a stranger, but claiming a trusted ``kid``: the signature fails."""
    stranger = SigningKey.generate("EdDSA")
    header = _b64(json.dumps({"alg": "EdDSA", "kid": key.kid}).encode())
    payload = _token_of(tar, signed).split(".")[1]
    signature = _b64(stranger.private_key.sign(f"{header}.{payload}".encode()))
    with pytest.raises(BundleSignatureInvalid):
        verify_bundle(_with_token(tar, signed, f"{header}.{payload}.{signature}"), verifier)


def test_hs256_forged_with_the_public_key_as_secret_is_refused(tar, signed, key, keys, trust) -> None:
    """The classic algorithm-confusion attack, for every key type."""
    for trusted in keys.values():
        header = _b64(json.dumps({"alg": "HS256", "kid": trusted.kid, "typ": "JWT"}).encode())
        payload = _token_of(tar, signed).split(".")[1]
        signing_input = f"{header}.{payload}".encode()
        mac = hmac.new(trusted.public_pem(), signing_input, hashlib.sha256).digest()
        forged = _with_token(tar, signed, f"{header}.{payload}.{_b64(mac)}")
        for verifier in (TrustSetVerifier(trust), PublicKeyVerifier(trusted.public_key)):
            with pytest.raises(BundleSignatureInvalid, match="HS256"):
                verify_bundle(forged, verifier)


def test_alg_none_is_refused(tar, signed, key, verifier) -> None:
    header = _b64(json.dumps({"alg": "none", "kid": key.kid}).encode())
    payload = _token_of(tar, signed).split(".")[1]
    for token in (f"{header}.{payload}.", f"{header}.{payload}"):
        with pytest.raises(BundleSignatureInvalid):
            verify_bundle(_with_token(tar, signed, token), verifier)


def test_a_header_alg_other_than_the_keys_is_refused(tar, signed, key, keys, verifier) -> None:
    """A valid ES256 signature presented under the EdDSA key's kid."""
    es = keys["ES256"]
    header = _b64(json.dumps({"alg": "ES256", "kid": key.kid}).encode())
    payload = _token_of(tar, signed).split(".")[1]
    token = jwt.PyJWS().encode(_unb64(payload), es.private_key, "ES256")
    swapped = f"{header}.{payload}.{token.split('.')[2]}"
    with pytest.raises(BundleSignatureInvalid, match="does not match the key's algorithm"):
        verify_bundle(_with_token(tar, signed, swapped), verifier)


def test_a_damaged_signature_is_refused(tar, signed, verifier) -> None:
    header, payload, signature = _token_of(tar, signed).split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    with pytest.raises(BundleSignatureInvalid):
        verify_bundle(_with_token(tar, signed, f"{header}.{payload}.{flipped}"), verifier)


@pytest.mark.parametrize("count", [0, 2])
def test_exactly_one_signature_is_required(tar, signed, verifier, count: int) -> None:
    token = _token_of(tar, signed)
    body = json.dumps({"signatures": [token] * count}).encode()
    hostile = tar.repack(signed, lambda f: f.update({".signatures.json": body}))
    with pytest.raises(BundleSignatureInvalid, match="exactly one"):
        verify_bundle(hostile, verifier)


def test_unsigned_bundles_are_refused_unless_explicitly_allowed(source, verifier) -> None:
    unsigned = build_bundle(source, "r", serial=1)
    with pytest.raises(BundleUnsigned):
        verify_bundle(unsigned, verifier)
    assert verify_bundle(unsigned, verifier, require_signature=False).signature is None


def test_a_signed_bundle_without_a_verifier_is_refused(signed) -> None:
    """OPA: a ``.signatures.json`` the reader was not configured to verify fails."""
    with pytest.raises(BundleSignatureInvalid, match="no verification key"):
        verify_bundle(signed, None, require_signature=False)


def test_scope_must_match(source, key, trust) -> None:
    scoped = build_bundle(source, "r", signing_key=JwtSigner(key, scope="write"))
    with pytest.raises(BundleSignatureInvalid, match="scope"):
        verify_bundle(scoped, TrustSetVerifier(trust))
    assert verify_bundle(scoped, TrustSetVerifier(trust, scope="write")).signature.scope == "write"


def test_an_expired_trusted_key_no_longer_verifies(source, key) -> None:
    trust = TrustSet([TrustedKey.of(key.public_key, "plane", not_after=time.time() - 1)])
    with pytest.raises(BundleUnknownKey, match="expired"):
        verify_bundle(build_bundle(source, "r", signing_key=key), TrustSetVerifier(trust))


def test_issuer_restriction(source, key, trust) -> None:
    archive = build_bundle(source, "r", signing_key=key)
    assert verify_bundle(archive, TrustSetVerifier(trust, issuer="policy-plane")).kid == key.kid
    with pytest.raises(BundleUnknownKey, match="trusted for"):
        verify_bundle(archive, TrustSetVerifier(trust, issuer="someone-else"))


@pytest.mark.parametrize("algorithm", ["MD5", "SHA-1", "CRC32"])
def test_weak_or_unknown_hash_algorithms_are_refused(tar, signed, key, verifier, algorithm) -> None:
    payload = _payload(tar, signed)
    for entry in payload["files"]:
        entry["algorithm"] = algorithm
    # re-signed with the trusted key: only the hash algorithm is wrong
    resigned = jwt.PyJWS().encode(json.dumps(payload).encode(), key.private_key, "EdDSA", headers={"kid": key.kid})
    with pytest.raises(BundleMalformed, match="not accepted"):
        verify_bundle(_with_token(tar, signed, resigned), verifier)


def test_the_deprecated_keyid_claim_selects_the_key(tar, signed, key, verifier) -> None:
    """OPA falls back to the payload ``keyid`` when the header has no ``kid``."""
    payload = _payload(tar, signed)
    payload["keyid"] = key.kid
    token = jwt.PyJWS().encode(json.dumps(payload).encode(), key.private_key, "EdDSA")
    assert verify_bundle(_with_token(tar, signed, token), verifier).kid == key.kid
