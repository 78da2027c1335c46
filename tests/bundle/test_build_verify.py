"""Build, sign, verify round trips; determinism; OPA spec conformance; inspect."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import jwt
import pytest
from tenantguard.bundle import (
    JwtSigner,
    PublicKeyVerifier,
    TrustSetVerifier,
    build_bundle,
    inspect,
    sign_bundle,
    verify_bundle,
)
from tenantguard.errors import BundleMalformed, BundleUnknownKey, BundleUnsafePath
from tenantguard.identity.keys import SigningKey


@pytest.mark.parametrize("alg", ["EdDSA", "ES256", "RS256"])
def test_roundtrip_each_algorithm(alg: str, keys, verifier, bundle_dir: Path, source) -> None:
    key = keys[alg]
    archive = build_bundle(bundle_dir, "v42", signing_key=key, serial=7)
    bundle = verify_bundle(archive, verifier)
    assert bundle.revision == "v42"
    assert bundle.manifest.roots == ("authz", "tenants")
    assert bundle.manifest.metadata["serial"] == 7
    assert bundle.signature is not None
    assert (bundle.signature.kid, bundle.signature.alg) == (key.kid, alg)
    assert dict(bundle.modules) == {"authz/policy.rego": source["authz/policy.rego"].decode()}
    assert bundle.data == {
        "authz": {"roles": {"admin": ["alice"], "viewer": ["bob", "carol"]}},
        "tenants": {"t1": {"plan": "gold"}},
    }
    assert verify_bundle(archive, PublicKeyVerifier(key.public_key)).kid == key.kid


def test_build_leaves_out_hidden_and_unrelated_files(key, verifier, bundle_dir: Path, source) -> None:
    bundle = verify_bundle(build_bundle(bundle_dir, "r", signing_key=key), verifier)
    assert sorted(bundle.files) == sorted([".manifest", *source])


def test_build_refuses_a_symlink_in_the_tree(bundle_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.rego"
    outside.write_text("package leak\n")
    (bundle_dir / "authz" / "leak.rego").symlink_to(outside)
    with pytest.raises(BundleUnsafePath, match="not a regular file") as exc:
        build_bundle(bundle_dir, "r")
    assert exc.value.file == "authz/leak.rego"


def test_build_refuses_data_outside_the_roots(source) -> None:
    with pytest.raises(BundleMalformed, match="do not permit data"):
        build_bundle(source, "r", roots=["authz"])


def test_serial_defaults_to_now_in_milliseconds(source) -> None:
    bundle = verify_bundle(build_bundle(source, "r"), None, require_signature=False)
    assert bundle.manifest.metadata["serial"] > 1_600_000_000_000


def test_same_input_gives_same_bytes(key, source) -> None:
    reordered = dict(reversed(list(source.items())))
    unsigned = [build_bundle(s, "r1", serial=1) for s in (source, reordered)]
    assert unsigned[0] == unsigned[1]
    signer_kwargs = {"serial": 1, "signing_key": _fixed_iat(key)}
    signed = [build_bundle(s, "r1", **signer_kwargs) for s in (source, reordered)]
    assert signed[0] == signed[1]  # Ed25519 signatures are deterministic
    assert build_bundle(source, "r1", serial=2) != unsigned[0]


def test_archive_metadata_is_fixed(source) -> None:
    with tarfile.open(fileobj=io.BytesIO(build_bundle(source, "r", serial=1)), mode="r:gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in members} == {
        (0, 0, 0, "", "", 0o644)
    }


def test_sign_bundle_resigns_an_existing_archive(keys, trust, source) -> None:
    old, new = keys["ES256"], keys["RS256"]
    archive = build_bundle(source, "r", signing_key=old, serial=3)
    resigned = sign_bundle(archive, new)
    assert verify_bundle(resigned, TrustSetVerifier(trust)).kid == new.kid
    assert verify_bundle(resigned, TrustSetVerifier(trust)).files == verify_bundle(
        archive, TrustSetVerifier(trust)
    ).files
    with pytest.raises(BundleUnknownKey):
        verify_bundle(sign_bundle(archive, SigningKey.generate()), TrustSetVerifier(trust))


def test_signature_payload_matches_the_opa_spec(key, source, decode_jwt, tar) -> None:
    """Hashes computed independently as OPA specifies: raw bytes, or sorted compact JSON."""
    archive = build_bundle(source, "r1", signing_key=_fixed_iat(key, issuer="policy-plane"), serial=9)
    manifest = {"metadata": {"serial": 9}, "revision": "r1", "roots": [""]}

    def canonical(value: object) -> bytes:
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()

    expected_hash = {
        ".manifest": hashlib.sha256(canonical(manifest)).hexdigest(),
        "authz/policy.rego": hashlib.sha256(source["authz/policy.rego"]).hexdigest(),
        "authz/roles/data.json": hashlib.sha256(
            canonical(json.loads(source["authz/roles/data.json"]))
        ).hexdigest(),
        "data.json": hashlib.sha256(canonical(json.loads(source["data.json"]))).hexdigest(),
    }
    expected_payload = {
        "files": [
            {"name": name, "hash": digest, "algorithm": "SHA-256"}
            for name, digest in sorted(expected_hash.items())
        ],
        "iat": 1_700_000_000,
        "iss": "policy-plane",
    }
    header, payload = decode_jwt(archive)
    assert payload == expected_payload
    assert header == {"alg": "EdDSA", "kid": key.kid, "typ": "JWT"}
    signatures = json.loads(tar.unpack(archive)[".signatures.json"])
    assert list(signatures) == ["signatures"] and len(signatures["signatures"]) == 1


def test_accepts_a_bundle_laid_out_and_signed_like_opa_build(keys, tar) -> None:
    """``opa build`` writes ``/``-rooted names, mode 0600, kid "default", keyid claim."""
    rsa = keys["RS256"]
    data, policy = b'{"x": {"y": 1}}\n', b"package x\n\nallow := true\n"
    manifest = b'{"revision":"","roots":[""]}\n'
    files = [
        {"name": "x/policy.rego", "hash": hashlib.sha256(policy).hexdigest(), "algorithm": "SHA-256"},
        {"name": "data.json", "hash": hashlib.sha256(b'{"x":{"y":1}}').hexdigest(), "algorithm": "SHA-256"},
        {
            "name": ".manifest",
            "hash": hashlib.sha256(b'{"revision":"","roots":[""]}').hexdigest(),
            "algorithm": "SHA-256",
        },
    ]
    token = jwt.encode(
        {"files": files, "keyid": "default"}, rsa.private_key, algorithm="RS256", headers={"kid": "default"}
    )
    archive = tar.gz(
        [
            tar.member("/data.json", data, mode=0o600),
            tar.member("/x/policy.rego", policy, mode=0o600),
            tar.member("/.manifest", manifest, mode=0o600),
            tar.member(".signatures.json", json.dumps({"signatures": [token]}).encode(), mode=0o600),
        ]
    )
    bundle = verify_bundle(archive, PublicKeyVerifier(rsa.public_key))
    assert bundle.data == {"x": {"y": 1}}
    assert set(bundle.modules) == {"x/policy.rego"}
    assert bundle.kid == "default"


def test_inspect_reports_manifest_files_and_claimed_signer(key, source, tar) -> None:
    archive = build_bundle(source, "r7", signing_key=_fixed_iat(key, issuer="ci"), serial=11)
    report = inspect(archive)
    assert report["manifest"] == {"revision": "r7", "roots": [""], "metadata": {"serial": 11}}
    contents = tar.unpack(archive)
    assert report["files"] == [
        {"name": n, "size": len(c), "sha256": hashlib.sha256(c).hexdigest()}
        for n, c in sorted(contents.items())
    ]
    assert report["signature"] == {
        "verified": False,
        "alg": "EdDSA",
        "kid": key.kid,
        "iss": "ci",
        "iat": 1_700_000_000,
        "scope": None,
        "files": 4,
    }
    assert inspect(build_bundle(source, "r", serial=1))["signature"] is None


def _fixed_iat(key: SigningKey, issuer: str | None = None) -> JwtSigner:
    return JwtSigner(key, issuer=issuer, issued_at=1_700_000_000)
