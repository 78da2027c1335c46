"""OPA-compatible policy bundles: build, sign, verify, inspect and activate.

The archive format and the ``.signatures.json`` JWT follow OPA (v1/bundle), so a bundle
built here loads in OPA and one built by ``opa build --signing-key`` loads here (with
:class:`PublicKeyVerifier`). See each module for the rules it enforces.
"""

from tenantguard.bundle.archive import DEFAULT_LIMITS, ArchiveLimits, read_archive, write_archive
from tenantguard.bundle.build import build_bundle, content_revision, revision_digest, sign_bundle
from tenantguard.bundle.errors import BundlePersistError, BundleUnsigned
from tenantguard.bundle.hashing import canonical_json, file_digest
from tenantguard.bundle.inspection import inspect
from tenantguard.bundle.load import verify_bundle
from tenantguard.bundle.model import (
    MANIFEST_FILE,
    SIGNATURES_FILE,
    Bundle,
    FileHash,
    Manifest,
    SignatureInfo,
    SignedFiles,
)
from tenantguard.bundle.signing import JwtSigner, Signer
from tenantguard.bundle.store import Activation, BundleStore, order_key
from tenantguard.bundle.verify import PublicKeyVerifier, TrustSetVerifier, Verifier

__all__ = [
    "DEFAULT_LIMITS",
    "MANIFEST_FILE",
    "SIGNATURES_FILE",
    "Activation",
    "ArchiveLimits",
    "Bundle",
    "BundlePersistError",
    "BundleStore",
    "BundleUnsigned",
    "FileHash",
    "JwtSigner",
    "Manifest",
    "PublicKeyVerifier",
    "SignatureInfo",
    "SignedFiles",
    "Signer",
    "TrustSetVerifier",
    "Verifier",
    "build_bundle",
    "canonical_json",
    "content_revision",
    "file_digest",
    "inspect",
    "order_key",
    "read_archive",
    "revision_digest",
    "sign_bundle",
    "verify_bundle",
    "write_archive",
]
