"""How a tenantguard process reaches NATS: servers, credentials, TLS; one model for every client.

The plane, the sidecar and ``tenantguard dev`` all describe their NATS connection with a
:class:`NatsConnection` and turn it into ``nats.connect`` keyword arguments with
:meth:`NatsConnection.connect_kwargs`, so every transport gets the same defaults and the
same checks:

- a server *list* (``nats://a:4222,nats://b:4222``): a client can attach to any healthy node;
- one way of authenticating: user + password file, token file, nkey seed file or a
  ``.creds`` file (JWT + seed); or credentials in the URL (``nats://user:pass@host``),
  accepted for compatibility and always redacted;
- secret files (password, token, nkey seed, creds, TLS private key) are refused when
  anyone but their owner can read them, like every other tenantguard secret file;
- TLS from a CA file (server verification), a client certificate + key (mutual TLS)
  and an optional server name override (when nodes are dialled by IP).

Nothing here ever formats a secret: :func:`tenantguard.util.urls.shown_url` keeps the user and
replaces a password or token with ``***``; :meth:`NatsConnection.redacted` is what status pages and
logs show. :func:`connect` bounds the first connect and turns nats-py's failures into
typed errors; an authorization refusal is reported as such at once instead of nats-py's
retry-until-timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from tenantguard.errors import ConfigError, NatsAuthorizationRefused, NatsTlsRefused, Unavailable
from tenantguard.util.fsutil import read_private_text, require_private
from tenantguard.util.urls import shown_text, shown_url

SCHEMES: Final = frozenset({"nats", "tls", "ws", "wss"})
TLS_SCHEMES: Final = frozenset({"tls", "wss"})
REDACTED: Final = "***"
AUTHORIZATION_VIOLATION: Final = "authorization violation"
MAX_SECRET_BYTES: Final = 64 * 1024
AuthKind = Literal["none", "url", "password", "token", "nkey", "creds"]

# Help texts shared by every command that takes NATS options (plane, sidecar, dev).
HELP: Final = {
    "servers": "NATS server URL, or a comma-separated list of a cluster's nodes (any healthy one is used)",
    "user": "NATS user name (with --nats-password-file)",
    "password_file": "File holding the NATS password of --nats-user (mode 0600)",
    "token_file": "File holding a NATS authentication token (mode 0600)",
    "nkey_seed_file": "NATS nkey seed file (SU...; mode 0600): authenticate with an nkey",
    "creds_file": "NATS .creds file (user JWT + nkey seed; mode 0600): decentralized auth",
    "tls_ca": "CA bundle (PEM) that NATS servers' certificates must chain to; turns TLS on",
    "tls_cert": "Client certificate (PEM) for mutual TLS with NATS (with --nats-tls-key)",
    "tls_key": "Private key (PEM) of --nats-tls-cert (mode 0600)",
    "tls_server_name": "Expected name in the NATS servers' certificates (when dialling by IP)",
}

def parse_servers(spec: str | Iterable[str]) -> tuple[str, ...]:
    """Server URLs from a comma-separated string (or an iterable of such strings), validated.

    A bare ``host:port`` gets ``nats://``, as nats-py would give it.
    """
    items = [spec] if isinstance(spec, str) else list(spec)
    servers: list[str] = []
    for item in items:
        for part in item.split(","):
            url = part.strip()
            if not url:
                continue
            if "://" not in url:
                url = "nats://" + url
            try:
                parts = urlsplit(url)
                parts.port  # noqa: B018 - raises ValueError on a bad port
            except ValueError:
                raise ConfigError(f"NATS server {shown_url(url)!r} is not a valid URL") from None
            if parts.scheme not in SCHEMES or not parts.hostname:
                raise ConfigError(f"NATS server {shown_url(url)!r}: want nats://, tls://, ws:// or wss://HOST[:PORT]")
            if url not in servers:
                servers.append(url)
    if not servers:
        raise ConfigError("no NATS server given")
    return tuple(servers)


def _has_userinfo(url: str) -> bool:
    return "@" in urlsplit(url).netloc


@dataclass(frozen=True, slots=True, repr=False)
class NatsConnection:
    """Servers, credentials and TLS of one NATS client; see the module docstring.

    Paths are kept, not contents: secret files are checked (owner-only) at construction
    and read at each connect, so a rotated password is picked up on the next reconnect.
    """

    servers: tuple[str, ...]
    user: str | None = None
    password_file: Path | None = None
    token_file: Path | None = None
    nkey_seed_file: Path | None = None
    creds_file: Path | None = None
    tls_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_server_name: str | None = None
    _ssl: list[ssl.SSLContext] = field(default_factory=list, compare=False, init=False)  # built on first use

    def __post_init__(self) -> None:
        object.__setattr__(self, "servers", parse_servers(self.servers))
        for name in ("password_file", "token_file", "nkey_seed_file", "creds_file", "tls_ca_file",
                     "tls_cert_file", "tls_key_file"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value))
        if (self.user is None) != (self.password_file is None):
            raise ConfigError("--nats-user and --nats-password-file go together")
        methods = [m for m, on in (("user/password", self.user is not None), ("token", self.token_file is not None),
                                   ("nkey", self.nkey_seed_file is not None), ("creds", self.creds_file is not None))
                   if on]
        if len(methods) > 1:
            raise ConfigError(f"give one NATS authentication method, not {' and '.join(methods)}")
        if methods and any(_has_userinfo(s) for s in self.servers):
            raise ConfigError("NATS credentials given both in a server URL and as options; use the options")
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ConfigError("--nats-tls-cert and --nats-tls-key go together")
        for path in (self.password_file, self.token_file, self.nkey_seed_file, self.creds_file, self.tls_key_file):
            if path is not None:
                require_private(path)
        for path in (self.tls_ca_file, self.tls_cert_file):
            if path is not None and not path.is_file():
                raise ConfigError(f"NATS TLS file {path} does not exist or is not a file")

    # ------------------------------------------------------------------ building

    @classmethod
    def of(cls, spec: str | Iterable[str] | NatsConnection) -> NatsConnection:
        """A connection with no options beyond the URLs (tests, ``--nats URL`` alone)."""
        return spec if isinstance(spec, NatsConnection) else cls(servers=parse_servers(spec))

    def with_servers(self, servers: str | Iterable[str]) -> NatsConnection:
        return replace(self, servers=parse_servers(servers))

    # ------------------------------------------------------------------ describing

    @property
    def auth_kind(self) -> AuthKind:
        if self.user is not None:
            return "password"
        if self.token_file is not None:
            return "token"
        if self.nkey_seed_file is not None:
            return "nkey"
        if self.creds_file is not None:
            return "creds"
        return "url" if any(_has_userinfo(s) for s in self.servers) else "none"

    @property
    def tls_enabled(self) -> bool:
        return (self.tls_ca_file is not None or self.tls_cert_file is not None
                or any(urlsplit(s).scheme in TLS_SCHEMES for s in self.servers))

    @property
    def redacted_servers(self) -> list[str]:
        return [shown_url(s) for s in self.servers]

    def redacted(self) -> dict[str, Any]:
        """What status pages and logs may show: servers without secrets, which auth, TLS or not."""
        return {"servers": self.redacted_servers, "auth": self.auth_kind, "user": self.user,
                "tls": self.tls_enabled, "client_cert": self.tls_cert_file is not None}

    def __repr__(self) -> str:
        return f"NatsConnection(servers={self.redacted_servers}, auth={self.auth_kind!r}, tls={self.tls_enabled})"

    # ------------------------------------------------------------------ connecting

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context (server verification always on), or None when TLS is off."""
        if not self.tls_enabled:
            return None
        if not self._ssl:
            try:
                context = ssl.create_default_context(
                    cafile=str(self.tls_ca_file) if self.tls_ca_file is not None else None)
                if self.tls_cert_file is not None and self.tls_key_file is not None:
                    context.load_cert_chain(str(self.tls_cert_file), str(self.tls_key_file))
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(f"NATS TLS files cannot be loaded: {type(exc).__name__}: {exc}") from None
            self._ssl.append(context)
        return self._ssl[0]

    def connect_kwargs(self, servers: Iterable[str] | None = None) -> dict[str, Any]:
        """Keyword arguments for ``nats.connect`` (credentials read now): servers, auth, TLS.

        ``servers`` narrows the list (the sidecar dials one node at a time); callers add
        their own reconnect policy, name and callbacks.
        """
        kwargs: dict[str, Any] = {"servers": list(servers if servers is not None else self.servers)}
        if self.user is not None and self.password_file is not None:
            kwargs["user"] = self.user
            kwargs["password"] = read_private_text(self.password_file, max_bytes=MAX_SECRET_BYTES)
        elif self.token_file is not None:
            kwargs["token"] = read_private_text(self.token_file, max_bytes=MAX_SECRET_BYTES)
        elif self.nkey_seed_file is not None:
            kwargs["nkeys_seed_str"] = read_private_text(self.nkey_seed_file, max_bytes=MAX_SECRET_BYTES)
        elif self.creds_file is not None:
            require_private(self.creds_file)
            kwargs["user_credentials"] = str(self.creds_file)
        context = self.ssl_context()
        if context is not None:
            kwargs["tls"] = context
            if self.tls_server_name:
                kwargs["tls_hostname"] = self.tls_server_name
        return kwargs


def from_options(servers: str, *, user: str | None = None, password_file: Path | None = None,
                 token_file: Path | None = None, nkey_seed_file: Path | None = None, creds_file: Path | None = None,
                 tls_ca: Path | None = None, tls_cert: Path | None = None, tls_key: Path | None = None,
                 tls_server_name: str | None = None) -> NatsConnection:
    """A :class:`NatsConnection` from the ``--nats*`` flags every command shares."""
    return NatsConnection(servers=parse_servers(servers), user=user or None, password_file=password_file,
                          token_file=token_file, nkey_seed_file=nkey_seed_file, creds_file=creds_file,
                          tls_ca_file=tls_ca, tls_cert_file=tls_cert, tls_key_file=tls_key,
                          tls_server_name=tls_server_name or None)


def connected_server(nc: Any) -> str | None:
    """The (redacted) URL of the node ``nc`` is attached to, or None when not connected."""
    url = getattr(nc, "connected_url", None)
    if url is None or not getattr(nc, "is_connected", False):
        return None
    return shown_url(url.geturl())


def is_authorization_error(exc: BaseException) -> bool:
    """nats-py reports a refused login as ``Error("nats: 'Authorization Violation'")`` or ``AuthorizationError``."""
    import nats.errors

    return isinstance(exc, nats.errors.AuthorizationError) or AUTHORIZATION_VIOLATION in str(exc).lower()


def translate_connect_error(exc: BaseException, where: str) -> Unavailable:
    """The typed error for a failed connect to ``where`` (already redacted); never quotes a secret."""
    if is_authorization_error(exc):
        return NatsAuthorizationRefused(
            f"NATS authorization refused by {where}: check the user/password, token, nkey or creds", servers=where)
    if isinstance(exc, ssl.SSLError):
        reason = getattr(exc, "reason", None) or type(exc).__name__
        return NatsTlsRefused(f"TLS with NATS at {where} failed ({reason})", servers=where)
    if isinstance(exc, TimeoutError):
        return Unavailable(f"cannot connect to NATS at {where} (timed out)")
    return Unavailable(f"cannot connect to NATS at {where} ({type(exc).__name__}: {shown_text(str(exc))[:200]})")


ErrorCallback = Callable[[Exception], Awaitable[None]]


async def connect(conn: NatsConnection, *, timeout: float, servers: Iterable[str] | None = None,
                  error_cb: ErrorCallback | None = None, **options: Any) -> Any:
    """``nats.connect`` bounded by ``timeout``, failures as typed errors (see :func:`translate_connect_error`).

    nats-py with ``allow_reconnect`` keeps retrying a server that refused the login until
    the deadline; here the first authorization or TLS refusal ends the attempt at once.
    """
    from nats.aio.client import Client

    kwargs = conn.connect_kwargs(servers)
    where = ", ".join(shown_url(s) for s in kwargs["servers"])
    refused: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    async def on_error(exc: Exception) -> None:
        if (is_authorization_error(exc) or isinstance(exc, ssl.SSLError)) and not refused.done():
            refused.set_result(exc)
        if error_cb is not None:
            await error_cb(exc)

    nc = Client()
    attempt: asyncio.Future[None] = asyncio.ensure_future(nc.connect(**kwargs, **options, error_cb=on_error))
    try:
        waiting: set[asyncio.Future[Any]] = {attempt, refused}
        done, _ = await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if attempt in done:
            attempt.result()  # raises the connect error, if any
            return nc
        raise refused.result() if refused in done else TimeoutError()
    except asyncio.CancelledError:
        await _abandon(nc, attempt, timeout)
        raise
    except Exception as exc:
        await _abandon(nc, attempt, timeout)
        raise translate_connect_error(exc, where) from None
    finally:
        if not refused.done():
            refused.cancel()


async def _abandon(nc: Any, attempt: asyncio.Future[Any], timeout: float) -> None:
    attempt.cancel()
    await asyncio.wait({attempt}, timeout=timeout)
    if attempt.done() and not attempt.cancelled():
        attempt.exception()  # retrieved, so asyncio does not log it as never seen
    with contextlib.suppress(Exception):
        await asyncio.wait_for(nc.close(), timeout=timeout)


def new_user_nkey() -> bytes:
    """A fresh NATS user nkey seed (``SU...``, the form ``--nats-nkey-seed-file`` reads)."""
    import os

    import nkeys

    return bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))


def nkey_public(seed: bytes) -> str:
    """The public key (``U...``) of a user nkey seed: what a nats-server config lists."""
    import nkeys

    try:
        return str(nkeys.from_seed(bytearray(seed.strip())).public_key.decode())
    except (nkeys.NkeysError, ValueError) as exc:
        raise ConfigError(f"not a NATS nkey seed ({type(exc).__name__})") from None


class ServerInfoCollector:
    """``tg_nats_server_info{server="<redacted url>"} 1``: which node a component is attached to
    (read at scrape time; ``server="none"`` and 0 while disconnected)."""

    def __init__(self, read: Callable[[], str | None]) -> None:
        self._read = read

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        server = self._read()
        family = GaugeMetricFamily("tg_nats_server_info", "NATS node this process is attached to (redacted URL)",
                                   labels=["server"])
        family.add_metric([server or "none"], 1.0 if server else 0.0)
        yield family

    def describe(self) -> Any:
        return []
