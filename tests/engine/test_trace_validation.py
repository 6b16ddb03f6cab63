"""The engine's traces against its trace spec (`tla/TraceEngine.tla`), with TLC.

Every trace below is checked in one call of `check_traces` (a TLC run per group of headers, the
groups side by side), so the module pays TLC's start-up a few times, not once per trace:

- the known traces of `traces/corpus/engine/` keep their verdicts;
- seeded simulations of the designed engine (waiting runs, pauses, crashes, the in-memory
  signal path, a stale finisher refused while another node holds the lease) and one on
  SQLite are accepted;
- with the seed's fix off, a simulation that runs a workflow twice at once is rejected exactly
  at the `run_start` of the second run, which the test finds in the trace itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.coverage import coverage
from conformance.traces.read import parse_trace, read_trace_file
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind, TraceVerdict
from impl.engine.model import Gates
from impl.engine.simulate import Faults, simulate
from impl.engine.urls import open_backend


ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "traces" / "corpus" / "engine"
SCHEMA = ROOT / "traces" / "schema"  # this checkout's (see tests/engine/test_trace_budgets.py)
FIX_OFF = Gates(honour_check=False, force_signal_workflow_exec_in_scheduler=False)


def second_run_start(text: str) -> int | None:
    """The `seq` of the first `run_start` while another run of the workflow is in progress."""
    open_runs = 0
    for line in text.splitlines():
        e = json.loads(line)
        if e["kind"] != "event":
            continue
        if e["op"] == "run_start":
            if open_runs:
                return int(e["seq"])
            open_runs += 1
        elif e["op"] == "run_end":
            open_runs -= 1
    return None


def traces_of(run, label: str) -> list[Trace]:
    out = []
    for wf, text in run.traces.items():
        t = parse_trace(text, f"{label}/{wf}", SCHEMA)
        assert isinstance(t, Trace), t
        out.append(t)
    return out


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Every trace of this module, checked in one call; verdicts by source, and what to expect."""
    corpus = {str(p): kind for kind in (TraceKind.ACCEPTED, TraceKind.REJECTED)
              for p in sorted((CORPUS / kind.value).glob("*.ndjson"))}
    good: list[Trace] = []
    for seed in range(3):  # waiting runs, pauses; one seed with crashes
        faults = Faults(crash=0.0005, pause=0.01) if seed == 2 else Faults(pause=0.01)
        good += traces_of(simulate(seed=seed, workflows=6, faults=faults, max_steps=20_000), f"sim{seed}")
    good += traces_of(simulate(seed=3, workflows=6, gates=Gates(force_signal_workflow_exec_in_scheduler=False),
                               faults=Faults(pause=0.01)), "inmem-signal")
    # A stale finisher (a thread stalled past its lease before its remove) meets another
    # node's live lease: seed 6 has one (test_sim.py shows that stalls reach it).
    good += traces_of(simulate(seed=6, workflows=6, stale_fraction=1.0, faults=Faults(pause=0.01)), "stale")
    db = tmp_path_factory.mktemp("sqlite") / "engine.db"
    good += traces_of(simulate(seed=4, workflows=4, backend=open_backend(f"sqlite:///{db}")), "sqlite")
    bug = simulate(seed=22, workflows=8, gates=FIX_OFF, waiting_fraction=0.0, faults=Faults(pause=0.01))
    assert bug.sim.monitor.overlaps > 0, "the fix-off simulation must run some workflow twice at once"
    double = {f"fix-off/{wf}": second_run_start(text) for wf, text in bug.traces.items()}
    bad = [t for t in traces_of(bug, "fix-off") if double[t.source] is not None]
    items: list[Trace | TraceVerdict] = [read_trace_file(Path(p), SCHEMA) for p in corpus] + good + bad
    verdicts = check_traces(items, load_systems(ROOT), Tlc.locate())
    return {"verdicts": {v.source: v for v in verdicts}, "corpus": corpus, "good": good, "bad": bad,
            "double": double}


pytestmark = pytest.mark.tlc


def test_the_corpus_keeps_its_verdicts(checked) -> None:
    assert len(checked["corpus"]) >= 8
    wrong = {src: v.describe() for src, v in checked["verdicts"].items()
             if src in checked["corpus"] and v.kind is not checked["corpus"][src]}
    assert wrong == {}


def test_simulated_and_sqlite_traces_of_the_designed_engine_are_accepted(checked) -> None:
    good = checked["good"]
    assert len(good) >= 20
    not_accepted = {t.source: checked["verdicts"][t.source].describe() for t in good
                    if checked["verdicts"][t.source].kind is not TraceKind.ACCEPTED}
    assert not_accepted == {}
    # Not vacuous: the accepted traces took the interesting paths.
    ops = {(e["op"], e["outcome"]) for t in good for e in t.events}
    assert {("schedule", "bumped"), ("schedule_in_memory", "bumped"), ("renew", "renewed")} <= ops
    assert any(e["op"] == "run_end" and e["args"]["result"] == "waiting" for t in good for e in t.events)
    stale = [t for t in good if t.source.startswith("stale/")]
    assert coverage(load_systems(ROOT)["engine"], stale).required["stale finish refused while another node holds the lease"] >= 1


def test_with_the_fix_off_a_double_run_is_rejected_at_the_second_run_start(checked) -> None:
    bad = checked["bad"]
    assert bad
    for t in bad:
        v = checked["verdicts"][t.source]
        assert v.kind is TraceKind.REJECTED, (t.source, v.describe())
        assert (v.line, v.op) == (checked["double"][t.source], "run_start"), (t.source, v.describe())
        assert "breaks NoOverlappingRuns" in v.describe(), v.describe()


def test_a_signal_reads_only_at_the_version_its_update_logs() -> None:
    # A signal's read is hidden (only its update_instance is logged, with the version it read:
    # args.version). TraceEngine takes the read only at that version (ReadsAsLogged): one at
    # another could only disagree at the update. The signalled workflows are accepted, and the
    # search stays small: 245 states for these 155 lines, against 293 where the read may come
    # at every line before its update (each such line a state more until the update).
    traces = traces_of(simulate(seed=1, workflows=12, waiting_fraction=1.0), "signalled")
    signalled = [t for t in traces if any(e["op"] == "update_instance" for e in t.events)]
    assert len(signalled) >= 6
    states: list[int] = []
    verdicts = check_traces(signalled, load_systems(ROOT), Tlc.locate(), on_run=lambda b, v: states.append(v.stats.distinct_states or 0))
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED] * len(signalled), [v.describe() for v in verdicts]
    lines = sum(len(t.events) + 1 for t in signalled)
    assert sum(states) <= 1.7 * lines, (sum(states), lines)
