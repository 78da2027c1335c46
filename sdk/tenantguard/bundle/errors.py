"""Bundle errors that ``tenantguard.errors`` does not define yet.

Both subclass the shared hierarchy so callers that catch :class:`BundleRejected` (or
:class:`TenantGuardError`) keep working; each has its own stable ``code``.
"""

from __future__ import annotations

from tenantguard.errors import BundleSignatureInvalid, TenantGuardError


class BundleUnsigned(BundleSignatureInvalid):
    """The bundle has no ``.signatures.json`` but the caller requires a signature."""

    code = "bundle_unsigned"


class BundlePersistError(TenantGuardError):
    """The verified bundle could not be written to disk, so it was not activated.

    Retrying can help (a full disk, a transient I/O error); the active bundle stays.
    """

    code = "bundle_persist_failed"
    http_status = 500
    retryable = True
