"""`leaseproof replay MODEL`: a calibration model's TLC counterexample, replayed on the implementation.

Each action of the counterexample becomes the implementation's step (a store transaction of a
node, a take, the clock moving, a crash), run as a deterministic schedule, with the model's
gates. By default it runs both ways: with the model's guard off the property must break on the
implementation too (`reproduced`); with the guard on the schedule must stop at the step the
guard prevents (`blocked`). `unmapped` names an action the implementation has no equivalent of.

Exit status: 0 when every replay gave its expected verdict, 1 when any did not, 2 for a usage
error (unknown model, a model with no counterexample or no adapter, no Java or TLC).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance.cli.check import load_selected
from conformance.cli.options import add_allow_path
from conformance.errors import LeaseproofError
from conformance.output.safe_text import visible


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the `replay` command."""
    p = sub.add_parser("replay", help="replay a calibration model's counterexample on the implementation",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL", help="a model name or file (a calibration of models/engine)")
    p.add_argument("--root", type=Path, default=Path("."), help="the project directory holding models/ and tla/ (default: .)")
    p.add_argument("--from", dest="saved", type=Path, metavar="FILE",
                   help="read the counterexample from a saved `leaseproof check --json` output instead of running TLC")
    way = p.add_mutually_exclusive_group()
    way.add_argument("--guard-on", action="store_true", help="only the replay with the model's guards switched back on")
    way.add_argument("--guard-off", action="store_true", help="only the replay with the model's gates as they are")
    p.add_argument("--store", default="memory://",
                   help="where the engine keeps its rows: memory:// (the twin, default), sqlite (a fresh file, "
                        "one connection per node) or a store URL")
    p.add_argument("--json", action="store_true", help="print the replays as JSON")
    add_allow_path(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run `leaseproof replay`."""
    from conformance.replay import run as replay_run

    models, refused = load_selected(args.root, [args.model], quick=False, allowed=args.allow_path)
    if refused:
        raise LeaseproofError(refused[0].verdict.message or f"{args.model}: the model file was refused")
    if len(models) != 1:
        raise LeaseproofError(f"{args.model!r} names {len(models)} models: replay one at a time")
    model = models[0]
    adapter = replay_run.adapter_for(model)
    verdict = replay_run.saved_verdict(args.saved, model.name) if args.saved else replay_run.live_verdict(model)
    which = "on" if args.guard_on else "off" if args.guard_off else "both"
    outcomes = [replay_run.replay(m, adapter, args.store) for m in replay_run.modes(model, verdict, adapter, which)]
    passed = all(o.passed for o in outcomes)
    if args.json:
        json.dump({"model": model.name, "passed": passed,
                   "replays": [{"mode": o.mode.name, "expected": o.mode.expect, "why": o.mode.why,
                                "result": "PASS" if o.passed else "FAIL", **o.result} for o in outcomes]},
                  sys.stdout, indent=2)
        print()
    else:
        for o in outcomes:
            mark = "PASS" if o.passed else "FAIL"
            print(visible(f"{mark} {model.name} [{o.mode.name}: {o.mode.why}]: {o.result['verdict']} "
                          f"(expected {o.mode.expect}) - {o.result['reason']}"))
            for note in o.result.get("notes", []):
                print(visible(f"  note: {note}"))
            print(visible(o.table, lines=True))
    return 0 if passed else 1
