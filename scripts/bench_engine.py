#!/usr/bin/env python3
"""Benchmark the reference engine beside its store's own limit, for 1 and 2 node processes.

Each workflow is an `approval`: a start (two transactions), a signal from a random node, and
the runs it causes (usually two: one that waits, one that completes), about nine store
transactions in all, each recording its trace event. All workflows start at once. Per cell:

- engine: `leaseproof engine run` (node processes; the run's traces exported); its rates are
  the workflows completed, and the transactions committed (trace events), over the span from
  the first event to the last (read from the traces, so process start-up is not counted);
- limit: as many transactions of the engine's kind (`impl/engine/limit.py`: lock the
  workflow's counter row, read a task row, write it back under its version, record a trace
  event), back to back, from the same number of processes, through the same backend with the
  same connection settings and no engine around them; measured the same way, right after;
- ratio: limit txn/s over engine txn/s (the goal: 3 or less);
- limit xL, ratio xL: the same with L loops (threads) per process (`--limit-loops`, default 8,
  the engine's workers per node): one loop waits out every commit, and on MariaDB, whose
  commit waits for the disk, the engine's workers overlap theirs, so xL is the limit for that
  much overlap (on SQLite, one writer at a time, it adds little);
- overlaps: runs started while another run of the same workflow was in progress;
- traces: how many of the run's traces `conformance/traces` accepts against
  `tla/TraceEngine.tla` (TLC; `--no-check` skips it).

The plan signals each workflow within half a lease of its start (1.5 s with the default 3 s
lease), so a run of N workflows lasts at least that long: N / 1.5 workflows per second is the
most a run can show (200 for 300 workflows, 667 for 1000). Measure with 1000 or more; on SQLite
the engine passes that cap, so 3000 shows its own rate (1 node: about 8,200 txn/s against 5,500 at
1000 workflows on a quiet 2-core machine).

`--before DIR` also runs the engine of another checkout (a `git worktree` of an older commit),
printed as `before` beside this one's `after`, with this checkout's limit (measured once per
repeat for both), trace check and settings, so before and after are measured alike
(`--engine-root DIR` runs another checkout's engine alone):

    python scripts/bench_engine.py --workflows 1000
    git worktree add /tmp/old-engine 2410cba
    python scripts/bench_engine.py --workflows 1000 --before /tmp/old-engine --repeat 2

On a machine shared with other jobs one run's rate swings: `--repeat N` runs each side N times,
alternating, and prints the best of each (the least disturbed run); overlaps and accepted
traces are summed over every run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from impl.engine.limit import LimitResult, measure  # noqa: E402
from impl.engine.urls import open_backend  # noqa: E402

MYSQL_URL = "mysql://root@127.0.0.1:3306/test"


@dataclass(frozen=True)
class EngineResult:
    """One engine run, read from its summary and its traces."""

    completed: int
    events: int
    seconds: float
    overlaps: int
    trace_dir: Path

    @property
    def wf_rate(self) -> float:
        return self.completed / self.seconds if self.seconds > 0 else float("inf")

    @property
    def txn_rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")


def run_engine(root: Path, url: str, prefix: str, nodes: int, workflows: int, lease_ms: int,
               trace_dir: Path) -> EngineResult:
    """`leaseproof engine run` of the checkout at `root`; its figures from its traces."""
    cmd = [sys.executable, "-m", "conformance.cli", "engine", "run", "--store", url, "--prefix", prefix,
           "--nodes", str(nodes), "--workflows", str(workflows), "--seed", str(nodes), "--lease-ms", str(lease_ms),
           "--spread-ms", "0", "--long-fraction", "0", "--deadline", "600", "--trace-dir", str(trace_dir), "--json"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"engine run failed (exit {proc.returncode}): {(proc.stderr or proc.stdout)[-2000:]}")
    nows = []
    for path in trace_dir.glob("*.ndjson"):
        for line in path.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            if obj.get("kind") not in ("header", "end"):
                nows.append(obj["now"])
    seconds = (max(nows) - min(nows)) / 1000 if nows else 0.0
    return EngineResult(summary["completed"], len(nows), seconds, summary["figures"]["overlapping_runs"], trace_dir)


def check_traces(trace_dir: Path) -> tuple[int, int, str]:
    """(accepted, traces, what else) for the traces in `trace_dir`, by `conformance/traces`."""
    from collections import Counter

    from conformance.check.runner import Tlc
    from conformance.traces.check import check_files
    from conformance.traces.read import trace_files
    from conformance.traces.system import load_systems

    paths = trace_files([trace_dir])
    verdicts = check_files(paths, load_systems(ROOT), Tlc.locate())
    kinds = Counter(v.kind.value for v in verdicts)
    others = [f"{v.source.rsplit('/', 1)[-1]}: {v.kind.value}"
              + (f" at line {v.line} ({v.op} on {v.node})" if v.line is not None else "")
              + (f" {v.reason}" if v.reason else "")
              for v in verdicts if v.kind.value != "accepted"]
    return kinds.get("accepted", 0), len(verdicts), "; ".join(others[:3])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark matrix and print one line per cell (and side)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workflows", type=int, default=300)
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2])
    p.add_argument("--stores", nargs="+", default=["sqlite", "mysql"], choices=["sqlite", "mysql"])
    p.add_argument("--mysql-url", default=MYSQL_URL)
    p.add_argument("--prefix", default="lpbench_", help="table prefix (the limit uses PREFIX + 'lim_')")
    p.add_argument("--lease-ms", type=int, default=3_000)
    p.add_argument("--repeat", type=int, default=1, help="runs per side; the best of each is printed")
    p.add_argument("--engine-root", type=Path, default=ROOT, help="the checkout whose engine runs (default: this one)")
    p.add_argument("--before", type=Path, default=None,
                   help="also run this checkout's engine, as 'before', beside --engine-root's as 'after', "
                        "against the same limit measurements")
    p.add_argument("--limit-loops", type=int, default=8, help="loops per process of the second limit (default 8)")
    p.add_argument("--no-check", action="store_true", help="do not check the traces with TLC")
    p.add_argument("--keep", type=Path, default=None, help="keep the traces under this directory")
    args = p.parse_args(argv)
    sides = [("before", args.before), ("after", args.engine_root)] if args.before else [("", args.engine_root)]
    width = max(len(label) for label, _ in sides)
    xl = f"x{args.limit_loops}"
    print(f"{'':{width}} {'store':6} {'nodes':>5} {'wf':>5} {'wf/s':>7} {'txn/s':>7} {'limit txn/s':>11} "
          f"{'ratio':>6} {f'limit {xl}':>9} {f'ratio {xl}':>8} {'overlaps':>8} {'traces accepted':>15}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        out = args.keep or Path(tmp)
        for store in args.stores:
            for n in args.nodes:
                url = f"sqlite:///{Path(tmp) / f'bench{n}.db'}" if store == "sqlite" else args.mysql_url
                engines: dict[str, list[EngineResult]] = {label: [] for label, _ in sides}
                limits: list[LimitResult] = []
                limits_x: list[LimitResult] = []
                for i in range(args.repeat):
                    for label, root in sides:
                        d = out / f"{label or 'run'}-{store}-{n}n-{i}"
                        d.mkdir(parents=True, exist_ok=True)
                        engines[label].append(run_engine(root.resolve(), url, args.prefix, n, args.workflows,
                                                         args.lease_ms, d))
                    txns = max(r.events for rs in engines.values() for r in rs[-1:])
                    limits.append(measure(url, args.prefix + "lim_", procs=n, txns=txns))
                    limits_x.append(measure(url, args.prefix + "lim_", procs=n, txns=txns, loops=args.limit_loops))
                backend = open_backend(url, args.prefix, create=False)
                backend.drop_schema()
                backend.close()
                lim = max(limits, key=lambda r: r.rate)
                lim_x = max(limits_x, key=lambda r: r.rate)
                for label, _ in sides:
                    runs = engines[label]
                    eng = max(runs, key=lambda r: r.txn_rate)
                    overlaps = sum(r.overlaps for r in runs)
                    if args.no_check:
                        traces, note = "-", ""
                    else:
                        checked = [check_traces(r.trace_dir) for r in runs]
                        accepted, total = sum(c[0] for c in checked), sum(c[1] for c in checked)
                        note = "; ".join(c[2] for c in checked if c[2])
                        traces = f"{accepted}/{total}"
                        ok = ok and accepted == total
                    ok = ok and overlaps == 0 and all(r.completed == args.workflows for r in runs)
                    print(f"{label:{width}} {store:6} {n:>5} {eng.completed:>5} {eng.wf_rate:>7.1f} {eng.txn_rate:>7.0f} "
                          f"{lim.rate:>11.0f} {lim.rate / eng.txn_rate:>6.2f} {lim_x.rate:>9.0f} "
                          f"{lim_x.rate / eng.txn_rate:>8.2f} {overlaps:>8} {traces:>15}"
                          + (f"  {note}" if note else ""), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
