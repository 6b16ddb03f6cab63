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


def test_each_trace_of_a_batch_has_its_own_room(tmp_path: Path) -> None:
    # Room given per trace (Entries, Workers, Commands: numbered and per_trace): a small and a
    # large run of each view share one TLC run without an instance, each with its own 1..N (the
    # large one fits only its own: given the small one's, it is rejected at its first entity
    # past the room, as a trace past the room of a batch's first trace would be).
    from conformance.traces.batch import group, render_batch
    from conformance.traces.system import constants_for

    systems = load_systems(ROOT)
    traces: dict[str, list[Trace]] = {"command": [], "workqueue": []}
    for messages in (1, 12):
        sim = seeded(SimConfig(system="command", messages=messages), 0)
        sim.run()
        for view in traces:
            t = read_trace_file(sim.write_trace(tmp_path / f"{view}-{messages}.ndjson", run=f"{view} {messages}", view=view))
            assert isinstance(t, Trace), t
            traces[view].append(t)
    for view, (small, large) in traces.items():
        system = systems[view]
        room = {n: (len(constants_for(system, small)[n]), len(constants_for(system, large)[n]))
                for n, how in system.constants.items() if "numbered" in how}
        assert room and all(s < g for s, g in room.values()), room  # the large run needs more of each
        (batch,) = group([small, large], system, batch_size=10)
        text = render_batch(batch)["TraceRun.tla"]
        assert "INSTANCE" not in text
        for n in room:
            assert f"lp_{n} == lp_{n}_each[t]" in text
    verdicts = check_traces([t for ts in traces.values() for t in ts], systems, Tlc.locate())
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED] * 4, [v.describe() for v in verdicts]
    # The large runs with the small runs' room (at_least pinned there, no doubling past it):
    # rejected, naming the room, so the acceptance above needed each trace's own.
    pinned = {}
    for view, (small, _) in traces.items():
        s = systems[view]
        pinned[view] = replace(s, constants={k: ({"value": constants_for(s, small)[k]} if "numbered" in how else how)
                                             for k, how in s.constants.items()})
    verdicts = check_traces([traces["command"][1], traces["workqueue"][1]], pinned, Tlc.locate())
    for v, field in zip(verdicts, ("in_model", "entries_in_model")):
        assert v.kind is TraceKind.REJECTED and any(field in d.field for d in v.diffs), v.describe()


def lost_before(trace: Trace, i: int) -> Trace:
    """`trace` with a guard_renew of line i's attempt, lost, just before line i (its heartbeat
    found the guard gone before the handler's refused write), at line i's time and state. A
    heartbeat runs only once its lag is over: where the node's lag window is still open there,
    it closes just before the renewal (its end line moves there)."""
    e = trace.events[i]
    lost = {"seq": 0, "node": e["node"], "op": "guard_renew", "now": e["now"], "cmd": e["cmd"], "outcome": "lost",
            "args": {"attempt": e["args"]["attempt"], "ttl_ms": trace.header["settings"]["guard_ttl_ms"]}, "state": e["state"]}
    lag = [x for x in trace.events[:i] if x["node"] == e["node"] and x["op"] == "heartbeat_lag"]
    before, after = list(trace.events[:i]), list(trace.events[i:])
    if lag and lag[-1]["outcome"] == "start":
        end = next(j for j, x in enumerate(after) if x["node"] == e["node"] and x["op"] == "heartbeat_lag")
        before.append({**after.pop(end), "now": e["now"]})
    events = [*before, lost, *after]
    return Trace(f"{trace.source}#lost-first", trace.header, tuple({**x, "seq": n} for n, x in enumerate(events, start=1)))


def test_a_lost_renewal_runs_on_only_where_its_attempt_logs_again(tmp_path: Path) -> None:
    # The handler learns of a lost renewal at its next guarded step (LostRenewRunsOn): a lost
    # renewal followed by the attempt's refused write is accepted as that. An attempt that logs
    # nothing after its lost renewal is the attempt ended, one path instead of two to the end
    # (the search stays near one state per line); with the look-ahead always false the refused
    # write is rejected, so the acceptance above needs the stale attempt.
    sim = seeded(SimConfig(system="command", crashes=1, faults=2, lags=2, closes=1), 10)
    sim.run()
    run = read_trace_file(sim.write_trace(tmp_path / "c.ndjson", run="c"))
    assert isinstance(run, Trace), run
    refused = next(i for i, e in enumerate(run.events)
                   if e["op"] == "put_if_owner" and e["outcome"] == "refused" and e["state"]["guard"]["owner"] is None)
    crafted = lost_before(run, refused)
    quiet = seeded(SimConfig(system="command", crashes=1, faults=2, lags=2, closes=1), 0)
    quiet.run()
    ended = read_trace_file(quiet.write_trace(tmp_path / "q.ndjson", run="q"))
    assert isinstance(ended, Trace), ended
    lost = [i for i, e in enumerate(ended.events) if e["op"] == "guard_renew" and e["outcome"] == "lost"]
    assert lost and not any(e.get("args", {}).get("attempt") == ended.events[lost[0]]["args"]["attempt"]
                            for e in ended.events[lost[0] + 1:])
    states: dict[str, int] = {}
    verdicts = check_traces([crafted, ended], load_systems(ROOT), Tlc.locate(), batch_size=1,
                            on_run=lambda b, v: states.update({b.traces[0].source: v.stats.distinct_states or 0}))
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED] * 2, [v.describe() for v in verdicts]
    assert states[ended.source] <= 2 * (len(ended.events) + 1), states
