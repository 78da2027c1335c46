"""The demo's story, played against the running system, narrated, and checked step by step.

Every step states what it expects before it runs and records what it got, so the
summary table is the test: the demo exits 0 only when every step behaved as expected.
The requests are exactly what a client (or an attacker) can send; nothing here reaches
into a process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from tenantguard.devenv.idp import Realm

EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"


@dataclass
class Outcome:
    """One row of the summary; ``ok`` None means skipped (with the reason in ``got``)."""

    step: str
    expected: str
    got: str
    ok: bool | None


@dataclass
class World:
    """What the scenario talks to: the public edge, two sidecars it polls, billing (for the replay)."""

    edge_url: str
    edge_sidecar: str
    billing_url: str
    sidecars: Mapping[str, str]  # service -> sidecar URL, for propagation timing
    acme: Realm
    globex: Realm
    revoke: Callable[[str], int]  # delete one tuple through the plane, return the consistency token
    team_membership: str  # the tuple the revocation deletes (alice's team membership, tenant/object#relation@subject)
    pg_note: str | None  # why the database step is skipped, or None when PostgreSQL is in play


def _reasons(body: Any) -> list[str]:
    """The deny reasons wherever they are in the (nested) answer."""
    if isinstance(body, Mapping):
        detail = body.get("detail")
        if isinstance(detail, Mapping) and isinstance(detail.get("reasons"), list):
            return [str(r) for r in detail["reasons"]]
        for key in ("orders", "billing"):
            if key in body:
                return _reasons(body[key])
    return []


def _chain(act: Any) -> str:
    hops = []
    while isinstance(act, Mapping):
        hops.append(str(act.get("sub", "?")).removeprefix("svc:"))
        act = act.get("act")
    return " ← ".join(hops) or "-"


class Scenario:
    def __init__(self, world: World, console: Console) -> None:
        self.w = world
        self.console = console
        self.outcomes: list[Outcome] = []
        self.http = httpx.Client(timeout=10.0)

    # ------------------------------------------------------------------ narration helpers

    def act(self, title: str) -> None:
        self.console.print()
        self.console.rule(f"[bold cyan]{title}")

    def say(self, text: str) -> None:
        self.console.print(f"  {text}")

    def record(self, step: str, expected: str, got: str, ok: bool | None) -> None:
        self.outcomes.append(Outcome(step, expected, got, ok))
        mark = {True: "[green]✓ as expected[/]", False: "[bold red]✗ NOT as expected[/]", None: "[yellow]-[/]"}
        self.say(f"{mark[ok]}: {got}")

    def call_edge(self, token: str, invoice: str = "inv-1", **headers: str) -> httpx.Response:
        return self.http.get(f"{self.w.edge_url}/invoices/{invoice}/payment",
                             headers={"Authorization": f"Bearer {token}", **headers})

    # ------------------------------------------------------------------ the story

    def play(self) -> list[Outcome]:
        try:
            self.happy_path()
            self.other_tenant()
            self.revocation()
            self.spoofed_header()
            self.replayed_token()
        finally:
            self.http.close()
        return self.outcomes

    def happy_path(self) -> None:
        self.act("1. alice (tenant acme) reads invoice inv-1 through edge → orders → billing")
        token = self.w.acme.token("alice", ["editor"])
        self.say(f"alice signs in at [bold]acme[/]'s IdP (its identity provider) and gets a {self.w.acme.alg} ID "
                 f"token: issuer (iss) [blue]{self.w.acme.issuer}[/], audience (aud, who it is for) edge-app, "
                 "groups \\[editor]")
        r = self.call_edge(token)
        body = r.json()
        if r.status_code != 200:
            self.record("acme user: edge → orders → billing", "200, tenant acme", f"{r.status_code} {body}", False)
            self.record("billing reads under RLS", "acme's row only", "no answer from billing", False)
            return
        minted, orders = body["minted_for_orders"], body["orders"]
        billing = orders["billing"]
        self.say(f"[magenta]edge[/]: its sidecar (the tenantguard process beside each service) checked the "
                 "signature against acme's published keys (JWKS) and exchanged the ID token (RFC 8693 token exchange) "
                 "for a context token: the short-lived signed token that carries user and tenant between services. "
                 f"iss [blue]{minted['iss']}[/], aud [bold]{minted['aud']}[/], act {_chain(minted['act'])} (act: "
                 f"the services acting for alice), scope '{minted['scope']}', valid {minted['lifetime']} s")
        decision = orders["decision"]
        self.say(f"[magenta]orders[/]: its sidecar verified the token (with edge's sidecar key, which the plane "
                 f"passed to every sidecar) and decided locally, with no call to a central service: [green]allow[/] "
                 f"(policy bundle {decision['bundle_revision']}, membership data at version (relations seq) "
                 f"{decision['relations_seq']}, decision id {str(decision['decision_id'])[:8]}…)")
        hop = billing["token"]
        mode = orders["to_billing"]
        why = ("billing is in the sensitive zone, so orders' sidecar exchanges alice's token for a new one made for "
               "billing" if mode == "exchange" else "orders passes the token on")
        self.say(f"[magenta]orders → billing[/]: how the token travels on (propagation mode) is [bold]{mode}[/]: "
                 f"{why}: iss [blue]{hop['iss']}[/], aud [bold]{hop['aud']}[/], act {_chain(hop['act'])} (orders, "
                 f"called by edge), scope '{hop['scope']}', valid {hop['lifetime']} s")
        self.say("[magenta]billing[/]: its sidecar verified the token and checked the calling service (orders "
                 "may invoices:read): [green]allow[/]")
        ok = billing["token"]["tenant_id"] == "acme" and hop["actors"] == ["svc:orders", "svc:edge"]
        self.record("acme user: edge → orders → billing", "200, tenant acme, chain orders ← edge",
                    f"{r.status_code}, tenant {hop['tenant_id']}, chain {_chain(hop['act'])}", ok)
        self.database_step("billing reads under RLS (acme)", billing["db"], "acme", 100)

    def database_step(self, step: str, db: Mapping[str, Any], tenant: str, amount: int) -> None:
        expected = f"only {tenant}'s inv-1 (amount {amount})"
        if "skipped" in db or self.w.pg_note is not None:
            self.record(step, expected, f"PostgreSQL step skipped: {self.w.pg_note or db.get('skipped')}", None)
            return
        rows = [tuple(row) for row in db["rows"]]
        self.say(f"[magenta]billing[/]: as role [bold]{db['role']}[/] (no superuser, no BYPASSRLS): "
                 f"[dim]{db['query'].replace('%s', repr('inv-1'))}[/] (no tenant in the SQL) → RLS returned {rows}; "
                 f"{db['visible_rows']} of 3 rows visible to {tenant}")
        ok = rows == [(tenant, "inv-1", amount)]
        self.record(step, expected, f"{len(rows)} row(s): {rows}", ok)

    def other_tenant(self) -> None:
        self.act("2. mallory (tenant globex) asks for the same ids: project p1, invoice inv-1")
        r = self.call_edge(self.w.globex.token("mallory", ["editor"]))
        body = r.json()
        if r.status_code != 200:
            self.record("globex user, colliding ids", "200, tenant globex", f"{r.status_code} {body}", False)
            return
        billing = body["orders"]["billing"]
        self.say(f"globex's IdP ({self.w.globex.alg}) → edge → orders → billing, every hop in tenant "
                 f"[bold]{billing['token']['tenant_id']}[/]")
        self.record("globex user, colliding ids", "200, tenant globex", f"{r.status_code}, tenant "
                    f"{billing['token']['tenant_id']}", billing["token"]["tenant_id"] == "globex")
        self.database_step("billing reads under RLS (globex)", billing["db"], "globex", 999)

    def revocation(self) -> None:
        self.act("3. acme takes alice off the finance team in the plane")
        self.say("alice was a member of project p1 only through the schema (bundles/tenantguard/schema.fga): "
                 "finance team → finance folder → project p1")
        tuple_text = self.w.team_membership
        start = time.perf_counter()
        seq = self.w.revoke(tuple_text)
        acked = time.perf_counter() - start
        self.say(f"DELETE {tuple_text} (a relationship: tenant/object#relation@subject) → consistency token {seq} "
                 f"(the change's sequence number; {acked * 1000:.0f} ms)")
        applied = {name: self._applied(url, seq, start) for name, url in self.w.sidecars.items()}
        worst = max(applied.values())
        shown = ", ".join(f"{name} {t * 1000:.0f} ms" for name, t in applied.items())
        self.say(f"signed event over NATS, applied by every sidecar: {shown}")
        self.record("revocation reaches every sidecar", "< 2000 ms", f"{worst * 1000:.0f} ms", worst < 2.0)
        r = self.call_edge(self.w.acme.token("alice", ["editor"]))
        reasons = _reasons(r.json())
        self.say(f"alice calls again → [red]{r.status_code}[/] from orders, reasons {reasons}")
        self.record("next call after revocation", "403 not_project_member", f"{r.status_code} {','.join(reasons)}",
                    r.status_code == 403 and reasons == ["not_project_member"])

    def _applied(self, sidecar_url: str, seq: int, start: float, timeout: float = 10.0) -> float:
        """Seconds from the write until ``sidecar_url`` reports relations seq >= ``seq`` (inf on timeout)."""
        while time.perf_counter() - start < timeout:
            status = self.http.get(f"{sidecar_url}/v1/status").json()
            if status.get("relations_seq", 0) >= seq:
                return time.perf_counter() - start
            time.sleep(0.002)
        return float("inf")

    def spoofed_header(self) -> None:
        self.act("4. an acme user sends X-Tenant-Id: globex")
        r = self.call_edge(self.w.acme.token("alice", ["editor"]), **{"X-Tenant-Id": "globex"})
        reasons = _reasons(r.json())
        self.say("the header is passed along as a claim to check; the tenant comes from the verified token only")
        self.say(f"→ [red]{r.status_code}[/], reasons {reasons}")
        self.record("spoofed X-Tenant-Id: globex", "403 tenant_mismatch", f"{r.status_code} {','.join(reasons)}",
                    r.status_code == 403 and reasons == ["tenant_mismatch"])

    def replayed_token(self) -> None:
        self.act("5. a token minted for orders is replayed at billing")
        form = {"grant_type": EXCHANGE_GRANT, "subject_token": self.w.globex.token("mallory", ["editor"]),
                "subject_token_type": JWT_TYPE, "audience": "orders"}
        stolen = self.http.post(f"{self.w.edge_sidecar}/oauth2/token", data=form).json()["access_token"]
        self.say("mallory captures the context token edge minted for orders (aud orders) and calls billing with it")
        r = self.http.get(f"{self.w.billing_url}/payments/inv-1", headers={"Authorization": f"Bearer {stolen}"})
        code = str(r.json().get("error", ""))
        self.say(f"→ [red]{r.status_code}[/] {code}: billing's sidecar accepts only tokens whose aud is billing")
        self.record("replayed orders token at billing", "401 audience_invalid", f"{r.status_code} {code}",
                    r.status_code == 401 and code == "audience_invalid")


def summary_table(outcomes: list[Outcome]) -> Table:
    table = Table(title="tenantguard demo: summary", title_style="bold", show_lines=False)
    table.add_column("step")
    table.add_column("expected")
    table.add_column("got")
    table.add_column("", justify="center")
    for o in outcomes:
        mark = {True: "[green]✓[/]", False: "[bold red]✗[/]", None: "[yellow]-[/]"}[o.ok]
        table.add_row(o.step, o.expected, o.got, mark)
    return table
