"""``bundle rollout status`` as tables: the rollout, each scope's active revision, which sidecar
runs what, running shadows and what the reconciler could not do. The plane's full answer (about
150 lines of JSON for a small fleet) stays one ``--json`` away.

Plain aligned text, not a rich table: it is read in a terminal and grepped in scripts alike, and
never wraps a revision across lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

SHOWN_SIDECARS: Final = 50  # more instances are counted, not listed (`--json` lists them all)


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Columns aligned to their widest cell, two spaces apart; ``-`` for a missing value."""
    cells = [[str(h) for h in header]] + [["-" if v is None or v == "" else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def render_status(answer: Mapping[str, Any]) -> list[str]:
    """The lines ``bundle rollout status`` prints for ``GET /v1/rollouts``."""
    lines: list[str] = []
    rollout = answer.get("rollout")
    if isinstance(rollout, Mapping):
        stages = rollout.get("stages") or []
        stage = int(rollout.get("stage", 0))
        lines.append(f"rollout {rollout.get('id')}: revision {rollout.get('revision')}, {rollout.get('status')}, "
                     f"stage {stage + 1} of {len(stages)}")
        lines += ["  " + line for line in table(
            ["stage", "scopes", "state"],
            [[i + 1, ",".join(s), "reached" if i <= stage else "pending"] for i, s in enumerate(stages)])]
    else:
        lines.append("rollout: none")
    scopes = answer.get("scopes") or {}
    lines.append("")
    lines.append("scopes (active revision)")
    lines += ["  " + line for line in table(
        ["scope", "revision", "serial", "seq", "sha256"],
        [[scope, a.get("revision"), a.get("serial"), a.get("seq"), str(a.get("sha256") or "")[:12]]
         for scope, a in sorted(scopes.items()) if isinstance(a, Mapping)])]
    sidecars = [s for s in answer.get("sidecars") or [] if isinstance(s, Mapping)]
    lines.append("")
    lines.append(f"sidecars ({len(sidecars)})")
    if sidecars:
        lines += ["  " + line for line in table(
            ["service", "instance", "revision", "seen", "state"],
            [[s.get("service"), s.get("instance"), s.get("bundle_revision"), f"{s.get('seen_seconds_ago')} s ago",
              "silent" if s.get("silent") else "reporting"] for s in sidecars[:SHOWN_SIDECARS]])]
        if len(sidecars) > SHOWN_SIDECARS:
            lines.append(f"  ... {len(sidecars) - SHOWN_SIDECARS} more (--json lists them all)")
    shadow = (answer.get("fleet") or {}).get("shadow") or {}
    if shadow:
        lines.append("")
        lines.append("shadows")
        lines += ["  " + line for line in table(
            ["revision", "service", "instances", "evaluated", "agreed", "allow->deny", "deny->allow"],
            [[revision, service, c.get("instances"), c.get("evaluated"), c.get("agreed"), c.get("allow->deny"),
              c.get("deny->allow")]
             for revision, entry in sorted(shadow.items()) for service, c in sorted(entry["services"].items())])]
    reconcile = answer.get("reconcile") or {}
    trouble = [[scope, "failing", f"{v.get('code')}: {v.get('message')}"]
               for scope, v in sorted((reconcile.get("failing") or {}).items())]
    trouble += [[scope, f"left ({v.get('reason')})", f"at revision {v.get('revision')}"]
                for scope, v in sorted((reconcile.get("left") or {}).items())]
    if trouble:
        lines.append("")
        lines.append("reconciler")
        lines += ["  " + line for line in table(["scope", "state", "detail"], trouble)]
    return lines
