#!/usr/bin/env python3
"""Benchmark the reference engine: workflows per second for 1 and 2 node processes.

Each workflow is an `approval`: a start (two transactions), a signal from a random node, and
the runs it causes (usually two: one that waits, one that completes), about ten store
transactions in all, each recording its trace event. All workflows start at once; the rate is
the number completed over the time from the first event to the last (read from the trace, so
process start-up is not counted).

    python scripts/bench_engine.py --workflows 300
    python scripts/bench_engine.py --stores sqlite --nodes 1 2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from impl.engine.run import RunConfig, run_workload
from impl.engine.urls import open_backend

MYSQL_URL = "mysql://root@127.0.0.1:3306/test"


def bench(store_url: str, nodes: int, workflows: int, lease_ms: int) -> tuple[float, int, int, int]:
    """Run once; (workflows/s, completed, overlapping runs, events)."""
    cfg = RunConfig(
        store_url=store_url,
        nodes=nodes,
        workflows=workflows,
        seed=nodes,
        lease_ms=lease_ms,
        spread_ms=0,
        long_fraction=0.0,
        prefix="lpbench_",
        deadline_s=600,
    )
    summary = run_workload(cfg, None)
    backend = open_backend(store_url, "lpbench_", create=False)
    try:
        events = backend.read_events()
        span_s = (max(e.now for e in events) - min(e.now for e in events)) / 1000
        backend.drop_schema()
    finally:
        backend.close()
    return summary.completed / span_s, summary.completed, summary.figures.overlapping_runs, len(events)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark matrix and print one line per cell."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workflows", type=int, default=300)
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2])
    p.add_argument("--stores", nargs="+", default=["sqlite", "mysql"], choices=["sqlite", "mysql"])
    p.add_argument("--mysql-url", default=MYSQL_URL)
    p.add_argument("--lease-ms", type=int, default=3_000)
    args = p.parse_args(argv)
    print(f"{'store':8} {'nodes':>5} {'workflows':>9} {'wf/s':>8} {'events':>7} {'overlaps':>8}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for store in args.stores:
            for n in args.nodes:
                url = f"sqlite:///{Path(tmp) / f'bench{n}.db'}" if store == "sqlite" else args.mysql_url
                rate, done, overlaps, events = bench(url, n, args.workflows, args.lease_ms)
                ok = ok and done == args.workflows and overlaps == 0
                print(f"{store:8} {n:>5} {done:>9} {rate:>8.1f} {events:>7} {overlaps:>8}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
