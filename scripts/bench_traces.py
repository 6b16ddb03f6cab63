#!/usr/bin/env python3
"""Benchmark: check one set of traces one trace per TLC run, then batched; verdicts must agree.

    python3 scripts/bench_traces.py                           # 300 synthetic Counter traces
    scripts/record_traces.sh out/traces                       # then, on what it recorded:
    python3 scripts/bench_traces.py --root . --sample 360 out/traces

Per system it prints the traces, their events, the TLC runs, the seconds both ways (and per
trace), the distinct states the batched search found per trace, and the speedup; then the
whole set's. `--sample N` takes N traces spread over the systems and the folders they came
from (a fixed seed picks them), so that the one-trace-per-run side stays minutes long; a
trace that reading already decided (malformed, skipped) takes no TLC run either way and is
left out. The batched side runs `--repeat` times (default 5) and its run of median wall time is
the one reported, beside the fastest and the slowest. Exits 1 if any verdict differs between
the two ways, or between two batched runs.

`--before DIR` also checks the same traces, batched, with another checkout's code (say, a
`git worktree` of an earlier commit) and with this one's, each as its own `traces check` per
system (its process start included, the same for both), then all together in one, and prints
the wall seconds side by side; their verdicts must agree too.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.check.runner import Tlc, default_workers
from conformance.output.values import parse_value, to_json
from conformance.output.verdict import Verdict
from conformance.traces.batch import Batch
from conformance.traces.check import check_traces, default_jobs
from conformance.traces.read import parse_trace, read_trace_file, trace_files
from conformance.traces.system import System, load_systems
from conformance.traces.trace import Trace, TraceKind, TraceVerdict

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "project"


def synthetic(count: int, length: int, seed: int) -> list[Trace]:
    """`count` Counter traces of `length` steps by two nodes; every third has one wrong value."""
    rng = random.Random(seed)
    traces = []
    for i in range(count):
        seen = {"n1": 0, "n2": 0}
        lines: list[dict] = [{"kind": "header", "format": 1, "system": "counter", "gates": {}, "settings": {"limit": length},
                              "nodes": ["n1", "n2"], "run": f"synthetic-{i}"}]
        bad_at = rng.randrange(1, length + 1) if i % 3 == 2 else None
        for x in range(1, length + 1):
            node = rng.choice(["n1", "n2"])
            seen[node] = x
            logged = x + 1 if x == bad_at else x
            lines.append({"kind": "event", "seq": x, "node": node, "op": "step", "now": 10 * x, "outcome": "stepped",
                          "state": {"x": logged, "seen": dict(seen)}})
        lines.append({"kind": "end", "count": length})
        t = parse_trace("".join(json.dumps(ln) + "\n" for ln in lines), f"synthetic-{i}")
        assert isinstance(t, Trace), t
        traces.append(t)
    return traces


def sample(traces: list[Trace], n: int, seed: int) -> list[Trace]:
    """`n` traces (all if fewer), taken in turn from each (system, folder) in a fixed random
    order, so that every system and every source of the set is represented."""
    rng = random.Random(seed)
    pools: dict[tuple[str, str], list[Trace]] = defaultdict(list)
    for t in traces:
        pools[(t.header.get("system", "?"), str(Path(t.source).parent))].append(t)
    for pool in pools.values():
        rng.shuffle(pool)
    order = sorted(pools)
    out: list[Trace] = []
    while len(out) < n and any(pools.values()):
        for key in order:
            if pools[key] and len(out) < n:
                out.append(pools[key].pop())
    return sorted(out, key=lambda t: t.source)


@dataclass
class Way:
    """One way of checking the traces: wall seconds in all, and per system the TLC runs, their
    seconds (each run's own, summed) and the distinct states they found."""

    seconds: float = 0.0
    runs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    run_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    distinct: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    verdicts: list[TraceVerdict] = field(default_factory=list)


def check(traces: list[Trace], systems: dict[str, System], tlc: Tlc, jobs: int, batch_size: int | None) -> Way:
    """Check `traces` (batched, or one per run with `batch_size=1`) in one call and time it,
    rendering them as TLA+ text as a user's `traces check` does (each trace keeps its text once
    made: without forgetting it, every batched run but the first skipped that work)."""
    for t in traces:
        t.literals.clear()
    way = Way()

    def on_run(batch: Batch, verdict: Verdict) -> None:
        name = batch.system.name
        way.runs[name] += 1
        way.run_seconds[name] += verdict.stats.seconds
        way.distinct[name] += verdict.stats.distinct_states or 0

    start = time.monotonic()
    kwargs = {"batch_size": batch_size} if batch_size else {}
    way.verdicts = check_traces(list(traces), systems, tlc, jobs=jobs, on_run=on_run, **kwargs)
    way.seconds = time.monotonic() - start
    return way


def canonical(v: TraceVerdict) -> tuple[Any, ...]:
    """A verdict up to the order in which TLC prints a record's fields or a function's domain
    (its order of first use of each name, which differs between a batch and a run alone): the
    same kind, line, step and reason, and the same fields with the same values."""
    def value(text: Any) -> str:
        try:
            return json.dumps(to_json(parse_value(str(text))), sort_keys=True)
        except Exception:  # not a printed value: compare the text
            return str(text)
    diffs = sorted(((d.field, value(d.expected), value(d.logged)) for d in v.diffs))
    return (v.source, v.kind, v.reason, v.line, v.op, v.node, v.explained, tuple(diffs))


def cli_check(code: Path, root: Path, traces: list[Trace]) -> tuple[float, dict[str, str]]:
    """`traces check --json` of the checkout at `code` on `traces` (batched, as many TLC runs at
    once as that checkout's default): wall seconds, and each trace's verdict kind."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    cmd = [sys.executable, "-m", "conformance.cli", "traces", "check", "--root", str(root), "--json", "--no-coverage",
           *(t.source for t in traces)]
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{code}: traces check gave no JSON (exit {done.returncode}): {done.stderr[-2000:]}") from None
    return seconds, {v["trace"]: v["verdict"] for v in out["traces"]}


def before_after(before: Path, traces: list[Trace]) -> int:
    """The before/after table (see the module docstring); 1 if any verdict differs."""
    here = Path(__file__).resolve().parents[1]
    by_system: dict[str, list[Trace]] = defaultdict(list)
    for t in traces:
        by_system[t.header["system"]].append(t)
    print(f"\nbatched, before ({before}) and after ({here}): wall seconds of `traces check` per system")
    print(f"{'system':<10} {'traces':>6} {'before s':>9} {'ms/trace':>8} {'after s':>8} {'ms/trace':>8} {'faster':>6}")
    differ = 0
    totals = [0.0, 0.0]
    for name in sorted(by_system):
        ts = by_system[name]
        b, vb = cli_check(before, before, ts)
        a, va = cli_check(here, here, ts)
        differ += sum(vb.get(k) != v for k, v in va.items())
        totals[0] += b
        totals[1] += a
        print(f"{name:<10} {len(ts):>6} {b:>9.1f} {1000 * b / len(ts):>8.0f} {a:>8.1f} {1000 * a / len(ts):>8.0f} {b / a:>5.1f}x")
    n = max(1, len(traces))
    print(f"{'all':<10} {len(traces):>6} {totals[0]:>9.1f} {1000 * totals[0] / n:>8.0f} {totals[1]:>8.1f} {1000 * totals[1] / n:>8.0f}"
          f" {totals[0] / totals[1]:>5.1f}x")
    # And the whole set in one `traces check`, its systems' runs side by side (as a user runs it).
    b, vb = cli_check(before, before, traces)
    a, va = cli_check(here, here, traces)
    differ += sum(vb.get(k) != v for k, v in va.items())
    print(f"{'together':<10} {len(traces):>6} {b:>9.1f} {1000 * b / n:>8.0f} {a:>8.1f} {1000 * a / n:>8.0f} {b / a:>5.1f}x")
    if differ:
        print(f"VERDICTS DIFFER between before and after for {differ} traces")
        return 1
    print("before and after: verdicts identical")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", type=Path, help="trace files or directories (default: synthetic)")
    p.add_argument("--root", type=Path, default=None, help="project with traces/systems (default: the fixture project)")
    p.add_argument("--count", type=int, default=300, help="synthetic traces (without paths)")
    p.add_argument("--length", type=int, default=20, help="steps per synthetic trace")
    p.add_argument("--sample", type=int, default=0, help="check this many of the traces found (0: all)")
    p.add_argument("--jobs", type=int, default=None, help="TLC runs at once, both ways (default: traces check's, "
                   "one more than the cores)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batched-only", action="store_true", help="skip the one-trace-per-run side (no speedup)")
    p.add_argument("--repeat", type=int, default=5, help="batched runs; the one of median wall time is reported (default 5)")
    p.add_argument("--before", type=Path, metavar="DIR", help="also check the traces batched with the checkout at DIR, and "
                   "with this one, and print both (see above)")
    args = p.parse_args()
    if args.before is not None and not args.paths:
        p.error("--before needs trace paths (the synthetic traces are not files)")

    root = args.root or FIXTURE
    systems = load_systems(root)
    if args.paths:
        read = [read_trace_file(f) for f in trace_files(args.paths)]
        traces = [t for t in read if isinstance(t, Trace) and t.header.get("system") in systems]
        if args.sample:
            traces = sample(traces, args.sample, args.seed)
        print(f"{len(traces)} traces checked of {len(read)} files read")
    else:
        traces = synthetic(args.count, args.length, args.seed)
    tlc = Tlc.locate()
    args.jobs = args.jobs or default_jobs(default_workers())
    # The batched side is a few seconds on a shared machine, where a neighbour's burst moves one
    # run by a quarter: it runs `--repeat` times and the run of median wall time stands for it
    # (the fastest and slowest are printed too). The alone side, minutes of runs, averages itself.
    runs = [check(traces, systems, tlc, args.jobs, None) for _ in range(max(1, args.repeat))]
    for other in runs[1:]:
        if [canonical(v) for v in other.verdicts] != [canonical(v) for v in runs[0].verdicts]:
            print("VERDICTS DIFFER between two batched runs of the same traces")
            return 1
    batched = sorted(runs, key=lambda w: w.seconds)[len(runs) // 2]
    walls = sorted(w.seconds for w in runs)
    alone = None if args.batched_only else check(traces, systems, tlc, args.jobs, 1)

    # Per system: the TLC runs' own seconds (runs overlap, so these add up to more than the wall
    # time when jobs > 1); the last line is the wall time of each way in all.
    print(f"up to {args.jobs} TLC runs at once; per system, seconds are the sum of its TLC runs' own")
    cols = f"{'system':<10} {'traces':>6} {'events':>7} {'runs':>5} {'batched s':>9} {'ms/trace':>8} {'states/trace':>12}"
    print(cols + ("" if alone is None else f" {'runs':>5} {'alone s':>8} {'ms/trace':>8} {'speedup':>7}"))
    by_system: dict[str, list[Trace]] = defaultdict(list)
    for t in traces:
        by_system[t.header["system"]].append(t)
    for name in sorted(by_system):
        ts = by_system[name]
        b = batched.run_seconds[name]
        line = (f"{name:<10} {len(ts):>6} {sum(len(t.events) for t in ts):>7} {batched.runs[name]:>5} {b:>9.1f}"
                f" {1000 * b / len(ts):>8.0f} {batched.distinct[name] / len(ts):>12.1f}")
        if alone is not None:
            a = alone.run_seconds[name]
            line += f" {alone.runs[name]:>5} {a:>8.1f} {1000 * a / len(ts):>8.0f} {a / max(b, 1e-9):>6.1f}x"
        print(line)
    n = max(1, len(traces))
    line = f"{'all (wall)':<10} {len(traces):>6} {sum(len(t.events) for t in traces):>7} {sum(batched.runs.values()):>5} {batched.seconds:>9.1f} {1000 * batched.seconds / n:>8.0f} {'':>12}"
    if alone is not None:
        line += f" {sum(alone.runs.values()):>5} {alone.seconds:>8.1f} {1000 * alone.seconds / n:>8.0f} {alone.seconds / batched.seconds:>6.1f}x"
    print(line)
    if alone is None and len(walls) > 1:
        print(f"batched wall over {len(walls)} runs: median {batched.seconds:.1f} s, fastest {walls[0]:.1f} s, slowest {walls[-1]:.1f} s")
    kinds: dict[TraceKind, int] = defaultdict(int)
    for v in batched.verdicts:
        kinds[v.kind] += 1
    print("verdicts: " + ", ".join(f"{k} {kind.value}" for kind, k in kinds.items()))
    failed = before_after(args.before.resolve(), traces) if args.before is not None else 0
    if alone is None:
        return failed
    differ = [(a.source, a.describe(), b.describe()) for a, b in zip(batched.verdicts, alone.verdicts) if canonical(a) != canonical(b)]
    if differ:
        print(f"VERDICTS DIFFER for {len(differ)} traces, e.g. {differ[:3]}")
        return 1
    print(f"verdicts identical; speedup {alone.seconds / batched.seconds:.1f}x")
    if len(walls) > 1:
        print(f"batched wall over {len(walls)} runs: median {batched.seconds:.1f} s, fastest {walls[0]:.1f} s, slowest "
              f"{walls[-1]:.1f} s; speedup {alone.seconds / walls[-1]:.1f}x against the slowest, "
              f"{alone.seconds / walls[0]:.1f}x against the fastest")
    return failed


if __name__ == "__main__":
    sys.exit(main())
