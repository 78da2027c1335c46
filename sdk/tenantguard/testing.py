"""Test helpers for services built on tenantguard. Never import this from production code.

* :class:`TestIssuer` / :func:`mint_test_token`: real signed context tokens from an
  ephemeral key, with the :class:`~tenantguard.identity.keys.TrustSet` that accepts them.
* :class:`LocalSidecar`: a real ``tenantguard sidecar serve`` process on a free port,
  with a bundle directory signed by an ephemeral plane key, the issuer's trust and
  your relationships (the same thing the sidecar's own tests start).
* :func:`probe_cross_tenant`: call every route of an app as tenant A against tenant
  B's object ids and report each route that answers 2xx where it should not.

The pytest fixtures built on these live in ``tenantguard.pytest_plugin`` (opt-in, see
docs/sdk.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

from tenantguard.bundle import build_bundle
from tenantguard.context import RequestContext
from tenantguard.dev.procwatch import wait_for_announcement
from tenantguard.identity.keys import SigningKey, TrustSet
from tenantguard.identity.tokens import Claims, TokenVerifier, VerifyOptions, mint

# --------------------------------------------------------------------------- tokens


class TestIssuer:
    """An edge-like issuer with an ephemeral key; ``trust`` accepts exactly its tokens."""

    __test__ = False  # not a pytest test class

    def __init__(self, issuer: str = "edge", *, key: SigningKey | None = None) -> None:
        self.issuer = issuer
        self.key = key or SigningKey.generate()
        self.trust = TrustSet()
        self.trust.add_public_key(self.key.public_key, issuer)

    def mint(self, sub: str = "alice", tenant: str = "acme", audience: str | Sequence[str] = "test-service", *,
             roles: Iterable[str] = ("editor",), scope: str | Iterable[str] | None = None,
             lifetime: float = 300.0, **claims: Any) -> str:
        return mint(self.key, issuer=self.issuer, sub=sub, tenant_id=tenant, audience=audience, roles=roles,
                    scope=scope, lifetime=lifetime, **claims)

    def verifier(self, audience: str, **options: Any) -> TokenVerifier:
        return TokenVerifier(self.trust, VerifyOptions(audience=audience, **options))

    def context(self, sub: str = "alice", tenant: str = "acme", audience: str = "test-service",
                **kwargs: Any) -> RequestContext:
        """A verified :class:`RequestContext`, for ``use_context`` in unit tests."""
        token = self.mint(sub, tenant, audience, **kwargs)
        claims: Claims = self.verifier(audience).verify(token)
        return RequestContext(claims=claims, token=token)

    def save_trust(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        self.trust.save(target)
        return target


@dataclass(frozen=True, slots=True, repr=False)
class MintedToken:
    token: str
    trust: TrustSet
    key: SigningKey

    def __repr__(self) -> str:
        return f"MintedToken(kid={self.key.kid!r})"


def mint_test_token(sub: str = "alice", tenant: str = "acme", audience: str = "test-service", *,
                    issuer: str = "edge", **kwargs: Any) -> MintedToken:
    """One token from a fresh ephemeral key, with the trust set that verifies it."""
    test_issuer = TestIssuer(issuer)
    return MintedToken(test_issuer.mint(sub, tenant, audience, **kwargs), test_issuer.trust, test_issuer.key)


# --------------------------------------------------------------------------- a real sidecar


def _tenantguard_cli() -> str:
    beside = Path(sys.executable).with_name("tenantguard")
    if beside.is_file():
        return str(beside)
    found = shutil.which("tenantguard")
    if found is None:
        raise FileNotFoundError("the tenantguard CLI is not installed beside this interpreter or on PATH")
    return found


class LocalSidecar:
    """A real sidecar process for one service, on loopback (or a unix socket).

    ``start()`` returns once the sidecar announced its address; ``stop()`` sends
    SIGTERM and waits. Use as a context manager.
    """

    def __init__(self, service: str, bundle_dir: str | os.PathLike[str], *, issuer: TestIssuer | None = None,
                 relationships: Sequence[str] = (), relations_seq: int = 1,
                 workdir: str | os.PathLike[str] | None = None, uds: bool = False,
                 extra_trust: TrustSet | None = None, extra_args: Sequence[str] = ()) -> None:
        self.service = service
        self.issuer = issuer or TestIssuer()
        self._own_dir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="tg-sidecar-"))
        self.plane = SigningKey.generate()
        plane_pub = self.plane.save(self.workdir / "plane.pem")
        trust = TrustSet(list(self.issuer.trust) + list(extra_trust or ()))
        trust.save(self.workdir / "trust.json")
        (self.workdir / "bundle.tar.gz").write_bytes(build_bundle(Path(bundle_dir), "1", signing_key=self.plane))
        (self.workdir / "relations.json").write_text(
            json.dumps({"seq": relations_seq, "relationships": list(relationships)}))
        self.uds_path = str(self.workdir / "sidecar.sock") if uds else None
        self.args = ["--service", service, "--bundle", str(self.workdir / "bundle.tar.gz"),
                     "--bundle-key", str(plane_pub), "--trust", str(self.workdir / "trust.json"),
                     "--relations", str(self.workdir / "relations.json"), "--state-dir", str(self.workdir / "state"),
                     "--grpc-port", "-1", *(["--uds", self.uds_path] if uds else ["--port", "0"]), *extra_args]
        self.proc: subprocess.Popen[str] | None = None
        self.address: str | None = None

    @property
    def base_url(self) -> str:
        if self.address is None:
            raise RuntimeError("sidecar not started")
        return "http://sidecar" if self.uds_path else f"http://{self.address}"

    def start(self, timeout: float = 20.0) -> Self:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([_tenantguard_cli(), "sidecar", "serve", *self.args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.address = _wait_listening(self.proc, timeout)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc is not None:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def exchange_trust(self) -> TrustSet:
        """The sidecar's exchange key (``GET /v1/keys``): what a target must trust."""
        with self.http() as http:
            return TrustSet.from_jwks(http.get("/v1/keys").raise_for_status().json())

    def http(self) -> httpx.Client:
        transport = httpx.HTTPTransport(uds=self.uds_path) if self.uds_path else None
        return httpx.Client(base_url=self.base_url, transport=transport, timeout=5.0)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _wait_listening(proc: subprocess.Popen[str], timeout: float) -> str:
    event, _ = wait_for_announcement(proc, "listening", timeout)
    if event is not None:
        return str(event["http"])
    proc.kill()
    _, err = proc.communicate(timeout=5)
    raise RuntimeError(f"sidecar did not start (exit {proc.returncode}):\n{(err or '')[-3000:]}")


# --------------------------------------------------------------------------- cross-tenant probe

_PARAM = re.compile(r"{([^}:]+)(?::[^}]*)?}")


@dataclass(frozen=True, slots=True)
class ProbeRoute:
    method: str
    path: str


@dataclass(frozen=True, slots=True)
class ProbeFinding:
    """One request tenant A should not have been answered 2xx for."""

    method: str
    path: str
    url: str
    status: int
    why: str


@dataclass
class ProbeReport:
    findings: list[ProbeFinding] = field(default_factory=list)
    calls: int = 0
    skipped: list[ProbeRoute] = field(default_factory=list)

    @property
    def leaky_routes(self) -> list[str]:
        return sorted({f"{f.method} {f.path}" for f in self.findings})

    @property
    def ok(self) -> bool:
        return not self.findings


def app_routes(app: Any, methods: Iterable[str] = ("GET",)) -> list[ProbeRoute]:
    """The probe-able routes of a FastAPI/Starlette app (``APIRoute``-like objects)."""
    wanted = {m.upper() for m in methods}
    found: list[ProbeRoute] = []
    for route in getattr(app, "routes", ()):
        path, route_methods = getattr(route, "path", None), getattr(route, "methods", None)
        if not path or not route_methods or path.startswith(("/openapi", "/docs", "/redoc")):
            continue
        found.extend(ProbeRoute(m, path) for m in sorted(route_methods & wanted))
    return found


async def probe_cross_tenant(
    app: Any, *, headers_a: Mapping[str, str], ids_b: Mapping[str, Sequence[str]], ids_a: Mapping[str, Sequence[str]]
    | None = None, canaries_b: Sequence[str] = (), routes: Sequence[ProbeRoute] | None = None,
    methods: Iterable[str] = ("GET",), base_url: str = "http://probe.local", timeout: float = 10.0,
) -> ProbeReport:
    """Call each route as tenant A with tenant B's object ids in its path parameters.

    ``ids_b`` maps a path parameter name to B's ids for it. A 2xx answer is a finding
    when the id is not also one of A's (``ids_a``), or when the body contains one of
    ``canaries_b`` (strings only B's data holds: with colliding ids, this is what tells
    "A's own object" from "B's object"). Routes without path parameters are called once
    and judged by canaries. Routes with a parameter not in ``ids_b`` are skipped and
    listed. ``app`` is an ASGI app (called in process) or None with ``base_url`` a server.
    """
    report = ProbeReport()
    own = {name: set(values) for name, values in (ids_a or {}).items()}
    transport = httpx.ASGITransport(app=app) if app is not None else None
    async with httpx.AsyncClient(transport=transport, base_url=base_url, timeout=timeout,
                                 headers=dict(headers_a)) as http:
        for route in routes if routes is not None else app_routes(app, methods):
            params = _PARAM.findall(route.path)
            if any(p not in ids_b for p in params):
                report.skipped.append(route)
                continue
            for values in _combinations(params, ids_b):
                url = _substitute(route.path, values)
                response = await http.request(route.method, url, json={} if route.method != "GET" else None)
                report.calls += 1
                why = _leak(response, values, own, canaries_b)
                if why is not None:
                    report.findings.append(ProbeFinding(route.method, route.path, url, response.status_code, why))
    return report


def _substitute(path: str, values: Mapping[str, str]) -> str:
    from urllib.parse import quote

    return _PARAM.sub(lambda match: quote(values[match.group(1)], safe=""), path)


def _combinations(params: list[str], ids: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    combos: list[dict[str, str]] = [{}]
    for name in params:
        combos = [{**c, name: v} for c in combos for v in ids[name]][:256]  # bounded
    return combos


def _leak(response: httpx.Response, values: Mapping[str, str], own: Mapping[str, set[str]],
          canaries: Sequence[str]) -> str | None:
    if not 200 <= response.status_code < 300:
        return None
    text = response.text
    for canary in canaries:
        if canary and canary in text:
            return f"response contains tenant B data ({canary!r})"
    foreign = [f"{k}={v}" for k, v in values.items() if v not in own.get(k, set())]
    if foreign:
        return f"2xx for tenant B's object ({', '.join(foreign)})"
    return None


__all__ = [
    "LocalSidecar",
    "MintedToken",
    "ProbeFinding",
    "ProbeReport",
    "ProbeRoute",
    "TestIssuer",
    "app_routes",
    "mint_test_token",
    "probe_cross_tenant",
]
