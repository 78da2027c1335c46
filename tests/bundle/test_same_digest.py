"""Attacks that keep a signed digest but change what the bundle means.

OPA hashes structured files (``data.json``, ``.manifest``) by a canonical re-encoding, not
by their bytes, so anything that encoding folds together (duplicate member names, a lone
surrogate written as U+FFFD) lets an attacker change the parsed content under the same
signature. Each case re-uses a genuine signature over the genuine file and swaps in bytes
with the same canonical digest: the bundle must be refused, typed, never loaded.
"""

from __future__ import annotations

import pytest
from tenantguard.bundle import TrustSetVerifier, file_digest, verify_bundle, write_archive
from tenantguard.bundle.signing import JwtSigner, digests, signatures_file
from tenantguard.errors import BundleMalformed, BundleSignatureInvalid
from tenantguard.identity.keys import SigningKey

BASE = {
    ".manifest": b'{"revision":"1","roots":["authz"],"metadata":{"serial":1}}',
    "authz/policy.rego": b"package authz\n\ndefault allow := false\n",
}


def signed(key: SigningKey, files: dict[str, bytes]) -> bytes:
    """The genuine ``.signatures.json`` over ``files``."""
    return signatures_file(JwtSigner(key).sign(digests(files)))


# (what was signed, what the attacker ships) for one structured file
SWAPS = {
    "surrogate key beside a U+FFFD key": (
        "authz/data.json", b'{"admins":["alice"],"\\ufffd":1}',
        b'{"admins":["alice"],"\\ud800":{"admins":["mallory"]},"\\ufffd":1}'),
    "surrogate key for a U+FFFD key": (
        "authz/data.json", b'{"\\ufffd":["alice"]}', b'{"\\udbff":["alice"]}'),
    "surrogate in a value (upper-case escape)": (
        "authz/data.json", b'{"admins":["alice\\ufffd"]}', b'{"admins":["alice\\uDC00"]}'),
    "duplicate member, last one signed": (
        "authz/data.json", b'{"admins":["alice"]}', b'{"admins":["mallory"],"admins":["alice"]}'),
    "duplicate manifest member": (
        ".manifest", BASE[".manifest"],
        b'{"revision":"9","roots":["authz"],"metadata":{"serial":1},"revision":"1"}'),
    "duplicate nested member": (
        "authz/data.json", b'{"a":{"b":1}}', b'{"a":{"b":2,"b":1}}'),
}


@pytest.mark.parametrize("case", SWAPS)
def test_a_swap_under_the_same_digest_is_refused(key: SigningKey, verifier: TrustSetVerifier, case: str) -> None:
    name, genuine, forged = SWAPS[case]
    assert file_digest(name, genuine) == file_digest(name, forged)  # the attack's premise
    files = {**BASE, name: genuine}
    sigs = signed(key, files)
    verify_bundle(write_archive({**files, ".signatures.json": sigs}), verifier)  # the genuine one loads
    with pytest.raises(BundleMalformed) as refused:
        verify_bundle(write_archive({**files, name: forged, ".signatures.json": sigs}), verifier)
    assert refused.value.code == "bundle_malformed"
    assert refused.value.file == name


def test_numbers_beyond_a_double_are_refused(key: SigningKey, verifier: TrustSetVerifier) -> None:
    files = {**BASE, "authz/data.json": b'{"limit":1e400}'}
    with pytest.raises(BundleMalformed):
        verify_bundle(write_archive({**files, ".signatures.json": signed(key, files)}), verifier)


@pytest.mark.parametrize("body", [
    b'{"signatures":["%s"],"signatures":["x.y.z"]}',
    b'{"signatures":["x.y.z"],"signatures":["%s"]}',
])
def test_signatures_file_with_a_duplicate_member_is_refused(key: SigningKey, verifier: TrustSetVerifier,
                                                            body: bytes) -> None:
    token = JwtSigner(key).sign(digests(BASE)).encode()
    with pytest.raises(BundleMalformed):
        verify_bundle(write_archive({**BASE, ".signatures.json": body.replace(b"%s", token)}), verifier)


def test_jwt_header_with_a_duplicate_kid_is_refused(key: SigningKey, verifier: TrustSetVerifier) -> None:
    import base64

    token = JwtSigner(key).sign(digests(BASE))
    header = base64.urlsafe_b64encode(b'{"alg":"EdDSA","kid":"other","kid":"%s"}' % key.kid.encode())
    forged = header.rstrip(b"=").decode() + token[token.index("."):]
    with pytest.raises(BundleSignatureInvalid):
        verify_bundle(write_archive({**BASE, ".signatures.json": signatures_file(forged)}), verifier)
