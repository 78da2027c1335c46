"""Where a schema check's time goes, at 1,000,000 tuples over ~10,000 tenants on the compact index.

Four measures, side by side in one run (each question asks all four, in an order that rotates
per question, each call timed on its own), over the data of bench/peers/schema_worker.py (the
issue's 3-level folder hierarchy with 2 levels of nested groups; SpiceDB's schema text):

- index direct: today's direct-tuple check, the relations index alone (``RelationIndex.check``);
- engine direct: the schema engine's check of ``view`` on a document granted directly;
- engine hierarchy: the same check granted only through 3 folders and 2 nested groups;
- hierarchy reads: the tuple reads that hierarchy check performs, recorded once per question
  and replayed on ``index.tenant(t)`` without the engine (the floor any walk over these reads
  pays; the replay loop itself adds ~0.1 µs a read).

Medians and p99s in microseconds. ``--against REV`` measures the engine and index as committed
at REV beside the working tree's: each implementation loads the data in a process of its own
(the ``sdk`` tree at REV from ``git archive``), and the parent alternates blocks of questions
between them, so both see the same minutes of a shared machine.

Run: python bench/bench_schema_split.py [--count 1000000] [--questions 20000] [--against REV] [--clock cpu]
(``--clock cpu`` times each call by the thread's CPU time: p99s on a loaded machine without
the preemptions, plus the cost of the clock itself, printed as "empty call".)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE / "peers"))

VARIANTS = ("index direct", "engine direct", "engine hierarchy", "hierarchy reads")
WORKTREE = "worktree"


class Recorder:
    """Any reads, every call noted with how many items of an iterator the caller took."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[tuple[str, tuple[Any, ...], int | None]] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._inner, name)

        def call(*args: Any) -> Any:
            result = method(*args)
            if not isinstance(result, Iterator):
                self.calls.append((name, args, None))
                return result
            slot = len(self.calls)
            self.calls.append((name, args, 0))
            return self._counted(result, slot)

        return call

    def _counted(self, items: Iterator[Any], slot: int) -> Iterator[Any]:
        for n, item in enumerate(items, 1):
            name, args, _ = self.calls[slot]
            self.calls[slot] = (name, args, n)
            yield item


def replayer(calls: list[tuple[str, tuple[Any, ...], int | None]], cls: type) -> Callable[[Any], None]:
    """Performs ``calls`` on a reads object, taking as many items of each iterator as the engine did."""
    plan = [(getattr(cls, name), args, taken) for name, args, taken in calls]

    def replay(reads: Any) -> None:
        for fn, args, taken in plan:
            result = fn(reads, *args)
            if taken:
                for n, _ in enumerate(result, 1):
                    if n == taken:
                        break

    return replay


class Worker:
    """One implementation: the data loaded into its index, the questions prepared."""

    def __init__(self, count: int, questions: int) -> None:
        import schema_worker as data  # bench/peers/, beside this script's folder
        from tenantguard.relations import ChangeBatch, RelationChange, RelationIndex, Relationship
        from tenantguard.schema import load
        from tenantguard.schema.engine import SchemaEngine

        self.engine = SchemaEngine(load(data.SCHEMA, "bench.zed"))
        self.index = index = RelationIndex()
        start = time.perf_counter()
        for seq, chunk in enumerate(data.chunks(count), start=1):
            index.apply(ChangeBatch(seq, tuple(RelationChange("write", Relationship(*t)) for t in chunk)))
        self.load_s = time.perf_counter() - start
        self.tenants = len(index.view().tenants())
        self.direct = data.questions(count, questions, False)
        self.through = data.questions(count, questions, True)
        engine = self.engine
        self.replays = []
        for tn, doc, user in self.through:
            recorder = Recorder(index.tenant(tn))
            assert engine.check(recorder, doc, "view", user).allowed
            self.replays.append(replayer(recorder.calls, type(index.tenant(tn))))
        self.reads_per_check = len(recorder.calls)
        for tn, doc, user in self.direct[:100]:
            assert index.check(tn, doc, "viewer", user) and engine.check(index.tenant(tn), doc, "view", user).allowed

    def block(self, lo: int, hi: int, cpu: bool = False) -> dict[str, list[int]]:
        """Questions ``lo..hi``: each asks all four measures, in an order rotating per question;
        ``cpu`` times by this thread's CPU time (a loaded machine's preemptions left out; the clock
        itself costs a system call, measured as "empty call")."""
        index, engine = self.index, self.engine
        clock = time.thread_time_ns if cpu else time.perf_counter_ns
        samples: dict[str, list[int]] = {v: [] for v in (*VARIANTS, "empty call")}
        for i in range(lo, hi):
            tn, doc, user = self.direct[i]
            htn, hdoc, huser = self.through[i]
            replay = self.replays[i]
            runs: list[tuple[str, Callable[[], object]]] = [
                ("index direct", lambda t=tn, d=doc, u=user: index.check(t, d, "viewer", u)),  # type: ignore[misc]
                ("engine direct", lambda t=tn, d=doc, u=user: engine.check(index.tenant(t), d, "view", u)),  # type: ignore[misc]
                ("engine hierarchy", lambda t=htn, d=hdoc, u=huser: engine.check(index.tenant(t), d, "view", u)),  # type: ignore[misc]
                ("hierarchy reads", lambda t=htn, r=replay: r(index.tenant(t))),  # type: ignore[misc]
            ]
            k = i % len(runs)
            for name, fn in runs[k:] + runs[:k]:
                start = clock()
                fn()
                samples[name].append(clock() - start)
            start = clock()
            samples["empty call"].append(clock() - start)
        return samples


def serve(count: int, questions: int) -> None:
    """``--serve``: load, say so, then answer one JSON line of samples per requested block."""
    worker = Worker(count, questions)
    print(json.dumps({"load_s": worker.load_s, "tenants": worker.tenants, "tuples": worker.index.count(),
                      "reads_per_check": worker.reads_per_check}), flush=True)
    for line in sys.stdin:
        lo, hi, cpu = json.loads(line)
        print(json.dumps(worker.block(lo, hi, cpu)), flush=True)


def exported(rev: str, into: Path) -> Path:
    """The ``sdk`` tree as committed at ``rev``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "sdk"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "sdk"


def summary(samples: list[int]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples) / 1000, samples[min(len(samples) - 1, int(len(samples) * 0.99))] / 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--questions", type=int, default=20_000)
    ap.add_argument("--block", type=int, default=500, help="questions per turn of an implementation")
    ap.add_argument("--against", action="append", default=[], metavar="REV")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: the thread's CPU time per call (leaves out preemptions on a loaded machine)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.count, args.questions)
        return
    impls = [*args.against, WORKTREE]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        procs: dict[str, subprocess.Popen[str]] = {}
        for impl in impls:
            env = dict(os.environ)
            if impl != WORKTREE:
                into = Path(tmp) / impl.replace("/", "_")
                into.mkdir()
                env["PYTHONPATH"] = str(exported(impl, into))
            procs[impl] = subprocess.Popen(
                [sys.executable, __file__, "--serve", "--count", str(args.count), "--questions", str(args.questions)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        info = {impl: json.loads(p.stdout.readline()) for impl, p in procs.items()}  # type: ignore[union-attr]
        rows = (*VARIANTS, "empty call")
        samples: dict[str, dict[str, list[int]]] = {impl: {v: [] for v in rows} for impl in impls}
        for turn, lo in enumerate(range(0, args.questions, args.block)):
            hi = min(lo + args.block, args.questions)
            order = impls if turn % 2 == 0 else impls[::-1]
            for impl in order:
                p = procs[impl]
                p.stdin.write(json.dumps([lo, hi, args.clock == "cpu"]) + "\n")  # type: ignore[union-attr]
                p.stdin.flush()  # type: ignore[union-attr]
                for name, got in json.loads(p.stdout.readline()).items():  # type: ignore[union-attr]
                    samples[impl][name].extend(got)
        for p in procs.values():
            p.stdin.close()  # type: ignore[union-attr]
            p.wait()
    load_after = os.getloadavg()
    first = info[impls[-1]]
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, python {platform.python_version()}, "
          f"{first['tuples']:,} tuples over {first['tenants']:,} tenants, {args.questions:,} questions each, "
          f"{args.clock} clock; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    for impl in impls:
        print(f"{impl}: loaded in {info[impl]['load_s']:.1f} s; the hierarchy check makes "
              f"{info[impl]['reads_per_check']} reads")
    print(f"\n{'µs, median / p99':22s}" + "".join(f"{impl[:22]:>24s}" for impl in impls))
    table = {impl: {v: summary(samples[impl][v]) for v in rows} for impl in impls}
    for v in rows:
        print(f"{v:22s}" + "".join(f"{table[i][v][0]:>12.1f} /{table[i][v][1]:>9.1f}" for i in impls))
    for impl in impls:
        t = table[impl]
        base = t["index direct"]
        print(f"{impl}: hierarchy / index direct {t['engine hierarchy'][0] / base[0]:.1f}x median, "
              f"{t['engine hierarchy'][1] / base[1]:.1f}x p99; reads alone / index direct "
              f"{t['hierarchy reads'][0] / base[0]:.1f}x median, {t['hierarchy reads'][1] / base[1]:.1f}x p99")


if __name__ == "__main__":
    main()
