"""Reading a bundle end to end: safe archive read, signature check, then parsing.

Nothing is parsed before the signature and every file digest have been checked, so
unverified bytes never reach the JSON parser or the Rego engine (except for the
digest computation of structured files, which OPA's spec requires).
"""

from __future__ import annotations

import os

from tenantguard.bundle.archive import DEFAULT_LIMITS, ArchiveLimits, read_archive
from tenantguard.bundle.content import parse_contents
from tenantguard.bundle.errors import BundleUnsigned
from tenantguard.bundle.model import SIGNATURES_FILE, Bundle
from tenantguard.bundle.verify import Verifier, check_files, parse_signatures_file
from tenantguard.errors import BundleSignatureInvalid


def verify_bundle(
    source: bytes | str | os.PathLike[str],
    verifier: Verifier | None,
    *,
    require_signature: bool = True,
    limits: ArchiveLimits = DEFAULT_LIMITS,
) -> Bundle:
    """Verify and parse a bundle archive (bytes or a path); raise ``BundleRejected``.

    Signed bundles need a ``verifier`` (OPA fails a signed bundle it was not configured
    to verify). Unsigned bundles are refused unless ``require_signature=False``.
    """
    files = read_archive(source, limits)
    raw_signatures = files.pop(SIGNATURES_FILE, None)
    if raw_signatures is None:
        if require_signature:
            raise BundleUnsigned("bundle has no .signatures.json", file=SIGNATURES_FILE)
        return parse_contents(files)
    if verifier is None:
        raise BundleSignatureInvalid(
            "bundle is signed but no verification key is configured", file=SIGNATURES_FILE
        )
    signed = verifier.verify(parse_signatures_file(raw_signatures))
    check_files(files, signed.files)
    return parse_contents(files, signed.signer)
