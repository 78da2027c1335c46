"""The subjects an expand tree reaches, as ``zed validate`` counts them for expected relations.

Follows SpiceDB's development membership set (``internal/developmentmembership``): every
subject a tuple names is found (usersets too, not only the users under them), with the
relationships (``object#relation``) whose tuples named it; union merges, intersection keeps
what every branch has, exclusion removes what the subtracted branch has (a wildcard minus a
subject keeps the wildcard and records the exception). A subject reached only through a
caveated tuple is caveated; reached also without one, it is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Found:
    via: set[str] = field(default_factory=set)
    caveated: bool = False
    exceptions: set[str] = field(default_factory=set)


Subjects = dict[str, Found]


def found_subjects(node: Mapping[str, Any]) -> dict[str, Found]:
    """Every subject ``node`` (an ``expand`` result) reaches, with how it was reached."""
    return _node(node)


def _node(node: Mapping[str, Any]) -> Subjects:
    if node.get("cycle") or "tree" not in node:
        return {}
    return _tree(node["tree"], f"{node['object']}#{node['relation']}")


def _tree(tree: Mapping[str, Any], resource: str) -> Subjects:
    if "tuples" in tree:
        out: Subjects = {}
        for leaf in tree["tuples"]:
            caveated = bool(leaf.get("condition"))
            part: Subjects = {leaf["subject"]: Found({resource}, caveated)}
            if "userset" in leaf:
                inner = _node(leaf["userset"])
                if caveated:
                    for f in inner.values():
                        f.caveated = True
                part = _union(part, inner)
            out = _union(out, part)
        return out
    if "computed" in tree:
        return _node(tree["computed"])
    if "arrow" in tree:
        arrow = tree["arrow"]
        parts = []
        for child in arrow["children"]:
            found = _node(child)
            if child.get("condition"):
                for f in found.values():
                    f.caveated = True
            parts.append(found)
        if arrow.get("all"):
            return _intersect(parts) if parts else {}
        return _union_all(parts)
    if "union" in tree:
        return _union_all([_tree(t, resource) for t in tree["union"]])
    if "intersection" in tree:
        return _intersect([_tree(t, resource) for t in tree["intersection"]])
    if "exclusion" in tree:
        return _exclude(_tree(tree["exclusion"]["base"], resource), _tree(tree["exclusion"]["subtract"], resource))
    return {}


def _union(a: Subjects, b: Subjects) -> Subjects:
    for subject, f in b.items():
        have = a.get(subject)
        if have is None:
            a[subject] = Found(set(f.via), f.caveated, set(f.exceptions))
        else:
            have.via |= f.via
            have.caveated = have.caveated and f.caveated
            have.exceptions &= f.exceptions
    return a


def _union_all(parts: list[Subjects]) -> Subjects:
    out: Subjects = {}
    for part in parts:
        out = _union(out, part)
    return out


def _wildcard(subject: str) -> str | None:
    head = subject.partition("#")[0]
    return None if "#" in subject else f"{head.partition(':')[0]}:*"


def _intersect(parts: list[Subjects]) -> Subjects:
    out = parts[0]
    for other in parts[1:]:
        merged: Subjects = {}
        for subject, f in out.items():
            match = other.get(subject)
            if match is None and _wildcard(subject) in other and not subject.endswith(":*"):
                wild = other[_wildcard(subject)]  # type: ignore[index]
                if subject not in wild.exceptions:
                    match = wild
            if match is not None:
                merged[subject] = Found(f.via | match.via, f.caveated or match.caveated,
                                        f.exceptions | match.exceptions)
        for subject, f in other.items():
            wild_key = _wildcard(subject)
            if subject not in merged and wild_key in out and not subject.endswith(":*") \
                    and subject not in out[wild_key].exceptions:  # type: ignore[index]
                wild = out[wild_key]  # type: ignore[index]
                merged[subject] = Found(f.via | wild.via, f.caveated or wild.caveated, set())
        out = merged
    return out


def _exclude(base: Subjects, subtract: Subjects) -> Subjects:
    out: Subjects = {}
    for subject, f in base.items():
        removed = subtract.get(subject)
        wild = subtract.get(_wildcard(subject) or "")
        if subject.endswith(":*"):
            kept = Found(set(f.via), f.caveated, set(f.exceptions))
            type_prefix = subject[:-1]
            for other, g in subtract.items():
                if other.startswith(type_prefix) and "#" not in other and other != subject:
                    kept.exceptions.add(other + ("[...]" if g.caveated else ""))
            if removed is not None and not removed.caveated:
                continue
            out[subject] = kept
            continue
        blocker = removed or (wild if wild is not None and subject not in wild.exceptions else None)
        if blocker is None:
            out[subject] = Found(set(f.via), f.caveated, set(f.exceptions))
        elif blocker.caveated:
            out[subject] = Found(set(f.via), True, set(f.exceptions))
    return out
