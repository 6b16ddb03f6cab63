"""`leaseproof guided --system engine`: drive the implementation along the model's paths.

For every outcome of the system's trace spec (its Outcomes table, less what the system file
declares unreachable), TLC finds a shortest behaviour of the small model `guided/<system>.yaml`
that takes that step with that outcome; the replay runs it on the implementation, writes each
store's trace and validates it against the trace spec. One line per target:

    ok         the code took the model's path and its trace, accepted, shows the outcome
    unreached  no behaviour of the base model takes the step (the model, not the code)
    declared   the base model declares the outcome outside the model (`outside_model`, with
               why: only the trace spec's implementation quirks give it); not run
    FINDING    the model can, the code cannot (the replay was blocked at a step), an action
               with no implementation step (unmapped), a rejected trace, or no trace showing it

Exit status: 0 when no target is a finding and every target not declared outside the model
was reached, 1 otherwise, 2 for a usage error (a system without guided workloads, an unknown
target, no TLC).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from conformance.output.safe_text import visible


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `guided` command."""
    p = sub.add_parser("guided", help="run the model-guided workloads: reach every outcome of the spec on the code",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--system", default="engine", help="the system (default engine)")
    p.add_argument("--root", type=Path, default=Path("."), help="the project holding guided/, tla/ and traces/systems (default: .)")
    p.add_argument("--store", default="memory://",
                   help="where the replays keep their rows: memory:// (the twin, default), sqlite, or a store URL")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="write the reach models and the traces under DIR (DIR/traces/<op>-<outcome>/); default: a temporary directory")
    p.add_argument("--target", action="append", metavar="OP/OUTCOME", help="only this target (repeatable)")
    p.add_argument("--edges", action="store_true",
                   help="also dump the base model's state graph, replay a behaviour for each of its edges projected "
                        "onto what a trace shows (an entity's two consecutive logged steps), and print the edge coverage")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=run)


def _edges(args: argparse.Namespace, out: Path, results: list) -> tuple:  # type: ignore[type-arg]
    """The edge-guided runs (conformance/guided/edge_run.py), with their wall time."""
    import time

    from conformance.check.runner import Tlc
    from conformance.guided.edge_run import run_edges
    from conformance.guided.run import base_model
    from conformance.interleave.validate import trace_validator

    began = time.perf_counter()
    accepted = [p for r in results for p in r.traces if str(p) not in r.rejected]
    cov, runs = run_edges(args.root, args.system, base_model(args.root, args.system), out, store=args.store,
                          tlc=Tlc.locate(), validate=trace_validator(args.root), accepted=accepted)
    return cov, runs, time.perf_counter() - began


def run(args: argparse.Namespace) -> int:
    from conformance.guided.run import OUTSIDE, run_guided

    if args.edges:
        from conformance.guided.projection import PROJECTIONS
        from conformance.guided.run import base_model

        own = (args.root / "guided" / f"{args.system}.yaml").is_file() and "replay" in base_model(args.root, args.system)
        if args.system not in PROJECTIONS and not own:
            print(f"leaseproof guided: --edges: no edge projection for {args.system!r} (leaseproof's: "
                  f"{', '.join(sorted(PROJECTIONS))}; your own system's: project(before, after) in its replay file)",
                  file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="lp-guided-") as tmp:
        out = args.out or Path(tmp)
        results = run_guided(args.root, args.system, out, store=args.store, only=args.target)
        edges = _edges(args, out, results) if args.edges else None
        outside = [r for r in results if r.model == OUTSIDE]
        bad = [r for r in results if r.finding is not None or r.model not in ("reached", OUTSIDE)]
        shown = sum(1 for r in results if r.model == "reached" and r.finding is None)
        summary = (f"{args.system}: {shown} of {len(results) - len(outside)} targets reached by the model and taken by "
                   f"the code on {args.store}, every trace accepted; {len(bad)} not"
                   + (f"; {len(outside)} declared outside the model" if outside else ""))
        if edges is not None:
            bad += [r for r in edges[1] if r.finding is not None]
        if args.json:
            print(json.dumps({"system": args.system, "store": args.store, "summary": summary,
                              "edges": None if edges is None else {
                                  **edges[0].to_json(), "seconds": round(edges[2], 1),
                                  "findings": [{"edge": " -> ".join(r.pair), "finding": r.finding}
                                               for r in edges[1] if r.finding is not None],
                                  "known": [{"edge": " -> ".join(r.pair), "why": r.declared, "difference": r.difference}
                                            for r in edges[1] if r.finding is None and r.declared is not None]},
                              "targets": [
                {"target": r.target.name, "model": r.model, "steps": r.steps, "replay": r.replay, "reason": r.reason,
                 "traces": [str(p) for p in r.traces] if args.out else len(r.traces), "rejected": r.rejected,
                 "shown": r.shown, "finding": r.finding, "seconds": round(r.seconds, 2)} for r in results]}, indent=1))
        else:
            for r in results:
                print(visible(r.line()))
            print(summary)
            if edges is not None:
                cov, runs, seconds = edges
                for e in runs:
                    if e.finding is not None or e.declared is not None:
                        print(visible(e.line()))
                print(visible(f"{cov.summary()}; {len(runs)} edge runs in {seconds:.0f} s, "
                              f"{sum(1 for e in runs if e.finding is not None)} finding(s), "
                              f"{sum(1 for e in runs if e.finding is None and e.declared is not None)} known"))
            if args.out:
                print(f"traces: {args.out / 'traces'}", file=sys.stderr)
    return 1 if bad else 0
