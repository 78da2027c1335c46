"""The local system ``dev`` and ``demo`` run: NATS, one plane, sidecars, all real processes.

Everything is started the way an operator would: nats-server through
:class:`~tenantguard.dev.natsserver.NatsServer`, the plane and the sidecars through the
``tenantguard`` CLI in subprocesses (this package never imports ``authz_sidecar``), and
every change through the plane's HTTP API with the admin token. The dev folder holds
it all, so a second ``dev`` run reuses keys, JetStream store and sidecar state (``dev --reset``
removes all of it but the keys first: :mod:`.reset`)::

    <root>/nats/            JetStream store, config (0600) and log of the local nats-server
    <root>/nats-auth/       one nkey seed per NATS identity (plane, each sidecar; 0600); the
                            server's config holds only their public keys and permissions
    <root>/plane/           event.pem, bundle.pem (+ .pub), admin.token, join-secrets/ (0600)
    <root>/sidecars/<svc>/  each sidecar's state dir (its exchange key, last good bundle)
    <root>/logs/            one log per child process
"""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx

from tenantguard.bundle import build_bundle, content_revision, inspect
from tenantguard.client.plane import Call, PlaneClient
from tenantguard.dev.natsserver import NatsServer
from tenantguard.devenv.procs import Child, ChildFailed, Children, start_child, tenantguard_command
from tenantguard.devenv.trust import KeyRegistration
from tenantguard.errors import ConfigError, TenantGuardError
from tenantguard.feed import topology
from tenantguard.feed.natsconfig import NatsUser
from tenantguard.feed.natsconn import new_user_nkey, nkey_public, parse_servers
from tenantguard.identity.keys import SigningKey, write_private
from tenantguard.relations import RelationChange, Relationship

SYNC_TIMEOUT: Final = 30.0
_POLL: Final = 0.01


def default_bundle_dir() -> Path:
    """The example bundle: ``bundles/tenantguard`` of the source tree this package runs from
    (a checkout or an editable install), else the copy a wheel carries (``example_bundle``)."""
    here = Path(__file__).resolve().parent
    source_tree = here.parents[2] / "bundles" / "tenantguard"
    return source_tree if (source_tree / ".manifest").is_file() else here / "example_bundle"


def check_bundle_dir(source: Path) -> None:
    """Refuse a ``--bundle`` that is not a bundle source directory, before anything is started."""
    if not source.is_dir():
        raise ConfigError(f"--bundle {source}: no such directory")
    if not (source / ".manifest").is_file():
        raise ConfigError(f"--bundle {source}: not a bundle source directory, it has no .manifest (a bundle "
                          "holds *.rego modules, data.json files and a .manifest naming its revision and roots; "
                          "see bundles/tenantguard)")
    bundle_revision(source)  # a manifest that names no revision is refused here too


def bundle_revision(source: Path) -> str:
    """The revision ``tenantguard bundle publish DIR`` gives the bundle (``content_revision``:
    ``<.manifest revision>-<12 hex of the content>``), so re-running ``dev`` republishes only on change."""
    try:
        return content_revision(source)
    except TenantGuardError as exc:
        raise ConfigError(f"--bundle {source}: {exc.message}") from None


@dataclass(frozen=True, slots=True)
class SidecarSpec:
    """One sidecar to start: its service name and any extra ``sidecar serve`` flags (e.g. edge mode)."""

    service: str
    extra: tuple[str, ...] = ()
    port: int = 0  # 0: any free port
    grpc_port: int = 0


class SidecarBehind(ChildFailed):
    """A sidecar did not reach the plane's state in time; the message says what was wanted and what it
    reports, ``log`` is where to read why."""

    code = "devenv_sidecar_behind"

    def __init__(self, message: str, *, service: str, log: str) -> None:
        super().__init__(message)
        self.service, self.log = service, log


@dataclass(frozen=True, slots=True)
class SyncTarget:
    """What a sidecar of ``service`` reports once it holds the plane's state.

    Relations and trust: at least the plane's sequences. Bundle: a sidecar follows two scopes,
    ``all`` and its own service's (a staged rollout announces a revision to service scopes
    first), and its store keeps whichever announced bundle orders later
    (:mod:`tenantguard.bundle.store`: the greater ``metadata.serial``; an equal or missing one
    is refused against the active bundle, so the first one activated stays). So it runs the
    announce of those two scopes with the greatest serial, on a first start and after a
    restart alike; when serials cannot tell (missing, or equal with different revisions),
    any of the candidates will do.
    """

    service: str
    relations_seq: int
    trust_seq: int
    revisions: tuple[str | None, ...]  # any one of these; one when the serials decide
    announced: tuple[tuple[str, str | None, int | None], ...] = ()  # (scope, revision, serial) it chose from

    @classmethod
    def of(cls, plane_status: Mapping[str, Any], service: str) -> SyncTarget:
        """From the plane's ``/v1/status`` (``bundles``: scope -> its active announce)."""
        announces = plane_status.get("bundles") or {}
        announced = tuple((scope, a.get("revision"), a.get("serial")) for scope, a in sorted(announces.items())
                          if scope in (topology.BUNDLE_SCOPE_ALL, service) and _applies_to(a, service))
        serials = [serial for _, _, serial in announced]
        if announced and all(isinstance(s, int) and not isinstance(s, bool) for s in serials):
            newest = max(serials)
            running = [revision for _, revision, serial in announced if serial == newest]
        else:
            running = [revision for _, revision, _ in announced]
        return cls(service, plane_status["relations"]["seq"], plane_status["trust"]["seq"],
                   tuple(dict.fromkeys(running)) or (None,), announced)

    def reached_by(self, sidecar_status: Mapping[str, Any]) -> bool:
        relations = sidecar_status.get("relations_seq", -1)
        return (isinstance(relations, int) and relations >= self.relations_seq
                and _trust_seq(sidecar_status) >= self.trust_seq
                and sidecar_status.get("bundle_revision") in self.revisions)

    def describe(self) -> str:
        """E.g. ``relations seq >= 3, trust seq >= 2 and bundle revision '1' (the newer by serial of ...)``."""
        scopes = [f"{scope} {revision!r} serial {serial}" for scope, revision, serial in self.announced]
        if not self.announced:
            bundle = f"no bundle (the plane announces none for scopes {topology.BUNDLE_SCOPE_ALL} and {self.service})"
        elif len(self.announced) == 1:
            bundle = f"bundle revision {self.revisions[0]!r} (scope {self.announced[0][0]})"
        elif len(self.revisions) == 1:
            bundle = f"bundle revision {self.revisions[0]!r} (the newer by serial of scopes {' and '.join(scopes)})"
        else:
            bundle = (f"bundle revision {' or '.join(repr(r) for r in self.revisions)} (scopes {' and '.join(scopes)}:"
                      " their serials do not say which one the sidecar keeps)")
        return f"relations seq >= {self.relations_seq}, trust seq >= {self.trust_seq} and {bundle}"


def _applies_to(announce: Any, service: str) -> bool:
    """The sidecar's own filter: an announce naming services is for those (or ``all``) only."""
    if not isinstance(announce, Mapping):
        return False
    named = announce.get("services") or []
    return not named or bool({service, topology.BUNDLE_SCOPE_ALL} & set(named))


class Stack:
    """Start, wire and stop the local system; every started process is tracked by PID."""

    def __init__(self, root: Path, *, nats_url: str | None = None, bundle_dir: Path | None = None,
                 registration: KeyRegistration | None = None) -> None:
        self.root = root.resolve()
        self.external_nats = ",".join(parse_servers(nats_url)) if nats_url else None
        self._nats_users: dict[str, NatsUser] = {}
        self._nats_lock = threading.Lock()
        self.bundle_dir = (bundle_dir or default_bundle_dir()).resolve()
        self.registration = registration or KeyRegistration(self_registering=False)
        self.children = Children()
        self.nats: NatsServer | None = None
        self.plane: Child | None = None
        self.sidecars: dict[str, Child] = {}

    # ------------------------------------------------------------------ paths

    @property
    def plane_dir(self) -> Path:
        return self.root / "plane"

    @property
    def admin_token_file(self) -> Path:
        return self.plane_dir / "admin.token"

    def join_secret_file(self, service: str) -> Path:
        return self.plane_dir / "join-secrets" / f"{service}.secret"

    def log(self, name: str) -> Path:
        return self.root / "logs" / f"{name}.log"

    @property
    def nats_url(self) -> str:
        if self.external_nats:
            return self.external_nats
        if self.nats is None:
            raise ConfigError("NATS has not been started")
        return self.nats.url

    @property
    def plane_url(self) -> str:
        if self.plane is None:
            raise ConfigError("the plane has not been started")
        return self.plane.url

    def pids(self) -> dict[str, int]:
        """Every process this stack started, by name (nats-server only when it is ours)."""
        found = {"nats-server": self.nats.pid} if self.nats is not None and self.nats.pid else {}
        return {**found, **self.children.pids()}

    # ------------------------------------------------------------------ starting

    def nats_seed_file(self, name: str) -> Path:
        return self.root / "nats-auth" / f"{name}.nk"

    def start_nats(self, services: Iterable[str] = ()) -> str:
        """The embedded nats-server on a free port (store in the dev folder), unless ``--nats`` names one.

        Authorization is on: the plane and each sidecar get an nkey of their own with the
        permissions of :mod:`tenantguard.feed.topology` (a sidecar reads what it follows and
        publishes only its decision logs). With ``--nats`` the children take their NATS
        credentials from ``TG_PLANE_NATS_*`` / ``TG_SIDECAR_NATS_*`` in the environment.
        """
        if self.external_nats is None:
            self._nats_user("plane", topology.plane_permissions())
            for service in services:
                self._nats_user(service, topology.sidecar_permissions(service))
            self.nats = NatsServer(self.root / "nats", log_file=self.log("nats-server"),
                                   users=list(self._nats_users.values())).start()
        return self.nats_url

    def _nats_user(self, name: str, permissions: dict[str, list[str]]) -> bool:
        """Make sure ``name`` has a seed and a user entry; True when the entry is new."""
        if name in self._nats_users:
            return False
        path = self.nats_seed_file(name)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_private(path, new_user_nkey() + b"\n")
        self._nats_users[name] = NatsUser(nkey=nkey_public(path.read_bytes()), permissions=permissions)
        return True

    def _nats_auth_args(self, name: str) -> list[str]:
        """``--nats-nkey-seed-file`` for our own server (adding the user, by config reload, if new)."""
        if self.nats is None:
            return []
        with self._nats_lock:
            if self._nats_user(name, topology.sidecar_permissions(name)):
                self.nats.reload(list(self._nats_users.values()))
        return ["--nats-nkey-seed-file", str(self.nats_seed_file(name))]

    def init_plane(self, services: Iterable[str]) -> None:
        """Keys and admin token via ``plane init`` on first use; join secrets for services added later."""
        if not (self.plane_dir / "event.pem").exists():
            argv = [*tenantguard_command(), "plane", "init", str(self.plane_dir),
                    *[arg for s in services for arg in ("--service", s)]]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
            if done.returncode != 0:
                raise ChildFailed(f"plane init failed: {done.stderr.strip()[-2000:]}")
        for service in services:
            path = self.join_secret_file(service)
            if not path.exists():
                write_private(path, (secrets.token_urlsafe(32) + "\n").encode())

    def start_plane(self, services: Iterable[str], port: int = 0) -> str:
        argv = [*tenantguard_command(), "plane", "serve", "--nats", self.nats_url,
                "--event-key", str(self.plane_dir / "event.pem"), "--bundle-key", str(self.plane_dir / "bundle.pem"),
                "--admin-token-file", str(self.admin_token_file), "--port", str(port), "--heartbeat-seconds", "1",
                *(["--nats-nkey-seed-file", str(self.nats_seed_file("plane"))] if self.nats is not None else []),
                *[arg for s in services for arg in ("--join-secret", f"{s}={self.join_secret_file(s)}")]]
        self.plane = start_child("plane", argv, self.log("plane"), track=self.children)
        _until(lambda: httpx.get(f"{self.plane_url}/ready", timeout=2).status_code == 200, "the plane to be ready")
        return self.plane_url

    def admin(self) -> PlaneClient:
        return PlaneClient(self.plane_url, token=self.admin_token_file.read_text().strip())

    def check_bundle(self) -> None:
        check_bundle_dir(self.bundle_dir)

    def publish_bundle(self) -> tuple[str, bool]:
        """Publish the example bundle (unsigned: the plane tests and signs it); ``(revision, published)``."""
        self.check_bundle()
        archive = build_bundle(self.bundle_dir)  # named after its content, as `bundle publish DIR` names it
        revision = inspect(archive)["manifest"]["revision"]
        with self.admin() as plane:
            active = plane.status()["bundles"].get("all", {})
            if active.get("revision") == revision:
                return revision, False
            plane.push_bundle(archive)
        return revision, True

    def start_sidecars(self, specs: Sequence[SidecarSpec]) -> dict[str, Child]:
        """Start the sidecars in parallel (each follows NATS), then get their keys trusted."""
        def attempt(spec: SidecarSpec) -> Child | BaseException:
            try:
                return self._start_sidecar(spec)
            except BaseException as exc:  # handed back, so the ones that did start are still tracked
                return exc

        with ThreadPoolExecutor(max(1, len(specs))) as pool:
            results = list(pool.map(attempt, specs))
        for spec, result in zip(specs, results, strict=True):
            if isinstance(result, Child):  # tracked by self.children since it was spawned
                self.sidecars[spec.service] = result
        failed = [r for r in results if not isinstance(r, Child)]
        if failed:
            raise failed[0]
        self.registration.after_start(self.plane_url, {
            s.service: (self.sidecars[s.service].url, self.join_secret_file(s.service)) for s in specs})
        return self.sidecars

    def _start_sidecar(self, spec: SidecarSpec) -> Child:
        argv = [*tenantguard_command(), "sidecar", "serve", "--service", spec.service, "--nats", self.nats_url,
                *self._nats_auth_args(spec.service),
                "--plane-key", str(self.plane_dir / "event.pem.pub"),
                "--bundle-key", str(self.plane_dir / "bundle.pem.pub"),
                "--state-dir", str(self.root / "sidecars" / spec.service),
                "--port", str(spec.port), "--grpc-port", str(spec.grpc_port),
                *self.registration.sidecar_args(self.plane_url, self.join_secret_file(spec.service)), *spec.extra]
        return start_child(f"sidecar-{spec.service}", argv, self.log(f"sidecar-{spec.service}"),
                           track=self.children)

    # ------------------------------------------------------------------ changes

    def write(self, tuples: Iterable[str], op: str = "write") -> int:
        """One atomic batch through the plane; returns the consistency token."""
        changes = [RelationChange(op, Relationship.parse(t)) for t in tuples]  # type: ignore[arg-type]
        with self.admin() as plane:
            return plane.write(changes)

    def trust_issuer(self, key: SigningKey, issuer: str) -> None:
        """Trust a local token issuer (``dev``'s example key) through the plane, like an edge IdP."""
        with self.admin() as plane:
            plane.send(Call("POST", "/v1/trust/issuers", json={"jwk": {**key.public_jwk(), "iss": issuer}}))

    def wait_synced(self, services: Iterable[str] | None = None,
                    timeout: float = SYNC_TIMEOUT) -> dict[str, str | None]:
        """Wait until each sidecar holds the plane's relations, trust set and bundle (see
        :class:`SyncTarget`); return the bundle revision each one runs. Raises :class:`SidecarBehind`
        naming what was wanted, what the sidecar reports and its log."""
        with self.admin() as plane:
            status = plane.status()
        names = list(services) if services is not None else list(self.sidecars)
        return {name: self._wait_caught_up(name, SyncTarget.of(status, name), timeout) for name in names}

    def _wait_caught_up(self, name: str, target: SyncTarget, timeout: float) -> str | None:
        sidecar = self.sidecars[name]
        deadline = time.monotonic() + timeout
        while True:
            reported = _get(f"{sidecar.url}/v1/status")
            if target.reached_by(reported):
                return reported.get("bundle_revision")
            if time.monotonic() > deadline:
                raise SidecarBehind(f"timed out after {timeout:.0f} s waiting for sidecar {name} to catch up with "
                                    f"the plane: wanted {target.describe()}; it reports {_reported(reported)}; "
                                    f"its log: {sidecar.log_path}", service=name, log=str(sidecar.log_path))
            time.sleep(_POLL)

    # ------------------------------------------------------------------ stopping

    def stop(self) -> dict[str, int | None]:
        """Stop every child (reverse start order), then our nats-server; return exit statuses."""
        statuses = self.children.stop_all()
        if self.nats is not None:
            pid = self.nats.pid
            self.nats.stop()
            statuses["nats-server"] = 0 if pid else None
            self.nats = None
        return statuses


def _get(url: str) -> Mapping[str, Any]:
    try:
        body = httpx.get(url, timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return {}
    return body if isinstance(body, Mapping) else {}


def _reported(status: Mapping[str, Any]) -> str:
    if not status:
        return "nothing (no answer on /v1/status)"
    return (f"relations seq {status.get('relations_seq')}, trust seq {_trust_seq(status)}, "
            f"bundle revision {status.get('bundle_revision')!r}, feed {status.get('feed')}")


def _trust_seq(status: Mapping[str, Any]) -> int:
    detail = status.get("feed_detail") or {}
    seq = (detail.get("trust") or {}).get("applied_seq", 0)
    return seq if isinstance(seq, int) else 0


def _until(predicate: Callable[[], bool], what: str, timeout: float = SYNC_TIMEOUT) -> None:
    """Poll ``predicate`` (transport errors count as "not yet") until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except (httpx.HTTPError, TenantGuardError, ValueError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise ChildFailed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(_POLL)
