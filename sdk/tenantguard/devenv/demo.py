"""``tenantguard demo``: the whole system on one machine, one story, a verdict.

Starts the embedded NATS, the plane, a demo IdP (edge mode) and three FastAPI services
(edge, orders, billing) each beside its own sidecar; loads the example bundle and two
tenants whose ids collide through the plane; plays :mod:`.scenario`; and stops every
process it started whatever happens (``try``/``finally``, by PID and process group).
Exit status: 0 only when every step behaved as expected.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from rich.console import Console
from rich.markup import escape

from tenantguard.devenv.folderlock import folder_lock
from tenantguard.devenv.idp import DemoIdP
from tenantguard.devenv.pgdemo import DemoDatabase, DemoDatabaseUnavailable
from tenantguard.devenv.procs import Child, ignore_signals, signals_interrupt, start_child
from tenantguard.devenv.scenario import Outcome, Scenario, World, summary_table
from tenantguard.devenv.stack import SidecarSpec, Stack, check_bundle_dir, default_bundle_dir
from tenantguard.devenv.trust import KeyRegistration, sidecar_registers_itself
from tenantguard.devenv.ui import Steps, StepSkipped, write_pids
from tenantguard.errors import TenantGuardError

SERVICES: Final = ("edge", "orders", "billing")
# acme's alice is a member of project p1 through the schema's hierarchy (bundles/tenantguard/
# schema.fga): she is on the finance team, the team is a member of the finance folder, and p1
# sits in that folder. The story's revocation removes her from the team.
TEAM_MEMBERSHIP: Final = "acme/group:finance#member@user:alice"
RELATIONSHIPS: Final = (
    TEAM_MEMBERSHIP,
    "acme/folder:finance#member@group:finance#member",
    "acme/project:p1#folder@folder:finance",
    "acme/project:p2#member@user:bob",
    "globex/project:p1#member@user:mallory",
    "globex/project:p1#member@user:alice",  # another alice, in another tenant: ids collide, tenants do not mix
)


def run_demo(console: Console, *, root: Path | None, keep: bool, pg_dsn: str | None,
             bundle_dir: Path | None, pg_required: bool = False) -> int:
    """Run the demo; return the exit status (0: every step as expected).

    ``pg_required``: the user named ``pg_dsn`` (flag or environment), so a database that cannot be
    used fails the demo; only the default DSN may be skipped.
    """
    lock = folder_lock(root.resolve(), command="demo") if root is not None else contextlib.nullcontext()
    with lock, signals_interrupt():
        return _run(console, root=root, keep=keep, pg_dsn=pg_dsn, bundle_dir=bundle_dir, pg_required=pg_required)


def _run(console: Console, *, root: Path | None, keep: bool, pg_dsn: str | None, bundle_dir: Path | None,
         pg_required: bool) -> int:
    started = time.monotonic()
    check_bundle_dir((bundle_dir or default_bundle_dir()).resolve())  # before a run folder or a process exists
    own_root = root is None
    run_dir = Path(tempfile.mkdtemp(prefix="tenantguard-demo-")) if root is None else root
    run_dir.mkdir(parents=True, exist_ok=True)
    steps = Steps(console)
    console.print(f"[bold]tenantguard demo[/] [dim](run folder {run_dir})[/]")
    with ThreadPoolExecutor(1) as pool:
        probe = pool.submit(sidecar_registers_itself)  # a CLI round trip, overlapped with the first steps
        stack = Stack(run_dir, bundle_dir=bundle_dir)
        idp: DemoIdP | None = None
        db: DemoDatabase | None = None
        outcomes: list[Outcome] = []
        failure: BaseException | None = None
        try:
            with steps.step("demo IdP (identity provider: where users sign in) for tenants acme (RS256) "
                            "and globex (ES256), public keys (JWKS) over HTTP"):
                idp = DemoIdP()
                acme, globex = idp.add_realm("acme", "RS256"), idp.add_realm("globex", "ES256")
            pg_note = None
            if pg_dsn is None:
                pg_note = "disabled with --no-pg"
            else:
                with steps.step("PostgreSQL: unique schema, non-superuser role, row-level security (RLS)"):
                    try:
                        db = DemoDatabase.provision(pg_dsn)
                    except DemoDatabaseUnavailable as exc:
                        if pg_required:  # the user asked for this database: no quiet fallback
                            raise DemoDatabaseUnavailable(
                                f"{exc.message}; it was set with --pg-dsn or TG_DEMO_PG_DSN: fix it, "
                                "or run with --no-pg to leave the database step out") from None
                        pg_note = f"{exc.message} (the default DSN; set --pg-dsn or TG_DEMO_PG_DSN to use another)"
                        raise StepSkipped(pg_note) from None
            with steps.step("embedded nats-server (free port, JetStream store in the run folder)"):
                stack.start_nats(SERVICES)
            with steps.step("policy plane keys, admin token and join secrets (one per service, for its sidecar; "
                            "files 0600)"):
                stack.init_plane(SERVICES)
            with steps.step("policy plane"):
                stack.start_plane(SERVICES)
            shown = "example bundle bundles/tenantguard" if bundle_dir is None else f"bundle {bundle_dir}"
            with steps.step(f"{shown} through the plane (Rego tests run, then signed)"):
                revision, _ = stack.publish_bundle()
            steps.note(f"bundle revision {revision}")
            stack.registration = KeyRegistration(probe.result())
            edge_config = run_dir / "edge.json"
            edge_config.write_text(json.dumps(idp.edge_config(), indent=2))
            with steps.step("sidecars for edge (edge mode: it accepts the tenants' IdP tokens), orders and billing"):
                stack.start_sidecars([SidecarSpec("edge", ("--edge-config", str(edge_config))),
                                      SidecarSpec("orders"), SidecarSpec("billing")])
                write_pids(run_dir / "pids.json", stack.pids())
            steps.note(f"each sidecar signs the tokens it mints with its own key; {stack.registration.mode}")
            with steps.step("relationships for acme and globex (both have project p1 and invoice inv-1; acme's alice "
                            "is a member of p1 through her team and a folder)"):
                stack.write(RELATIONSHIPS)
            with steps.step("services billing, orders, edge (FastAPI + the tenantguard SDK)"):
                services = _start_services(stack, run_dir, db)
                write_pids(run_dir / "pids.json", stack.pids())
            with steps.step("every sidecar in step with the plane (bundle, relations, trust)"):
                stack.wait_synced()
            console.print(f"[dim]ready in {time.monotonic() - started:.1f} s[/]")
            world = World(edge_url=services["edge"].url, edge_sidecar=stack.sidecars["edge"].url,
                          billing_url=services["billing"].url,
                          sidecars={s: stack.sidecars[s].url for s in ("orders", "billing")},
                          acme=acme, globex=globex, revoke=lambda t: stack.write([t], op="delete"),
                          team_membership=TEAM_MEMBERSHIP, pg_note=pg_note)
            outcomes = Scenario(world, console).play()
        except BaseException as exc:  # reported below, after everything is stopped
            failure = exc
        finally:
            ignore_signals()
            _stop(console, stack, idp, db)
    return _verdict(console, outcomes, failure, run_dir, started, keep or not own_root)


def _start_services(stack: Stack, run_dir: Path, db: DemoDatabase | None) -> dict[str, Child]:
    """billing first, then orders (calls billing), then edge (calls orders): each needs the next one's URL."""
    services: dict[str, Child] = {}
    base = [sys.executable, "-m", "tenantguard.devenv.services"]
    pg = ["--pg-dsn", db.dsn, "--pg-schema", db.schema, "--pg-role", db.role] if db is not None else []
    plan = [("billing", pg), ("orders", []), ("edge", [])]
    calls = {"orders": "billing", "edge": "orders"}
    for name, extra in plan:
        nxt = ["--next", services[calls[name]].url] if name in calls else []
        argv = [*base, name, "--sidecar", stack.sidecars[name].url, *nxt, *extra]
        services[name] = start_child(f"service-{name}", argv, run_dir / "logs" / f"{name}.log",
                                     track=stack.children)
    return services


def _stop(console: Console, stack: Stack, idp: DemoIdP | None, db: DemoDatabase | None) -> None:
    start = time.monotonic()
    with console.status("stopping every process…"):
        try:
            stack.stop()
        finally:
            if idp is not None:
                idp.close()
            if db is not None:
                db.drop()
    console.print(f"[dim]stopped every process{' and dropped the demo schema and role' if db else ''} "
                  f"({(time.monotonic() - start) * 1000:.0f} ms)[/]")


def _verdict(console: Console, outcomes: list[Outcome], failure: BaseException | None, run_dir: Path,
             started: float, keep: bool) -> int:
    console.print()
    if outcomes:
        console.print(summary_table(outcomes))
    wrong = [o for o in outcomes if o.ok is False]
    skipped = [o for o in outcomes if o.ok is None]
    elapsed = time.monotonic() - started
    if failure is not None or wrong or not outcomes:
        why = f"{len(wrong)} step(s) not as expected"
        if isinstance(failure, TenantGuardError):
            why = f"{failure.code}: {failure.message}"
        elif failure is not None:
            why = f"{type(failure).__name__}: {failure}"
        if isinstance(failure, KeyboardInterrupt):
            why = "interrupted"
        console.print(f"[bold red]RESULT: demo failed[/] ({escape(why)}); logs kept in {run_dir / 'logs'}",
                      soft_wrap=True)
        return 130 if isinstance(failure, KeyboardInterrupt) else 1
    extra = f", {len(skipped)} skipped" if skipped else ""
    console.print(f"[bold green]RESULT: all {len(outcomes) - len(skipped)} steps behaved as expected[/]{extra} "
                  f"[dim]({elapsed:.1f} s)[/]")
    if not keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0
