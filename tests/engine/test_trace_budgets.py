"""No hidden step is free, no compared field is optional (`tla/TraceEngine.tla`, issues 11, 35).

Each case takes a trace the engine recorded (the corpus, or a small simulation made here), and
either keeps it or changes one thing a run could lie about: a fault line (taken out, moved, or
forged), a header's fault count, the finish-attempt limit, one logged field. The TLC cases are
checked in one `check_traces` call; the schema cases need no TLC.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import parse_trace
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind
from impl.engine.export import render_workflow
from impl.engine.sim import Simulation

from .helpers import edited

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "traces" / "corpus" / "engine"
# This checkout's schemas, named explicitly (as a user's own project would name its own).
SCHEMA = ROOT / "traces" / "schema"


def corpus(name: str) -> str:
    return (CORPUS / name).read_text(encoding="utf-8")


def lapse_trace(pause_ms: int) -> str:
    """One node, no fetch loop: a run pauses for `pause_ms` right after it starts. Its lease
    (1000 ms) ends at 1000 and it would renew at 700; paused for 1000 ms, it renews at 1000,
    when its lease has lapsed under it: the trace has the pause window (events 4, 5) and the
    lapse the node saw when it renewed (event 6), before that renewal (event 7)."""
    sim = Simulation(nodes=("n1",), seed=0, fetch_loops=False)
    sim.spawn("n1", sim.nodes["n1"].start("wf", "approval", {"approved": True, "work_ms": 1500}), "start")
    sim.run_until(lambda: any(e.op == "run_start" for e in sim.backend.read_events()))
    sim.pause("n1", pause_ms)
    sim.run_until(lambda: False, max_steps=1_000)
    return render_workflow(sim.backend.read_events(), sim.gates, sim.settings, sim.node_names, "lapse")


def faults(**counts):
    def set_faults(h):
        h.pop("faults", None)
        if counts:
            h["faults"] = counts
    return set_faults


def finish_attempts(n):
    def set_limit(h):
        h["settings"]["max_finish_attempts"] = n
    return set_limit


def ops(*names):
    return lambda e: e["op"] in names


def on_op(op: str, change, nth: int = 1):
    """Apply `change` to the `nth` event whose op is `op`."""
    seen = [0]

    def at(e):
        if e["op"] == op:
            seen[0] += 1
            if seen[0] == nth:
                change(e)
    return at


CRASH = "accepted/node-crash-then-fetch.ndjson"
RERUN = "accepted/remove-finds-a-rerun.ndjson"
DROPPED = "rejected/rerun-dropped.ndjson"
SIGNAL = "accepted/waits-for-signal-then-fetched.ndjson"
LAPSE = lapse_trace(1000)

# name: (trace text, the verdict, the rejected line, what the verdict says)
CASES = {
    "crash line": (corpus(CRASH), TraceKind.ACCEPTED, None, "excused by crash at line 4 (n2)"),
    "crash line taken out": (edited(corpus(CRASH), drop=ops("crash")), TraceKind.REJECTED, 6, "breaks HeldLeaseKept"),
    # A header count buys nothing: stated, it must equal the lines.
    "crash counted, no line": (edited(corpus(CRASH), header=faults(crash=1), drop=ops("crash")),
                               TraceKind.MALFORMED, None, "crash 1 (lines: 0)"),
    "crash counted and its line": (edited(corpus(CRASH), header=faults(crash=1)), TraceKind.ACCEPTED, None, None),
    "lapse: window and line": (LAPSE, TraceKind.ACCEPTED, None, "excused by"),
    "lapse: the pause window alone": (edited(LAPSE, drop=ops("lapse")), TraceKind.ACCEPTED, None,
                                      "excused by pause at line 4 (n1)"),
    "lapse: the lapse line alone": (edited(LAPSE, drop=ops("pause")), TraceKind.ACCEPTED, None,
                                    "excused by lapse at line 4 (n1)"),
    "lapse: no line": (edited(LAPSE, drop=ops("pause", "lapse")), TraceKind.REJECTED, 4, "breaks HeldLeaseKept"),
    # A window that closed before the lease ended excuses nothing after it.
    "lapse: the window ends before the lease": (
        edited(LAPSE, drop=ops("lapse"), event=on_op("pause", lambda e: e.update(now=900), nth=2)),
        TraceKind.REJECTED, 6, "breaks HeldLeaseKept"),
    # A forged lapse line: for another lease than the one that lapsed (it excuses nothing: time
    # cannot reach its own line), or for a step that came in time.
    "lapse line of a lease never held": (
        edited(LAPSE, drop=ops("pause"), event=on_op("lapse", lambda e: e["args"].update(run_after=999))),
        TraceKind.REJECTED, 4, "breaks HeldLeaseKept"),
    "lapse line of a lease never held, in a window": (
        edited(LAPSE, event=on_op("lapse", lambda e: e["args"].update(run_after=500, meant=400))),
        TraceKind.REJECTED, 6, "disagrees on lapse"),
    "lapse line of a step in time": (
        edited(LAPSE, drop=ops("pause"), event=on_op("lapse", lambda e: e["args"].update(meant=1000))),
        TraceKind.REJECTED, 4, "disagrees on lapse"),
    "no lapse, none needed": (lapse_trace(500), TraceKind.ACCEPTED, None, None),
    "rerun dropped, attempts left": (corpus(DROPPED), TraceKind.REJECTED, 11, "breaks HeldLeaseKept"),
    "rerun dropped, attempts spent": (edited(corpus(DROPPED), header=finish_attempts(1)), TraceKind.ACCEPTED, None, None),
    "held run_after off by one": (
        edited(corpus(RERUN), event=on_op("remove", lambda e: e["args"].update(held_run_after=e["args"]["held_run_after"] + 1))),
        TraceKind.REJECTED, 10, "disagrees on held_run_after"),
    "signal's version off by one": (
        edited(corpus(SIGNAL), event=on_op("update_instance", lambda e: e["args"].update(version=e["args"]["version"] + 1))),
        TraceKind.REJECTED, 6, "version (spec 2, trace 3)"),
    "fetched version off by one": (
        edited(corpus(SIGNAL), event=on_op("fetch", lambda e: e["args"].update(task_version=e["args"]["task_version"] + 1))),
        TraceKind.REJECTED, 8, "disagrees on task_version"),
    # What the header may claim is bounded by the system file (traces/systems/engine.yaml).
    "unknown fault kind": (edited(corpus(CRASH), header=faults(crash=1, heartbeat_lag=1)), TraceKind.MALFORMED, None,
                           "header field faults: 'heartbeat_lag'"),
    "no finish attempts": (edited(corpus(DROPPED), header=finish_attempts(0)), TraceKind.MALFORMED, None,
                           "header field settings.max_finish_attempts: 0 is below its bound 1"),
}


@pytest.fixture(scope="module")
def verdicts():
    items = []
    for name, (text, *_rest) in CASES.items():
        t = parse_trace(text, name, SCHEMA)
        assert isinstance(t, Trace), (name, t)
        items.append(t)
    return {v.source: v for v in check_traces(items, load_systems(ROOT), Tlc.locate())}


def test_the_lapse_trace_logs_its_window_and_its_lapse() -> None:
    ops_of = lambda text: [(e["op"], e["outcome"]) for e in map(json.loads, text.splitlines()[1:-1])]  # noqa: E731
    assert ops_of(LAPSE)[3:7] == [("pause", "start"), ("pause", "end"), ("lapse", "observed"), ("renew", "renewed")]
    assert ("lapse", "observed") not in ops_of(lapse_trace(500))
    assert all("faults" not in json.loads(t.splitlines()[0]) for t in (LAPSE, lapse_trace(500)))


@pytest.mark.tlc
@pytest.mark.parametrize("name", list(CASES))
def test_each_hidden_step_is_paid_for(verdicts, name: str) -> None:
    _, kind, line, names = CASES[name]
    v = verdicts[name]
    assert v.kind is kind, v.describe()
    if line is not None:
        assert v.line == line, v.describe()
    if names is not None:
        assert names in v.describe(), v.describe()



# Every arg TraceEngine compares, on an op of a corpus trace that has it: absent = malformed.
REQUIRED = [
    ("accepted/inmem-signal-bumps-a-running-lease.ndjson", "update_instance", "version"),
    ("accepted/waits-for-signal-then-fetched.ndjson", "fetch", "task_version"),
    ("accepted/remove-finds-a-rerun.ndjson", "renew", "task_version"),
    ("accepted/remove-finds-a-rerun.ndjson", "renew", "held_run_after"),
    ("accepted/remove-finds-a-rerun.ndjson", "remove", "task_version"),
    ("accepted/remove-finds-a-rerun.ndjson", "remove", "held_run_after"),
    ("accepted/retried-with-backoff-sqlite.ndjson", "reschedule_retry", "task_version"),
    ("accepted/retried-with-backoff-sqlite.ndjson", "reschedule_retry", "run_after"),
    ("accepted/retried-with-backoff-sqlite.ndjson", "reschedule_retry", "held_run_after"),
    ("accepted/dead-lettered.ndjson", "mark_failed", "task_version"),
    ("accepted/dead-lettered.ndjson", "mark_failed", "held_run_after"),
]


@pytest.mark.parametrize(("file", "op", "field"), REQUIRED)
def test_a_missing_compared_field_is_malformed_naming_it(file: str, op: str, field: str) -> None:
    text = corpus(file)
    assert any(json.loads(ln).get("op") == op and field in json.loads(ln)["args"] for ln in text.splitlines())
    v = parse_trace(edited(text, event=lambda e: e["args"].pop(field) if e["op"] == op else None), file, SCHEMA)
    assert not isinstance(v, Trace) and v.kind is TraceKind.MALFORMED
    assert f"'{field}' is a required property" in v.reason, v.reason
