"""``tenantguard dev``: NATS, the plane and one sidecar (service ``orders``) until Ctrl-C.

State lives in the dev folder (default ``.tenantguard``), so a second run reuses the keys,
the admin token, JetStream's store and the sidecar's key; the example bundle is published
again only when its content changed. A local token issuer ``dev`` (key in the dev folder)
is trusted through the plane, so the printed example commands work as they are. While it
runs, ``<dev folder>/dev.env`` holds the addresses as ``export`` lines for other shells
(:mod:`.envfile`). A second ``dev`` on the same folder is refused before it starts anything
(:mod:`.folderlock`). ``--reset`` starts from a fresh state: the JetStream store, sidecar state
and logs are removed first, keys and admin token kept (:mod:`.reset`); it is what to do when a
sidecar cannot catch up with the plane (state of an earlier run it cannot follow).

Ctrl-C or SIGTERM stops every child by PID and process group, then exits 0; a child that
dies on its own stops the rest and exits 1.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Final

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from tenantguard.devenv.envfile import remove_env_file, write_env_file
from tenantguard.devenv.folderlock import folder_lock
from tenantguard.devenv.procs import ignore_signals, signals_interrupt
from tenantguard.devenv.reset import check_resettable, reset_folder
from tenantguard.devenv.stack import SidecarBehind, SidecarSpec, Stack
from tenantguard.devenv.trust import KeyRegistration, sidecar_registers_itself
from tenantguard.devenv.ui import Steps, write_pids
from tenantguard.errors import ConfigError
from tenantguard.feed import natsconn
from tenantguard.identity.keys import SigningKey
from tenantguard.server.serving import bind_tcp
from tenantguard.util.urls import shown_url

SERVICE: Final = "orders"
LOOPBACK: Final = "127.0.0.1"  # where the plane and the sidecar listen by default
DEV_ISSUER: Final = "dev"
EXAMPLE_RELATIONSHIPS: Final = ("acme/project:p1#member@user:alice", "globex/project:p1#member@user:mallory")


def run_dev(console: Console, *, root: Path, nats_url: str | None, port_base: int | None,
            bundle_dir: Path | None, reset: bool = False) -> int:
    """Start everything, print where it is, wait for a signal, stop everything; return the exit status.

    ``reset``: remove the folder's state first (:mod:`.reset`), once the folder lock is held.
    """
    root = root.resolve()
    if reset:  # before the lock, which creates dev.lock: a folder that is no dev folder stays as it was
        check_resettable(root, external_nats=nats_url is not None)
    with folder_lock(root, command="dev"), signals_interrupt():
        return _run(console, root=root, nats_url=nats_url, port_base=port_base, bundle_dir=bundle_dir, reset=reset)


def _run(console: Console, *, root: Path, nats_url: str | None, port_base: int | None,
         bundle_dir: Path | None, reset: bool) -> int:
    ports = _ports(port_base)
    if nats_url is not None:
        natsconn.parse_servers(nats_url)  # a malformed server list is refused before anything starts
    steps = Steps(console)
    stack = Stack(root, nats_url=nats_url, bundle_dir=bundle_dir)
    stack.check_bundle()
    status = 0
    try:
        if reset:
            with steps.step(f"reset {_shown(root)}: JetStream store, sidecar state and logs removed"):
                removed = reset_folder(root)
            steps.note(f"removed {', '.join(removed) or 'nothing (no state yet)'}; kept keys and admin token")
        with steps.step("checking how sidecars register their keys"):
            stack.registration = KeyRegistration(sidecar_registers_itself())
        where = f" at {_shown_nats(nats_url)}" if nats_url else " (embedded nats-server, free port)"
        with steps.step("NATS" + where):
            stack.start_nats([SERVICE])
        with steps.step(f"policy plane keys and admin token in {root / 'plane'}"):
            stack.init_plane([SERVICE])
        with steps.step("policy plane"):
            stack.start_plane([SERVICE], port=ports[0])
        write_pids(root / "pids.json", stack.pids())
        with steps.step(f"{'example bundle' if bundle_dir is None else 'bundle ' + _shown(stack.bundle_dir)} "
                        "through the plane"):
            revision, published = stack.publish_bundle()
        steps.note(f"revision {revision}{'' if published else ' (already active)'}")
        with steps.step(f"sidecar for service {SERVICE} (following NATS)"):
            stack.start_sidecars([SidecarSpec(SERVICE, port=ports[1], grpc_port=ports[2])])
        write_pids(root / "pids.json", stack.pids())
        with steps.step(f"local token issuer '{DEV_ISSUER}' and example relationships"):
            issuer_key = _issuer_key(root / "dev-issuer.pem")
            stack.trust_issuer(issuer_key, DEV_ISSUER)
            stack.write(EXAMPLE_RELATIONSHIPS)
        with steps.step("sidecar in step with the plane"):
            running = stack.wait_synced()[SERVICE]
        if running != revision:  # e.g. a staged rollout put the service scope on another revision
            steps.note(f"sidecar {SERVICE} runs revision {running}: scope {SERVICE} announces a newer one than "
                       "scope all (a staged rollout: tenantguard bundle rollout status)")
        env_path = write_env_file(root, _addresses(stack), pid=os.getpid())
        _announce(console, stack, root, env_path)
        status = _watch(console, stack)
    except KeyboardInterrupt:
        console.print("\n[dim]stopping…[/]")
    except Exception as exc:
        console.print(f"[bold red]tenantguard dev failed:[/] {exc}")
        console.print(f"[dim]logs: {root / 'logs'}[/]")
        if isinstance(exc, SidecarBehind):
            console.print(_behind_hint(root, exc), soft_wrap=True)
        status = 1
    finally:
        ignore_signals()  # a second Ctrl-C must not cut the cleanup short
        remove_env_file(root, pid=os.getpid())  # its addresses die with the processes
        stack.stop()
    console.print("[green]stopped every process[/]")
    return status


def _behind_hint(root: Path, exc: SidecarBehind) -> str:
    """What to do when the sidecar cannot catch up: its log says why; --reset starts fresh."""
    where = "" if root == (Path.cwd() / ".tenantguard").resolve() else f" --dir {escape(_shown(root))}"
    return (f"[bold]what to do:[/] read why in {escape(exc.log)}. If this folder holds state the sidecar cannot follow "
            f"(e.g. its state dir from an earlier run, kept beside a newer or removed JetStream store), start "
            f"fresh with [cyan]tenantguard dev --reset{where}[/]: it removes the relationships, bundles, trust "
            "and revocations written through the plane, the sidecar's state and the logs, and keeps the keys "
            "and admin token.")


def _ports(port_base: int | None) -> tuple[int, int, int]:
    """plane, sidecar HTTP, sidecar gRPC: fixed from ``--port-base`` N (N, N+1, N+2), else free ones.

    Fixed ports are tried first, so a taken one is refused before anything starts rather than
    as a child's failure after NATS and the plane are already up.
    """
    if port_base is None:
        return 0, 0, 0
    ports = port_base, port_base + 1, port_base + 2
    for port, what in zip(ports, ("plane", "sidecar HTTP", "sidecar gRPC"), strict=True):
        try:
            bind_tcp(LOOPBACK, port).close()
        except ConfigError:
            raise ConfigError(f"--port-base {port_base}: port {port} ({what}) on {LOOPBACK} is taken; choose "
                              "another --port-base, or leave it out for free ports") from None
    return ports


def _issuer_key(path: Path) -> SigningKey:
    if path.exists():
        return SigningKey.load(path)
    key = SigningKey.generate()
    key.save(path)
    return key


def _addresses(stack: Stack) -> dict[str, str]:
    """What ``dev.env`` exports: the variables the CLI (plane) and the SDK (sidecar) already read."""
    sidecar = stack.sidecars[SERVICE]
    return {"TG_PLANE_URL": stack.plane_url, "TG_PLANE_TOKEN_FILE": str(stack.admin_token_file),
            "TG_SIDECAR_URL": sidecar.url, "TG_DEV_SIDECAR_GRPC": str(sidecar.announced.get("grpc") or "")}


def _announce(console: Console, stack: Stack, root: Path, env_path: Path) -> None:
    sidecar = stack.sidecars[SERVICE]
    grpc = sidecar.announced.get("grpc")
    rel = _shown(root)
    lines = [
        f"[bold]plane[/]            {stack.plane_url}",
        f"[bold]sidecar {SERVICE}[/]   {sidecar.url}  (gRPC ext_authz {grpc})",
        f"[bold]NATS[/]             {_shown_nats(stack.nats_url)}",
        f"[bold]admin token[/]      {stack.admin_token_file}",
        f"[bold]logs[/]             {root / 'logs'}",
        f"[bold]other shells[/]     source {_shown(env_path)}  ({', '.join(_addresses(stack))})",
    ]
    console.print(Panel("\n".join(lines), title="tenantguard dev is running", expand=False))
    question = json.dumps({"action": {"name": "invoices:read"},
                           "resource": {"type": "invoice", "id": "inv-1", "properties": {"project": "p1"}}})
    console.print("[bold]try, in another shell:[/]")
    for line in (
        f"source {_shown(env_path)}",
        "tenantguard relation write 'acme/project:p1#member@user:bob'",
        "tenantguard relation write 'acme/project:p1#folder@folder:eng' 'acme/folder:eng#member@user:carol'"
        "   # carol: a member of p1 through its folder (bundles/tenantguard/schema.fga)",
        f"TOKEN=$(tenantguard token mint --key {rel}/dev-issuer.pem --issuer {DEV_ISSUER} --sub alice "
        f"--tenant acme --aud {SERVICE} --role editor)",
        f"curl -s \"$TG_SIDECAR_URL/v1/check\" -H \"Authorization: Bearer $TOKEN\" "
        f"-H 'Content-Type: application/json' -d '{question}'",
        "tenantguard relation delete 'acme/project:p1#member@user:alice'   # then ask again: denied",
    ):
        console.print(f"  [cyan]{line}[/]", soft_wrap=True)
    console.print("[dim]Ctrl-C stops everything.[/]")
    ready = {"event": "ready", "plane": stack.plane_url, "sidecar_http": sidecar.url, "sidecar_grpc": grpc,
             "nats": _shown_nats(stack.nats_url), "admin_token_file": str(stack.admin_token_file),
             "env_file": str(env_path), "pids": stack.pids()}
    print(json.dumps(ready), flush=True)  # one machine-readable line for scripts and tests


def _shown_nats(servers: str) -> str:
    """Every server of a list, each without its credentials (shown_url of the whole list hid all of it)."""
    return ",".join(shown_url(s) for s in natsconn.parse_servers(servers))


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _watch(console: Console, stack: Stack) -> int:
    """Sleep until a signal; a child that exits on its own ends the run with status 1."""
    while True:
        for child in stack.children:
            if not child.alive():
                console.print(f"[bold red]{child.name} exited with status {child.proc.returncode}[/]; "
                              f"its log ends with:\n{child.log_tail()}")
                return 1
        if stack.nats is not None and not stack.nats.running:
            console.print(f"[bold red]nats-server exited[/]; its log ends with:\n{stack.nats.log_tail()}")
            return 1
        time.sleep(0.5)
