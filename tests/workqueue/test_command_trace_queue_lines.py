"""TraceCommandQueue checks what its abstract queue cannot tell: a command's deliveries are
deliveries of stream entries (a reclaim is the next delivery of an entry delivered before), and
an attempt's heartbeat stops at its first lost renewal. A designed run with a reclaim committed
twice, or a lost renewal repeated, is rejected at the copy, naming the field. And the bounds
that number entries, commands and deliveries grow to fit the trace (TLC)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import read_trace_file
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind
from impl.workqueue.sim import SimConfig, seeded

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.tlc


def command_run(out: Path, seed: int) -> Trace:
    """The command view of one seeded simulation with crashes, faults, lags and a close."""
    sim = seeded(SimConfig(system="command", crashes=1, faults=2, lags=2, closes=1), seed)
    sim.run()
    trace = read_trace_file(sim.write_trace(out / f"command-{seed}.ndjson", run=f"command {seed}"))
    assert isinstance(trace, Trace), trace
    return trace


def twice(trace: Trace, i: int, name: str) -> Trace:
    """`trace` with its event at index i committed twice."""
    events: list[dict[str, Any]] = [*trace.events[: i + 1], trace.events[i], *trace.events[i + 1 :]]
    return Trace(f"{trace.source}#{name}", trace.header, tuple({**e, "seq": n} for n, e in enumerate(events, start=1)))


def first(trace: Trace, op: str, outcome: str) -> int | None:
    return next((i for i, e in enumerate(trace.events) if e["op"] == op and e["outcome"] == outcome), None)


def test_a_repeated_reclaim_or_lost_renewal_is_rejected(tmp_path: Path) -> None:
    runs = [command_run(tmp_path, seed) for seed in range(4)]
    reclaimed = next(t for t in runs if first(t, "reclaim", "claimed") is not None)
    lost = next(t for t in runs if first(t, "guard_renew", "lost") is not None)
    r, g = first(reclaimed, "reclaim", "claimed"), first(lost, "guard_renew", "lost")
    assert r is not None and g is not None
    mutants = [twice(reclaimed, r, "reclaim-twice"), twice(lost, g, "lost-renewal-twice")]
    verdicts = check_traces([*runs, *mutants], load_systems(ROOT), Tlc.locate())
    assert [v.kind for v in verdicts[: len(runs)]] == [TraceKind.ACCEPTED] * len(runs), [v.describe() for v in verdicts]
    v_reclaim, v_renew = verdicts[len(runs):]
    assert v_reclaim.kind is TraceKind.REJECTED and v_reclaim.line == r + 2, v_reclaim.describe()
    assert "entry_deliveries" in {d.field for d in v_reclaim.diffs}, v_reclaim.describe()
    assert v_renew.kind is TraceKind.REJECTED and v_renew.line == g + 2, v_renew.describe()
    assert {d.field for d in v_renew.diffs} == {"renewed_after_lost"}, v_renew.describe()


def test_numbered_bounds_fit_the_trace(tmp_path: Path) -> None:
    # With the smallest bounds (Entries, Commands, Workers from 1, doubled until the trace
    # fits), the designed runs are still accepted: no trace is rejected for its size.
    systems = load_systems(ROOT)
    small = {}
    for name, s in systems.items():
        constants = {k: ({**how, "at_least": 1} if "numbered" in how else how) for k, how in s.constants.items()}
        small[name] = replace(s, constants=constants)
    sim = seeded(SimConfig(system="command", crashes=1, faults=2, lags=2, closes=1), 0)
    sim.run()
    paths = [sim.write_trace(tmp_path / "c.ndjson", run="c"), sim.write_trace(tmp_path / "q.ndjson", run="q", view="workqueue")]
    traces = [read_trace_file(p) for p in paths]
    assert all(isinstance(t, Trace) for t in traces)
    verdicts = check_traces(traces, small, Tlc.locate())  # type: ignore[arg-type]
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED] * 2, [v.describe() for v in verdicts]
