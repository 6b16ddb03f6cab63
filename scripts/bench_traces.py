#!/usr/bin/env python3
"""Benchmark: check one set of traces one trace per TLC run, then batched; verdicts must agree.

    python3 scripts/bench_traces.py                     # 300 synthetic Counter traces, a third corrupted
    python3 scripts/bench_traces.py --root . out/traces # recorded traces of the real systems

Prints the wall time of both ways and the speedup. Exits 1 if any verdict differs.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import parse_trace, read_trace_file, trace_files
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind

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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", type=Path, help="trace files or directories (default: synthetic)")
    p.add_argument("--root", type=Path, default=None, help="project with traces/systems (default: the fixture project)")
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--length", type=int, default=20)
    p.add_argument("--jobs", type=int, default=2, help="TLC runs side by side, both ways (default 2)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    root = args.root or FIXTURE
    systems = load_systems(root)
    items = [read_trace_file(f) for f in trace_files(args.paths)] if args.paths else synthetic(args.count, args.length, args.seed)
    tlc = Tlc.locate()
    print(f"{len(items)} traces, {args.jobs} TLC runs side by side")

    start = time.monotonic()
    batched = check_traces(items, systems, tlc, jobs=args.jobs)
    t_batched = time.monotonic() - start
    print(f"batched:          {t_batched:8.1f} s")

    start = time.monotonic()
    alone = check_traces(items, systems, tlc, batch_size=1, jobs=args.jobs)
    t_alone = time.monotonic() - start
    print(f"one trace per run:{t_alone:8.1f} s ({t_alone / max(1, len(items)):.2f} s a trace)")

    kinds = {k: sum(v.kind is k for v in batched) for k in TraceKind}
    print("verdicts: " + ", ".join(f"{n} {k.value}" for k, n in kinds.items() if n))
    if batched != alone:
        differ = [(a.source, a.describe(), b.describe()) for a, b in zip(batched, alone) if a != b]
        print(f"VERDICTS DIFFER for {len(differ)} traces, e.g. {differ[:3]}")
        return 1
    print(f"verdicts identical; speedup {t_alone / t_batched:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
