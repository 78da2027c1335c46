"""Signing keys, RFC 7638 key ids, and the trust set that maps ``kid`` to a public key.

Private keys live only where they are generated (a sidecar, the edge, the plane) and
are written 0600. Everything that verifies (tokens, bundles, events) looks keys up in
a :class:`TrustSet`, which can hold several keys per issuer so that rotation has an
overlap window, and which travels as a JWKS (RFC 7517) with two extra members per
key: ``iss`` (the issuer the key may sign for) and ``exp`` (its not-after time).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from tenantguard.errors import KeyMaterialError

Algorithm: TypeAlias = Literal["EdDSA", "ES256", "RS256"]
PrivateKey: TypeAlias = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
PublicKey: TypeAlias = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey

SUPPORTED_ALGORITHMS: tuple[Algorithm, ...] = ("EdDSA", "ES256", "RS256")
# RFC 9864 gives EdDSA over Ed25519 a fully specified name, "Ed25519", and deprecates "EdDSA";
# IdPs and JOSE libraries are moving to it. Both name the one algorithm an Ed25519 key has here
# (an Ed448 key is refused whatever it is called), so either may appear in a JWS header, a JWK
# or a configured list; what tenantguard signs keeps saying "EdDSA", which every verifier knows.
ALGORITHM_NAMES: Mapping[str, Algorithm] = {"EdDSA": "EdDSA", "Ed25519": "EdDSA", "ES256": "ES256", "RS256": "RS256"}
DEFAULT_ALGORITHM: Algorithm = "EdDSA"
MIN_RSA_BITS = 2048
MAX_RSA_BITS = 8192  # OpenSSL will not verify past 16,384 bits: a larger key is unusable, only a cost to hold
MAX_JWKS_KEYS = 1024
MAX_EXP = 2**63  # a JWK exp beyond this is no time at all (and would overflow a float)

# RFC 7638 section 3.2: the required members per key type, in lexicographic order.
_THUMBPRINT_MEMBERS = {"OKP": ("crv", "kty", "x"), "EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n")}


def algorithm_for(key: PrivateKey | PublicKey) -> Algorithm:
    """The one JWS algorithm a key may be used with (no algorithm agility per key)."""
    if isinstance(key, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey):
        return "EdDSA"
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        if key.curve.name != "secp256r1":
            raise KeyMaterialError(f"EC curve {key.curve.name} is not supported; use P-256")
        return "ES256"
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise KeyMaterialError(f"RSA key of {key.key_size} bits is too small")
        if key.key_size > MAX_RSA_BITS:
            raise KeyMaterialError(f"RSA key of {key.key_size} bits is larger than {MAX_RSA_BITS}")
        return "RS256"
    raise KeyMaterialError(f"unsupported key type {type(key).__name__}")


def algorithm_named(name: object) -> Algorithm | None:
    """The algorithm a JWS header's or a JWK's ``alg`` names, None when it is none accepted here."""
    return ALGORITHM_NAMES.get(name) if isinstance(name, str) else None


def algorithms_named(names: Iterable[object]) -> frozenset[Algorithm] | None:
    """A configured list of algorithm names as algorithms; None when it is empty or names one not accepted."""
    named = {algorithm_named(name) for name in names}
    return None if not named or None in named else frozenset(a for a in named if a is not None)


def public_jwk(key: PublicKey) -> dict[str, Any]:
    """The public JWK (RFC 7517) of a key, with ``kid``, ``alg`` and ``use`` set."""
    alg = algorithm_for(key)
    converter = {"EdDSA": OKPAlgorithm, "ES256": ECAlgorithm, "RS256": RSAAlgorithm}[alg]
    jwk: dict[str, Any] = converter.to_jwk(key, as_dict=True)
    jwk = {k: v for k, v in jwk.items() if k in _THUMBPRINT_MEMBERS[jwk["kty"]]}
    jwk.update(kid=jwk_thumbprint(jwk), alg=alg, use="sig")
    return jwk


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """RFC 7638 thumbprint (SHA-256, base64url without padding): a stable ``kid``."""
    kty = jwk.get("kty")
    members = _THUMBPRINT_MEMBERS.get(str(kty))
    if members is None:
        raise KeyMaterialError(f"unsupported kty {kty!r}")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def key_id(key: PrivateKey | PublicKey) -> str:
    """The RFC 7638 ``kid`` of a key (computed from the public half)."""
    public = key.public_key() if hasattr(key, "private_bytes") else key
    return str(public_jwk(public)["kid"])  # type: ignore[arg-type]


def write_private(path: Path, data: bytes) -> None:
    """Write secret bytes so that only the owner can read them, even for an instant."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # umask cannot widen it, an existing file cannot keep old bits
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A private key with its algorithm and ``kid``; the only thing that can mint."""

    private_key: PrivateKey
    alg: Algorithm
    kid: str

    @classmethod
    def generate(cls, alg: Algorithm = DEFAULT_ALGORITHM) -> SigningKey:
        private: PrivateKey
        if alg == "EdDSA":
            private = ed25519.Ed25519PrivateKey.generate()
        elif alg == "ES256":
            private = ec.generate_private_key(ec.SECP256R1())
        elif alg == "RS256":
            private = rsa.generate_private_key(public_exponent=65537, key_size=3072)
        else:
            raise KeyMaterialError(f"algorithm {alg!r} is not supported")
        return cls.from_private_key(private)

    @classmethod
    def from_private_key(cls, private: PrivateKey) -> SigningKey:
        return cls(private_key=private, alg=algorithm_for(private), kid=key_id(private))

    @classmethod
    def from_pem(cls, data: bytes) -> SigningKey:
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise KeyMaterialError(f"not a PEM private key: {exc}") from None
        if not isinstance(private, ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise KeyMaterialError(f"unsupported private key type {type(private).__name__}")
        return cls.from_private_key(private)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SigningKey:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise KeyMaterialError(f"cannot read key file {path}: {exc.strerror}") from None
        if not data.strip():
            raise KeyMaterialError(f"key file {path} is empty; `tenantguard keys generate {path}` writes one")
        if b"PRIVATE KEY-----" not in data:
            what = "a public key" if b"PUBLIC KEY-----" in data else "no PEM private key"
            raise KeyMaterialError(f"key file {path} holds {what}; give the private key (the file without .pub), "
                                   "or create one with `tenantguard keys generate FILE`")
        try:
            return cls.from_pem(data)
        except KeyMaterialError as exc:
            raise KeyMaterialError(f"key file {path}: {exc.message}") from None

    @property
    def public_key(self) -> PublicKey:
        return self.private_key.public_key()

    def public_jwk(self) -> dict[str, Any]:
        return public_jwk(self.public_key)

    def private_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def public_pem(self) -> bytes:
        return public_pem(self.public_key)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the private key (0600) and ``<path>.pub`` beside it; return the .pub path."""
        target = Path(path)
        write_private(target, self.private_pem())
        pub = target.with_name(target.name + ".pub")
        pub.write_bytes(self.public_pem())
        return pub

    def __repr__(self) -> str:  # never print key material
        return f"SigningKey(alg={self.alg!r}, kid={self.kid!r})"


def public_pem(key: PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def load_public_key(data: bytes) -> PublicKey:
    """Load a public key from PEM, or take the public half of a PEM private key."""
    try:
        if b"PRIVATE KEY" in data:
            return SigningKey.from_pem(data).public_key
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        reason = str(exc).split(". See https://", 1)[0]  # cryptography appends a FAQ link to its own words
        raise KeyMaterialError(f"not a PEM public key: {reason}") from None
    algorithm_for(key)  # type: ignore[arg-type]
    return key  # type: ignore[return-value]


def load_public_key_file(path: str | os.PathLike[str]) -> PublicKey:
    """A public key (or a private key's public half) from a PEM file; like :meth:`SigningKey.load`,
    every refusal names the file and what it holds instead, never a parser's internals."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyMaterialError(f"cannot read key file {path}: {exc.strerror}") from None
    if not data.strip():
        raise KeyMaterialError(f"key file {path} is empty; give the public key (.pub) of the signing key")
    if b"KEY-----" not in data:
        raise KeyMaterialError(f"key file {path} holds no PEM key; give the public key (.pub) of the signing key, "
                               "as `tenantguard keys generate FILE` writes it")
    try:
        return load_public_key(data)
    except KeyMaterialError as exc:
        raise KeyMaterialError(f"key file {path}: {exc.message}") from None


def public_key_from_jwk(jwk: Mapping[str, Any]) -> PublicKey:
    """Parse one public JWK; refuses private members and symmetric (``oct``) keys."""
    if not isinstance(jwk, Mapping):
        raise KeyMaterialError("a JWK is a JSON object")
    kty = jwk.get("kty")
    if not isinstance(kty, str) or kty not in _THUMBPRINT_MEMBERS:
        raise KeyMaterialError(f"JWK kty {kty!r} is not allowed (asymmetric keys only)")
    if "d" in jwk:
        raise KeyMaterialError("JWK carries private key material; publish public keys only")
    converter = {"OKP": OKPAlgorithm, "EC": ECAlgorithm, "RSA": RSAAlgorithm}[str(kty)]
    try:
        key = converter.from_jwk(dict(jwk))
    except Exception as exc:  # pyjwt raises several types for bad JWKs
        raise KeyMaterialError(f"invalid JWK: {exc}") from None
    algorithm_for(key)
    return key  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class TrustedKey:
    """A public key that may sign for exactly one issuer, until ``not_after`` (epoch s)."""

    kid: str
    issuer: str
    public_key: PublicKey
    alg: Algorithm
    not_after: float | None = None

    @classmethod
    def of(cls, public_key: PublicKey, issuer: str, not_after: float | None = None) -> TrustedKey:
        return cls(key_id(public_key), issuer, public_key, algorithm_for(public_key), not_after)

    def is_current(self, now: float) -> bool:
        return self.not_after is None or now < self.not_after

    def to_jwk(self) -> dict[str, Any]:
        jwk = public_jwk(self.public_key)
        jwk["iss"] = self.issuer
        if self.not_after is not None:
            jwk["exp"] = int(self.not_after)
        return jwk

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> TrustedKey:
        key = public_key_from_jwk(jwk)
        issuer = jwk.get("iss")
        if not isinstance(issuer, str) or not issuer:
            raise KeyMaterialError("trusted JWK needs an 'iss' member naming its issuer")
        kid = key_id(key)
        if jwk.get("kid", kid) != kid:
            raise KeyMaterialError(f"JWK kid {jwk.get('kid')!r} is not its RFC 7638 thumbprint")
        if algorithm_named(jwk.get("alg", algorithm_for(key))) != algorithm_for(key):
            raise KeyMaterialError(f"JWK alg {jwk.get('alg')!r} does not match the key type")
        exp = jwk.get("exp")
        if exp is not None and (isinstance(exp, bool) or not isinstance(exp, int | float)
                                or not 0 <= exp < MAX_EXP or exp != exp):
            raise KeyMaterialError("JWK 'exp' must be epoch seconds (a finite, non-negative number)")
        return cls(kid, issuer, key, algorithm_for(key), float(exp) if exp is not None else None)


class TrustSet:
    """The keys this process believes, by ``kid``; safe to read while another thread writes.

    Readers get a consistent snapshot: each write replaces the whole mapping, so a
    lookup never sees half an update. ``version`` grows on every change so that caches
    of verified tokens can notice a removed key.
    """

    def __init__(self, keys: Iterable[TrustedKey] = ()) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, TrustedKey] = {}
        self.version = 0
        for key in keys:
            self.add(key)

    def get(self, kid: str) -> TrustedKey | None:
        return self._keys.get(kid)

    def __contains__(self, kid: object) -> bool:
        return kid in self._keys

    def __iter__(self) -> Iterator[TrustedKey]:
        return iter(list(self._keys.values()))

    def __len__(self) -> int:
        return len(self._keys)

    def for_issuer(self, issuer: str) -> list[TrustedKey]:
        return [k for k in self._keys.values() if k.issuer == issuer]

    def add(self, key: TrustedKey) -> None:
        with self._lock:
            current = self._keys.get(key.kid)
            if current is not None and current.issuer != key.issuer:
                raise KeyMaterialError(f"kid {key.kid} is already trusted for issuer {current.issuer!r}")
            self._keys = {**self._keys, key.kid: key}
            self.version += 1

    def add_public_key(self, public_key: PublicKey, issuer: str, not_after: float | None = None) -> TrustedKey:
        key = TrustedKey.of(public_key, issuer, not_after)
        self.add(key)
        return key

    def remove(self, kid: str) -> bool:
        with self._lock:
            if kid not in self._keys:
                return False
            self._keys = {k: v for k, v in self._keys.items() if k != kid}
            self.version += 1
            return True

    def replace_all(self, keys: Iterable[TrustedKey]) -> None:
        fresh = TrustSet(keys)
        with self._lock:
            self._keys = fresh._keys
            self.version += 1

    def prune_expired(self, now: float | None = None) -> list[str]:
        now = time.time() if now is None else now
        gone = [k.kid for k in self._keys.values() if not k.is_current(now)]
        for kid in gone:
            self.remove(kid)
        return gone

    def to_jwks(self) -> dict[str, Any]:
        return {"keys": [k.to_jwk() for k in self._keys.values()]}

    @classmethod
    def from_jwks(cls, jwks: Mapping[str, Any]) -> TrustSet:
        keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
        if not isinstance(keys, list):
            raise KeyMaterialError("a JWKS is an object with a 'keys' list")
        if len(keys) > MAX_JWKS_KEYS:
            raise KeyMaterialError(f"JWKS holds {len(keys)} keys; at most {MAX_JWKS_KEYS}")
        return cls(TrustedKey.from_jwk(k) for k in keys)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TrustSet:
        """Read a trust file: a JWKS whose keys carry ``iss`` (and optionally ``exp``)."""
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyMaterialError(f"cannot read trust file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if "-----BEGIN" in text:  # a PEM key where a trust file belongs: the usual first try
            raise KeyMaterialError(f"trust file {path} holds a PEM key, not a trust file (a JWKS naming each key's "
                                   f"issuer): `tenantguard keys jwks {path} --issuer ISSUER --out trust.json` "
                                   "makes one")
        try:
            return cls.from_jwks(json.loads(text))
        except json.JSONDecodeError as exc:
            raise KeyMaterialError(f"trust file {path} is not JSON: {exc.msg}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.to_jwks(), indent=2) + "\n")
