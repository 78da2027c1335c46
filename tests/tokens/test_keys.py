"""Key generation, RFC 7638 kids, JWKS export/import, and key files on disk."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from tenantguard import errors
from tenantguard.cli import app
from tenantguard.identity.keys import SigningKey, TrustedKey, TrustSet, jwk_thumbprint, load_public_key_file
from typer.testing import CliRunner

# RFC 7638 section 3.1: the example RSA key and its thumbprint.
RFC7638_JWK = {
    "kty": "RSA",
    "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3"
    "oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZH"
    "zu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kE"
    "gU8awapJzKnqDKgw",
    "e": "AQAB",
    "alg": "RS256",
    "kid": "2011-04-29",
}


def test_thumbprint_matches_rfc7638_example() -> None:
    assert jwk_thumbprint(RFC7638_JWK) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


@pytest.mark.parametrize("alg", ["EdDSA", "ES256", "RS256"])
def test_kid_is_stable_across_save_and_load(alg: str, tmp_path: Path) -> None:
    key = SigningKey.generate(alg)  # type: ignore[arg-type]
    pub = key.save(tmp_path / "k.pem")
    assert SigningKey.load(tmp_path / "k.pem").kid == key.kid
    assert TrustedKey.of(load_public_key_file(pub), "edge").kid == key.kid


def test_private_key_file_is_0600_even_with_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "k.pem"
        path.write_text("old contents")
        path.chmod(0o666)  # an existing world-readable file must not keep its bits
        SigningKey.generate().save(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_jwks_round_trip_keeps_issuer_and_not_after() -> None:
    a, b = SigningKey.generate(), SigningKey.generate("ES256")
    trust = TrustSet()
    trust.add_public_key(a.public_key, "edge", not_after=2_000_000_000)
    trust.add_public_key(b.public_key, "sidecar:orders")
    again = TrustSet.from_jwks(json.loads(json.dumps(trust.to_jwks())))
    assert {(k.kid, k.issuer, k.not_after) for k in again} == {
        (a.kid, "edge", 2_000_000_000.0),
        (b.kid, "sidecar:orders", None),
    }


def test_jwks_refuses_symmetric_and_private_keys() -> None:
    with pytest.raises(errors.KeyMaterialError):
        TrustSet.from_jwks({"keys": [{"kty": "oct", "k": "c2VjcmV0", "iss": "edge"}]})
    key = SigningKey.generate()
    jwk = {**key.public_jwk(), "iss": "edge", "d": "AAAA"}
    with pytest.raises(errors.KeyMaterialError):
        TrustSet.from_jwks({"keys": [jwk]})


def test_jwks_refuses_a_kid_that_is_not_the_thumbprint() -> None:
    jwk = {**SigningKey.generate().public_jwk(), "iss": "edge", "kid": "chosen-by-attacker"}
    with pytest.raises(errors.KeyMaterialError):
        TrustSet.from_jwks({"keys": [jwk]})


def test_one_kid_cannot_be_claimed_by_two_issuers() -> None:
    key = SigningKey.generate()
    trust = TrustSet()
    trust.add_public_key(key.public_key, "edge")
    with pytest.raises(errors.KeyMaterialError):
        trust.add_public_key(key.public_key, "sidecar:reports")


def test_small_rsa_keys_are_refused() -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    with pytest.raises(errors.KeyMaterialError):
        SigningKey.from_private_key(rsa.generate_private_key(public_exponent=65537, key_size=1024))


def test_oversized_rsa_jwks_are_refused_before_they_reach_a_trust_set() -> None:
    """A 160,000-bit RSA JWK (registrable with a join secret) could never verify anything."""
    import base64

    def b64(n: int) -> str:
        return base64.urlsafe_b64encode(n.to_bytes((n.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()

    for bits, accepted in ((8192, True), (8200, False), (160_000, False)):
        jwk = {"kty": "RSA", "e": "AQAB", "n": b64((1 << (bits - 1)) | 1), "iss": "edge"}
        if accepted:
            assert TrustedKey.from_jwk(jwk).public_key.key_size == bits
        else:
            with pytest.raises(errors.KeyMaterialError, match="larger than 8192"):
                TrustedKey.from_jwk(jwk)


def test_cli_generate_show_jwks(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "edge.pem"
    result = runner.invoke(app, ["keys", "generate", str(out)])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    kid = SigningKey.load(out).kid
    shown = runner.invoke(app, ["keys", "show", str(out)])
    assert json.loads(shown.stdout)["kid"] == kid and '"d"' not in shown.stdout
    jwks = runner.invoke(app, ["keys", "jwks", f"{out}.pub", "--issuer", "edge"])
    assert [k["kid"] for k in json.loads(jwks.stdout)["keys"]] == [kid]
    again = runner.invoke(app, ["keys", "generate", str(out)])
    assert again.exit_code != 0  # refuses to overwrite without --force
