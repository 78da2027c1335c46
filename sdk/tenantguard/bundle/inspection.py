"""A read-only summary of a bundle for humans and the CLI; verifies nothing."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from tenantguard.bundle.archive import DEFAULT_LIMITS, ArchiveLimits, read_archive
from tenantguard.bundle.content import load_json
from tenantguard.bundle.model import MANIFEST_FILE, SIGNATURES_FILE, Manifest
from tenantguard.bundle.verify import parse_signatures_file, unverified_segment


def inspect(
    source: bytes | str | os.PathLike[str], *, limits: ArchiveLimits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """Manifest, files (size, raw SHA-256) and the *claimed* signer (``verified: False``)."""
    files = read_archive(source, limits)
    manifest = Manifest()
    if MANIFEST_FILE in files:
        manifest = Manifest.from_wire(load_json(files[MANIFEST_FILE], MANIFEST_FILE))
    listing = [
        {"name": name, "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}
        for name, content in sorted(files.items())
    ]
    signature = None
    if SIGNATURES_FILE in files:
        signature = _claimed_signer(parse_signatures_file(files[SIGNATURES_FILE]))
    return {"manifest": manifest.to_wire(), "files": listing, "signature": signature}


def _claimed_signer(token: str) -> dict[str, Any]:
    header, claims = unverified_segment(token, 0), unverified_segment(token, 1)
    signed = claims.get("files")
    return {
        "verified": False,
        "alg": header.get("alg"),
        "kid": header.get("kid") or claims.get("keyid"),
        "iss": claims.get("iss"),
        "iat": claims.get("iat"),
        "scope": claims.get("scope"),
        "files": len(signed) if isinstance(signed, list) else 0,
    }
