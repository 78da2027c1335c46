"""The wire-independent shapes of a policy bundle: manifest, signed file list, bundle."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tenantguard.errors import BundleMalformed
from tenantguard.schema.model import Schema

MANIFEST_FILE = ".manifest"
SIGNATURES_FILE = ".signatures.json"
# A relationship schema at the bundle root, in one of the languages ``tenantguard.schema``
# reads (OpenFGA DSL, OpenFGA JSON, SpiceDB); at most one. OPA carries it as any other file.
SCHEMA_FILES = ("schema.fga", "schema.json", "schema.zed")
DEFAULT_HASH_ALGORITHM = "SHA-256"


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Manifest:
    """The ``.manifest`` fields tenantguard uses; unknown fields are ignored, as OPA does.

    ``roots`` defaults to ``("",)`` (the bundle owns all of ``data``), as in OPA.
    ``metadata`` is free-form; ``metadata["serial"]`` orders bundles (see ``store``).
    """

    revision: str = ""
    roots: tuple[str, ...] = ("",)
    metadata: Mapping[str, Any] = field(default_factory=_empty)
    rego_version: int | None = None

    @classmethod
    def from_wire(cls, raw: Any) -> Manifest:
        if not isinstance(raw, dict):
            raise _bad("the manifest must be a JSON object")
        revision = raw.get("revision", "")
        if not isinstance(revision, str):
            raise _bad("manifest 'revision' must be a string")
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise _bad("manifest 'metadata' must be an object")
        rego_version = raw.get("rego_version")
        if rego_version is not None and (isinstance(rego_version, bool) or rego_version not in (0, 1)):
            raise _bad("manifest 'rego_version' must be 0 or 1")
        if raw.get("wasm"):
            raise _bad("manifest 'wasm' resolvers are not supported (no Wasm engine here)")
        return cls(revision, _roots(raw.get("roots")), MappingProxyType(dict(metadata)), rego_version)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"revision": self.revision, "roots": list(self.roots)}
        if self.metadata:
            wire["metadata"] = dict(self.metadata)
        if self.rego_version is not None:
            wire["rego_version"] = self.rego_version
        return wire


def _roots(raw: Any) -> tuple[str, ...]:
    """Normalise roots like OPA (no leading or trailing ``/``) and refuse overlaps."""
    if raw is None:
        return ("",)
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise _bad("manifest 'roots' must be a list of strings")
    roots = tuple(r.strip("/") for r in raw)
    for i, a in enumerate(roots):
        for b in roots[i + 1 :]:
            if root_contains(a, b) or root_contains(b, a):
                raise _bad(f"manifest has overlapping roots {a!r} and {b!r}")
    return roots


def root_contains(root: str, path: str) -> bool:
    """OPA's rule: ``""`` contains everything, else ``root`` is a segment-prefix of ``path``."""
    if root == "":
        return True
    root_segments, path_segments = root.split("/"), path.split("/")
    return path_segments[: len(root_segments)] == root_segments


def _bad(message: str) -> BundleMalformed:
    return BundleMalformed(message, file=MANIFEST_FILE)


@dataclass(frozen=True, slots=True)
class FileHash:
    """One entry of the signed ``files`` list: a bundle path, its hex digest and algorithm."""

    name: str
    hash: str
    algorithm: str = DEFAULT_HASH_ALGORITHM

    def to_wire(self) -> dict[str, str]:
        return {"name": self.name, "hash": self.hash, "algorithm": self.algorithm}


@dataclass(frozen=True, slots=True)
class SignatureInfo:
    """Who signed a bundle, from the verified JWT (``iss``/``iat`` are informational)."""

    kid: str | None
    alg: str
    issuer: str | None = None
    issued_at: int | None = None
    scope: str | None = None


@dataclass(frozen=True, slots=True)
class SignedFiles:
    """What a verifier vouches for: the signed file list and the signer."""

    files: Mapping[str, FileHash]
    signer: SignatureInfo


@dataclass(frozen=True, slots=True)
class Bundle:
    """A parsed, verified bundle; immutable so the active one can be shared freely.

    ``files`` holds every file the signature covers (all members but
    ``.signatures.json``), ``modules`` the Rego sources by path, and ``data`` the merged
    data tree (``a/b/data.json`` lands under ``data["a"]["b"]``). Treat ``data`` as
    read-only: it is shared by every reader of the active bundle.
    """

    manifest: Manifest
    modules: Mapping[str, str]
    data: dict[str, Any]
    files: Mapping[str, bytes]
    signature: SignatureInfo | None = None
    schema: Schema | None = None  # the relationship schema (SCHEMA_FILES), parsed and validated

    @property
    def revision(self) -> str:
        return self.manifest.revision

    @property
    def kid(self) -> str | None:
        return self.signature.kid if self.signature else None

    @property
    def issuer(self) -> str | None:
        return self.signature.issuer if self.signature else None

    def content_digest(self) -> str:
        """SHA-256 over the names and bytes of ``files``: equal iff the content is equal."""
        outer = hashlib.sha256()
        for name in sorted(self.files):
            outer.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        return outer.hexdigest()
