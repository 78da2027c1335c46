"""URLs as they may be shown to a person: in errors, logs and the CLI's output.

A URL can carry credentials (``https://user:secret@host``, ``nats://token@host``,
``?token=...``); an error message is copied into tickets and chat, so every URL a message
names goes through :func:`shown_url` first, and text that may quote one (a library's
exception) through :func:`shown_text`. One rule for both, for HTTP and NATS alike: the user
name stays (it tells which identity failed), a password becomes ``***``, and a user part
without a password, which NATS reads as a token, is hidden whole.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tenantguard.errors import ConfigError

HIDDEN: Final = "***"
# Query parameters whose value is a credential (matched as a part of the name, case-insensitive).
_SECRET_PARAM: Final = re.compile(r"pass|secret|token|key|sig|auth|cred", re.IGNORECASE)
_USERINFO: Final = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<user>[^\s:@/]+)(?::(?P<secret>[^\s@/]*))?@",
                              re.IGNORECASE)


def _userinfo(user: str, secret: str | None) -> str:
    return f"{HIDDEN}@" if secret is None else f"{user}:{HIDDEN}@"


def shown_text(text: str) -> str:
    """Every URL credential in ``text`` hidden by the module's rule (for messages that may quote a URL)."""
    return _USERINFO.sub(lambda m: m.group("scheme") + _userinfo(m.group("user"), m.group("secret")), text)


def shown_url(url: str) -> str:
    """``url`` with its userinfo hidden by the module's rule and credential-like query values hidden.

    A value that does not parse as a URL is shown as ``***`` whole: it may be anything.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return HIDDEN
    if not parts.scheme or host is None:
        return url if "@" not in url and "?" not in url else HIDDEN
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None:
        netloc += f":{port}"
    if parts.username is not None or parts.password is not None:
        netloc = _userinfo(parts.username or "", parts.password) + netloc
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, HIDDEN if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def check_http_url(url: str, what: str) -> None:
    """Refuse at once a URL no request can reach (``localhost:8282`` used to be sent, fail as
    "unreachable: UnsupportedProtocol" and, for plane writes, be retried for ``--retry-for``).
    ``what`` names it in the one-line error (``policy plane URL``, ``sidecar URL``)."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("http", "https") and rest and not rest.startswith(("/", "?", "#")):
        return
    bare = rest if sep else url
    example = f"http://{bare}" if bare and not bare.endswith(":") else "http://127.0.0.1:8282"
    raise ConfigError(f"{what} {shown_url(url)!r} must start with http:// or https:// and name a host "
                      f"(e.g. {shown_url(example)!r})", url=shown_url(url))


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1): a host whose traffic never leaves the machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def in_clear_off_the_machine(url: str) -> bool:
    """A plain ``http://`` URL to a host other than this machine's loopback: what it carries (a bearer
    token, a join secret) crosses the network readable."""
    parts = urlsplit(url)
    return parts.scheme.lower() == "http" and not is_loopback_host(parts.hostname or "")
