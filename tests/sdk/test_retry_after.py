"""Every 503 a tenantguard service answers is typed and carries ``Retry-After``.

The SDK, the CLI and proxies retry on it; a 503 without it reads as "down, give up". Found
missing on: the plane's and the sidecar's ``/ready``, the sidecar's ``/oauth2/token``
(``temporarily_unavailable``), the console's busy sign-in page, and typed errors whose class
says 503 but not ``retryable`` (``nats_authorization_refused``, ``nats_tls_refused``, the legacy
relations refusals). The probes are checked on real processes in
``tests/feed/test_grpc_health.py`` and ``tests/plane/test_groupcommit.py``.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterator

import pytest
import tenantguard
from tenantguard.errors import TenantGuardError
from tenantguard.exchange import ExchangeError, TemporarilyUnavailable
from tenantguard.server.asgi import error_response

import authz_sidecar
import policy_plane
from authz_sidecar.http.exchange import _oauth_error


def _subclasses(cls: type[TenantGuardError]) -> Iterator[type[TenantGuardError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _every_error_class() -> list[type[TenantGuardError]]:
    for package in (tenantguard, authz_sidecar, policy_plane):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    return sorted(set(_subclasses(TenantGuardError)), key=lambda c: (c.__module__, c.__name__))


UNAVAILABLE = [c for c in _every_error_class() if c.http_status == 503 and not issubclass(c, ExchangeError)]


def test_the_list_holds_the_non_retryable_ones() -> None:
    codes = {c.code for c in UNAVAILABLE}
    assert {"unavailable", "plane_not_ready", "feed_unavailable", "nats_authorization_refused"} <= codes


@pytest.mark.parametrize("cls", UNAVAILABLE, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_503_error_renders_typed_with_retry_after(cls: type[TenantGuardError]) -> None:
    response = error_response(_instance(cls), realm="t")
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    body = json.loads(bytes(response.body))
    assert body["error"] == cls.code and body["message"]


def _instance(cls: type[TenantGuardError]) -> TenantGuardError:
    try:
        return cls("refused for the test")
    except TypeError:  # a class with required keyword details
        error = cls.__new__(cls)
        TenantGuardError.__init__(error, "refused for the test")
        return error


def test_the_token_endpoint_says_when_to_retry() -> None:
    response = _oauth_error(TemporarilyUnavailable("no policy is active yet"))
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert json.loads(bytes(response.body))["error"] == "temporarily_unavailable"
