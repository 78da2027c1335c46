"""TLS for the plane's HTTP API: the server side (``--tls-cert/--tls-key``, optionally
``--tls-client-ca`` for mutual TLS) and the client side (``--plane-ca``, optionally
``--plane-client-cert/--plane-client-key``) that the CLI, the SDK's plane clients and the
sidecar's key registration share, so every transport gets the same defaults and checks:

- verification is always on; there is no option that turns it off. A client names the CA
  the plane's certificate chains to (else the system's, as httpx does), and the host name in
  the URL must be in the certificate;
- TLS 1.2 at least, no compression, the ciphers of Python's default context;
- a private key file that anyone but its owner can read is refused at start, like every other
  tenantguard secret file (:func:`tenantguard.util.fsutil.require_private`);
- files that cannot be loaded (missing, not PEM, key and certificate that do not match) are a
  one-line :class:`~tenantguard.errors.ConfigError`, never a traceback.

A failed handshake seen by a client is told apart from an unreachable plane with
:func:`tls_failure`, so the plane client can raise
:class:`~tenantguard.errors.PlaneTlsRefused` (not retried: only an operator can fix it).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tenantguard.errors import ConfigError
from tenantguard.util.fsutil import require_private

# Help texts of the plane's serving flags and of every client's --plane-* TLS flags.
SERVER_HELP: Final = {
    "cert": "Certificate chain (PEM) the plane serves HTTPS with (with --tls-key); default: plain HTTP",
    "key": "Private key (PEM) of --tls-cert (mode 0600; a file others can read is refused)",
    "client_ca": "CA bundle (PEM): require a client certificate it signed on every connection (mutual TLS)",
}
CLIENT_HELP: Final = {
    "ca": "CA bundle (PEM) the plane's HTTPS certificate must chain to (default: the system's CAs)",
    "cert": "Client certificate (PEM) for a plane that requires mutual TLS (with --plane-client-key)",
    "key": "Private key (PEM) of --plane-client-cert (mode 0600)",
}


def _require_file(path: Path, what: str) -> None:
    if not path.is_file():
        raise ConfigError(f"{what} {path} does not exist or is not a file")


def _hardened(context: ssl.SSLContext) -> ssl.SSLContext:
    """TLS 1.2 at least, no compression (the default context's ciphers are kept)."""
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    return context


def _load_error(what: str, exc: OSError | ssl.SSLError) -> ConfigError:
    reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or type(exc).__name__
    return ConfigError(f"{what} cannot be loaded: {reason}")


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The certificate a server presents and, for mutual TLS, the CA its clients' certificates must chain to."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    _context: list[ssl.SSLContext] = field(default_factory=list, compare=False, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("cert_file", "key_file", "client_ca_file"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        _require_file(self.cert_file, "TLS certificate")
        require_private(self.key_file)
        if self.client_ca_file is not None:
            _require_file(self.client_ca_file, "TLS client CA")
        self.ssl_context()  # a key that does not match, or a file that is not PEM, fails at start

    @classmethod
    def from_options(cls, cert: Path | None, key: Path | None, client_ca: Path | None = None) -> ServerTls | None:
        """From ``--tls-cert``, ``--tls-key``, ``--tls-client-ca``: None (plain HTTP) when none is given."""
        if cert is None and key is None:
            if client_ca is not None:
                raise ConfigError("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
            return None
        if cert is None or key is None:
            raise ConfigError("--tls-cert and --tls-key go together")
        return cls(cert_file=cert, key_file=key, client_ca_file=client_ca)

    @property
    def mutual(self) -> bool:
        return self.client_ca_file is not None

    def ssl_context(self) -> ssl.SSLContext:
        """The server context, built once: verification of clients' certificates when ``mutual``."""
        if not self._context:
            context = _hardened(ssl.create_default_context(ssl.Purpose.CLIENT_AUTH))
            try:
                context.load_cert_chain(str(self.cert_file), str(self.key_file))
                if self.client_ca_file is not None:
                    context.load_verify_locations(cafile=str(self.client_ca_file))
                    context.verify_mode = ssl.CERT_REQUIRED
            except (OSError, ssl.SSLError) as exc:
                raise _load_error("the TLS certificate, key or client CA", exc) from None
            context.set_alpn_protocols(["http/1.1"])  # no h2 here: the guarded protocol is HTTP/1.1
            self._context.append(context)
        return self._context[0]


@dataclass(frozen=True, slots=True)
class ClientTls:
    """What a client of the plane trusts (``ca_file``; None: the system's CAs) and, for a plane that
    requires mutual TLS, the certificate it presents. An empty one changes nothing (httpx's defaults)."""

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    _context: list[ssl.SSLContext] = field(default_factory=list, compare=False, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("ca_file", "cert_file", "key_file"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        if (self.cert_file is None) != (self.key_file is None):
            raise ConfigError("--plane-client-cert and --plane-client-key go together")
        if self.ca_file is not None:
            _require_file(self.ca_file, "plane CA file")
        if self.cert_file is not None and self.key_file is not None:
            _require_file(self.cert_file, "plane client certificate")
            require_private(self.key_file)
        if self.configured:
            self.ssl_context()

    @property
    def configured(self) -> bool:
        return self.ca_file is not None or self.cert_file is not None

    def verify(self) -> ssl.SSLContext | bool:
        """httpx's ``verify=``: this context, or True (httpx's default verification) when empty."""
        return self.ssl_context() if self.configured else True

    def ssl_context(self) -> ssl.SSLContext:
        """The client context, built once; it always verifies the server's certificate and name."""
        if not self._context:
            try:
                cafile = str(self.ca_file) if self.ca_file is not None else _default_cafile()
                context = _hardened(ssl.create_default_context(cafile=cafile))
                if self.cert_file is not None and self.key_file is not None:
                    context.load_cert_chain(str(self.cert_file), str(self.key_file))
            except (OSError, ssl.SSLError) as exc:
                raise _load_error("the plane CA or client certificate", exc) from None
            self._context.append(context)
        return self._context[0]

    def check_url(self, url: str) -> None:
        """TLS options with a plain ``http://`` URL would send the token in clear while the operator
        believes otherwise: refuse, never fall back."""
        if self.configured and not url.lower().startswith("https://"):
            raise ConfigError("--plane-ca or a client certificate was given, but the plane URL is not https://; "
                              "use the plane's https:// URL")


def _default_cafile() -> str | None:
    """The CA bundle httpx trusts by default (certifi), so naming only a client certificate keeps it."""
    try:
        import certifi
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return None
    return str(certifi.where())


def tls_failure(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error under an HTTP client's exception (httpx wraps httpcore's, which wraps ssl's), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def tls_reason(error: ssl.SSLError) -> str:
    """What went wrong, in the words OpenSSL uses (``certificate verify failed: Hostname mismatch, ...``)."""
    if isinstance(error, ssl.SSLCertVerificationError) and error.verify_message:
        return f"certificate verify failed: {error.verify_message}"
    return str(getattr(error, "reason", None) or error.__class__.__name__)
