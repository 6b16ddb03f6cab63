"""Hypothesis explores the interleavings of two nodes sharing one store (`machine.py`).

The same machine runs on the in-memory twin, on a SQLite file with one connection per node, and
on MariaDB. After the run, every example's traces are checked against `tla/TraceEngine.tla` in
one batch (one TLC run for many examples); a rejected trace is reported with its example's
schedule. With the seed's fix off the machine must find the double run, and print it as a
short schedule: that is how we know the invariant can see the bug.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import parse_trace
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind
from impl.engine.model import Gates

from .machine import EngineMachine, machine_for

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "traces" / "schema"
STORES = [("twin", 40), ("sqlite", 15), pytest.param("mysql", 6, marks=pytest.mark.mysql, id="mysql")]
FIX_OFF = Gates(honour_check=False, force_signal_workflow_exec_in_scheduler=False)
# A bug must be found as a schedule of at most this many rules: examples that look for one are
# this long at most, and shrinking only makes them shorter.
MAX_RULES = 12


# What the numbers below are shares of: Hypothesis' default profile (tests/conftest.py).
DEFAULT_EXAMPLES, DEFAULT_STEPS = 100, 50


def nightly() -> bool:
    """Whether the nightly profile is loaded (HYPOTHESIS_PROFILE=nightly)."""
    return settings.default is settings.get_profile("nightly")


def budget(examples: int, **kw: object) -> settings:
    """`examples` (and 30 rules an example) under the default profile, scaled by the loaded
    profile's budget (nightly: ten times the examples, twice the rules). The default run is
    derandomized: the same examples every run, so a verdict never depends on luck; the nightly
    profile explores at random, as does `-m slow`. An explicit `stateful_step_count` (the
    bound a shrunk bug must meet) is kept as given."""
    scale = settings.default.max_examples / DEFAULT_EXAMPLES
    kw.setdefault("derandomize", not nightly())
    kw.setdefault("stateful_step_count", round(30 * settings.default.stateful_step_count / DEFAULT_STEPS))
    return settings(max_examples=max(1, round(examples * scale)), deadline=None, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], **kw)


def machine(request: pytest.FixtureRequest, kind: str, key_prefix: str, gates: Gates = Gates()) -> type[EngineMachine]:
    url = request.getfixturevalue("mysql_url") if kind == "mysql" else None
    return machine_for(kind, gates, url, key_prefix.replace("-", "_") + "_")


def validate(m: type[EngineMachine]) -> dict[str, str]:
    """Every example's traces in one batch; the rejected ones, with their example's schedule."""
    traces: list[Trace] = []
    owner = {}
    for ex in m.examples.all:
        for wf, text in ex.traces.items():
            t = parse_trace(text, f"example{ex.number}/{wf}", SCHEMA)
            assert isinstance(t, Trace), t
            traces.append(t)
            owner[t.source] = ex
    verdicts = check_traces(list(traces), load_systems(ROOT), Tlc.locate())
    return {v.source: f"{v.describe()}\n{owner[v.source].schedule()}" for v in verdicts if v.kind is not TraceKind.ACCEPTED}


@pytest.mark.tlc
@pytest.mark.parametrize(("kind", "examples"), STORES)
def test_every_example_holds_and_its_traces_are_accepted(request, kind: str, examples: int, key_prefix: str) -> None:
    m = machine(request, kind, key_prefix)
    given = budget(examples)
    run_state_machine_as_test(m, settings=given)
    assert len(m.examples.all) >= given.max_examples // 2
    assert sum(len(ex.traces) for ex in m.examples.all) > 0
    assert validate(m) == {}


@pytest.mark.parametrize("kind", ["twin", "sqlite"])
def test_the_machine_finds_the_double_run_without_the_fix(request, kind: str, key_prefix: str) -> None:
    m = machine(request, kind, key_prefix, FIX_OFF)
    with pytest.raises(AssertionError, match="NoOverlappingRuns") as caught:
        run_state_machine_as_test(m, settings=budget(300, stateful_step_count=MAX_RULES, report_multiple_bugs=False))
    # Shrunk to a short schedule of named rules (the drain after them is seeded, so deterministic).
    rules = [line for line in str(caught.value).split("after\n", 1)[1].splitlines()[1:] if not line.lstrip().startswith("d")]
    assert 1 <= len(rules) <= MAX_RULES, str(caught.value)


def test_a_pause_ends_before_a_lease_a_node_holds() -> None:
    # A start's copy waits in its queue most of its backstop lease (to 1189), then its node
    # pauses: resumed at the lease's end, the copy ran on the lapsed lease beside the same node's
    # fetch of the row, an overlap the machine's clock must not make (test_the_engine_machine_at_length
    # found it, on both stores).
    m = machine_for("twin", prefix="lp_pause_")()
    m.start(node="n2", wf="w1", length="half", waits=False)
    m.busy(ms=189)
    m.store_step(node="n2")  # create_instance
    m.store_step(node="n2")  # schedule_in_memory: the copy queued, its lease to 1189
    m.busy(ms=811)
    m.pause(node="n2", ms=189)
    m.teardown()  # the drain: NoOverlappingRuns, EventuallyDone, CallersAnswered
    assert m.sim.paused_until["n2"] == 1188  # the pause was cut to end before the lease


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["twin", "sqlite"])
def test_the_engine_machine_at_length(request, kind: str, key_prefix: str) -> None:
    m = machine(request, kind, key_prefix)
    run_state_machine_as_test(m, settings=budget(2_000, stateful_step_count=round(50 * settings.default.stateful_step_count / DEFAULT_STEPS),
                                                 derandomize=False))
    assert validate(m) == {}
