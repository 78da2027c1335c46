"""Checking a bundle signature (OPA v1/bundle/verify.go), stricter where OPA is loose.

* ``.signatures.json`` must hold exactly one JWT (OPA: "expected exactly one").
* The key is chosen by ``kid`` (header, else OPA's deprecated ``keyid`` claim) from a
  :class:`TrustSet`, or fixed by the caller (:class:`PublicKeyVerifier`, OPA's
  configured ``keyid``). The JWT is verified with *the key's* algorithm only: the
  header ``alg`` must equal it, so ``none``, HMAC and algorithm swaps never verify.
* ``scope`` in the payload must equal the configured scope (``""`` when absent), as OPA.
* Every archive file must be listed with a matching digest, and every listed file must
  be present (both directions).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import jwt

from tenantguard.bundle.hashing import HASH_ALGORITHMS, file_digest, parse_strict
from tenantguard.bundle.model import SIGNATURES_FILE, FileHash, SignatureInfo, SignedFiles
from tenantguard.errors import (
    BundleFileMissing,
    BundleFileUnsigned,
    BundleHashMismatch,
    BundleMalformed,
    BundleSignatureInvalid,
    BundleUnknownKey,
)
from tenantguard.identity.keys import PublicKey, TrustSet, algorithm_for

_SIG = SIGNATURES_FILE


class Verifier(Protocol):
    """Verifies one bundle JWT and returns the files it vouches for; raises otherwise."""

    def verify(self, token: str) -> SignedFiles: ...


@dataclass(frozen=True, slots=True)
class TrustSetVerifier:
    """Default verifier: the key named by ``kid`` in a trust set, if current.

    ``issuer``, when set, restricts the usable keys to those trusted for that issuer.
    """

    trust: TrustSet
    issuer: str | None = None
    scope: str = ""
    clock: Callable[[], float] = field(default=time.time, repr=False)

    def verify(self, token: str) -> SignedFiles:
        kid = _unverified_kid(token)
        trusted = self.trust.get(kid)
        if trusted is None:
            raise BundleUnknownKey(f"bundle signed by unknown key {kid!r}", file=_SIG, kid=kid)
        if not trusted.is_current(self.clock()):
            raise BundleUnknownKey(f"bundle signing key {kid!r} has expired", file=_SIG, kid=kid)
        if self.issuer is not None and trusted.issuer != self.issuer:
            raise BundleUnknownKey(
                f"key {kid!r} is trusted for {trusted.issuer!r}, not {self.issuer!r}", file=_SIG
            )
        return verify_token(token, trusted.public_key, self.scope, kid=kid)


@dataclass(frozen=True, slots=True)
class PublicKeyVerifier:
    """Verify with one given public key whatever the ``kid`` says (OPA's fixed ``keyid``).

    This is what accepts bundles from ``opa build --signing-key``, whose ``kid`` is a
    configured name (``default``) rather than a thumbprint.
    """

    public_key: PublicKey
    scope: str = ""

    def verify(self, token: str) -> SignedFiles:
        header = unverified_segment(token, 0)
        kid = header.get("kid") if isinstance(header.get("kid"), str) else None
        return verify_token(token, self.public_key, self.scope, kid=kid)


def verify_token(token: str, public_key: PublicKey, scope: str, *, kid: str | None) -> SignedFiles:
    """Verify ``token`` with ``public_key`` under the key's own algorithm, then parse it."""
    alg = algorithm_for(public_key)
    header_alg = unverified_segment(token, 0).get("alg")
    if header_alg != alg:
        raise BundleSignatureInvalid(
            f"JWT alg {header_alg!r} does not match the key's algorithm {alg}", file=_SIG
        )
    try:
        decoded = jwt.PyJWS().decode_complete(token, key=public_key, algorithms=[alg])
    except jwt.PyJWTError as exc:
        raise BundleSignatureInvalid(f"bundle signature does not verify: {exc}", file=_SIG) from None
    claims = _json_object(decoded["payload"], "JWT payload")
    signer = SignatureInfo(
        kid=kid,
        alg=alg,
        issuer=_optional(claims, "iss", str),
        issued_at=_optional(claims, "iat", int),
        scope=_optional(claims, "scope", str),
    )
    if (signer.scope or "") != scope:
        raise BundleSignatureInvalid(
            f"bundle scope {signer.scope!r} does not match {scope!r}", file=_SIG
        )
    return SignedFiles(_signed_files(claims.get("files")), signer)


def parse_signatures_file(content: bytes) -> str:
    """The single JWT in ``.signatures.json``; none or several is a rejection."""
    body = _json_object(content, _SIG)
    tokens = body.get("signatures")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise BundleMalformed("'signatures' must be a list of strings", file=_SIG)
    if len(tokens) != 1:
        raise BundleSignatureInvalid(
            f".signatures.json holds {len(tokens)} JWTs; exactly one is required", file=_SIG
        )
    return tokens[0]


def check_files(files: Mapping[str, bytes], signed: Mapping[str, FileHash]) -> None:
    """Both directions: each file signed with a matching digest, each signed file present."""
    pending = dict(signed)
    for name, content in files.items():
        entry = pending.pop(name, None)
        if entry is None:
            raise BundleFileUnsigned(f"{name} is not covered by the bundle signature", file=name)
        actual = file_digest(name, content, entry.algorithm)
        if not hmac.compare_digest(actual, entry.hash.lower()):
            raise BundleHashMismatch(f"{name}: digest does not match the signature", file=name)
    if pending:
        missing = sorted(pending)
        raise BundleFileMissing(
            f"signed file(s) missing from the archive: {', '.join(missing)}",
            file=missing[0],
            missing=missing,
        )


def _signed_files(raw: Any) -> dict[str, FileHash]:
    if not isinstance(raw, list):
        raise BundleMalformed("JWT payload 'files' must be a list", file=_SIG)
    files: dict[str, FileHash] = {}
    for entry in raw:
        item = _file_entry(entry)
        if item.name in files:
            raise BundleMalformed(f"{item.name} is listed twice in the signature", file=_SIG)
        files[item.name] = item
    return files


def _file_entry(entry: Any) -> FileHash:
    if not isinstance(entry, dict) or not all(
        isinstance(entry.get(k), str) for k in ("name", "hash", "algorithm")
    ):
        raise BundleMalformed("each signed file needs string name, hash, algorithm", file=_SIG)
    name, digest, algorithm = entry["name"], entry["hash"], entry["algorithm"]
    if algorithm not in HASH_ALGORITHMS:
        raise BundleMalformed(f"hash algorithm {algorithm!r} is not accepted", file=name)
    try:
        binascii.unhexlify(digest)
    except (binascii.Error, ValueError):
        raise BundleMalformed(f"signed hash for {name} is not hex", file=name) from None
    return FileHash(name, digest, algorithm)


def _unverified_kid(token: str) -> str:
    """OPA's lookup order without a configured key: header ``kid``, then ``keyid`` claim."""
    kid = unverified_segment(token, 0).get("kid") or unverified_segment(token, 1).get("keyid")
    if not isinstance(kid, str) or not kid:
        raise BundleUnknownKey("bundle JWT names no key (no 'kid' header)", file=_SIG)
    return kid


def unverified_segment(token: str, index: int) -> dict[str, Any]:
    """Decode one unverified JWT segment, only to pick a key or compare ``alg``."""
    parts = token.split(".")
    if len(parts) != 3:
        raise BundleSignatureInvalid("bundle signature is not a compact JWS", file=_SIG)
    segment = parts[index]
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise BundleSignatureInvalid("bundle JWT is not base64url", file=_SIG) from None
    return _json_object(raw, "JWT", error=BundleSignatureInvalid)


def _json_object(
    raw: bytes, what: str, *, error: type[BundleMalformed | BundleSignatureInvalid] = BundleMalformed
) -> dict[str, Any]:
    try:  # strict: a duplicate "signatures", "files", "scope" or "kid" must not read two ways
        value = parse_strict(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise error(f"{what} is not JSON", file=_SIG) from None
    if not isinstance(value, dict):
        raise error(f"{what} must be a JSON object", file=_SIG)
    return value


def _optional(claims: dict[str, Any], key: str, kind: type) -> Any:
    value = claims.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BundleMalformed(f"JWT claim {key!r} must be a {kind.__name__}", file=_SIG)
    return value
