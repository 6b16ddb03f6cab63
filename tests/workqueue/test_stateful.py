"""Hypothesis explores the interleavings of two consumers sharing one Redis (`machine.py`).

The same machines run on the twin (fakeredis, the same Lua, a virtual clock) and on a real
Redis server (a key prefix per example, its clock warped). After the run, every example's trace
is checked against its trace spec in one batch (one TLC run for many examples); a rejected trace
is reported with its example's schedule. With a guard of the seeds switched off, the machine
must find the bug and print it as a schedule of at most `MAX_RULES` rules: that is how we know
each invariant can see what it is for.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import parse_trace
from conformance.traces.system import load_systems
from conformance.traces.trace import Trace, TraceKind
from impl.workqueue.config import Gates

from .machine import QueueMachine, machine_for, rules_of

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "traces" / "schema"
STORES = ["twin", pytest.param("redis", marks=pytest.mark.redis, id="redis")]
MAX_RULES = 12
# Examples the machine may take to find a guard switched off (derandomized: the same ones each run).
FIND_EXAMPLES = 1_500
# The seeds' guards, each with the property that breaks without it (WorkQueue.tla,
# CommandQueue.tla) and the system whose machine shows it.
GUARDS = [
    ("workqueue", "renew_owner_check", "NoOverlappingInvocations"),
    ("workqueue", "renew_past_max_processing", "NoOverlappingInvocations"),
    ("command", "atomic_put_if_owner", "NoStaleWrite"),
    ("command", "attempt_guard", "OneLiveAttempt|ExternalOnce"),  # two live calls: whichever shows first
    ("command", "submit_always_offers", "EveryCommandDone"),
]


def budget(examples: int, **kw: object) -> settings:
    """`examples`, scaled by the loaded Hypothesis profile's budget over Hypothesis' default of
    100 (nightly: ten times as many, at random; `mutate_quick`: a quarter). The default run is
    derandomized: the same examples every run, so a verdict never depends on luck. A failure
    prints its `@reproduce_failure` blob, to replay it byte for byte."""
    nightly = settings.default is settings.get_profile("nightly")
    kw.setdefault("derandomize", not nightly)
    kw.setdefault("stateful_step_count", 30)
    scale = settings.default.max_examples / settings.get_profile("default").max_examples
    return settings(max_examples=max(1, round(examples * scale)), deadline=None, database=None,
                    report_multiple_bugs=False, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], **kw)


def machine(request: pytest.FixtureRequest, system: str, kind: str, key_prefix: str,
            gates: Gates = Gates()) -> type[QueueMachine]:
    url = request.getfixturevalue("redis_url") if kind == "redis" else None
    return machine_for(system, kind, gates, url, f"{key_prefix}-sm")


def validate(m: type[QueueMachine], last: int | None = None) -> dict[str, str]:
    """Every example's trace (or the `last` few) in one batch; the rejected ones, with their
    example's schedule."""
    traces: list[Trace] = []
    owner = {}
    for ex in m.examples.all[-last:] if last else m.examples.all:
        if not ex.trace:
            continue
        t = parse_trace(ex.trace, f"example{ex.number}", SCHEMA)
        assert isinstance(t, Trace), t
        traces.append(t)
        owner[t.source] = ex
    verdicts = check_traces(traces, load_systems(ROOT), Tlc.locate())
    assert len(verdicts) == len(traces)
    return {v.source: f"{v.describe()}\n{owner[v.source].schedule()}" for v in verdicts if v.kind is not TraceKind.ACCEPTED}


@pytest.mark.tlc
@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("system", ["workqueue", "command"])
def test_every_example_holds_and_its_trace_is_accepted(request, system: str, kind: str, key_prefix: str) -> None:
    m = machine(request, system, kind, key_prefix)
    given = budget(30)
    run_state_machine_as_test(m, settings=given)
    assert len(m.examples.all) >= given.max_examples
    assert sum(len(ex.steps) for ex in m.examples.all) > 3 * given.max_examples
    assert validate(m) == {}
    keep(m, f"{system}-machine-{kind}")


def keep(m: type[QueueMachine], name: str) -> None:
    """With LEASEPROOF_TRACE_DIR set (scripts/record_traces.sh), write every example's trace
    there (`<dir>/<name>/exampleN.ndjson`), for `check_traces.sh` and its coverage guard: the
    machines' stale actors meeting live ones are the tests' share of it."""
    out = os.environ.get("LEASEPROOF_TRACE_DIR")
    if not out:
        return
    where = Path(out) / name
    where.mkdir(parents=True, exist_ok=True)
    for ex in m.examples.all:
        if ex.trace:
            (where / f"example{ex.number}.ndjson").write_text(ex.trace, encoding="utf-8")


def find(m: type[QueueMachine], prop: str, examples: int, *, shrink: bool) -> list[str]:
    """Run `m` until an invariant fails; the failure must name `prop` and its schedule be at
    most MAX_RULES rules (each example is that long at most; shrinking makes it shorter)."""
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
    with pytest.raises(AssertionError, match=prop) as caught:
        run_state_machine_as_test(m, settings=budget(examples, stateful_step_count=MAX_RULES, phases=phases))
    rules = rules_of(str(caught.value))
    assert 1 <= len(rules) <= MAX_RULES, str(caught.value)
    return rules


@pytest.mark.redis
@pytest.mark.parametrize(("system", "gate", "prop"), GUARDS, ids=[g for _, g, _ in GUARDS])
def test_the_machine_finds_each_seed_guard_switched_off_on_redis(request, system: str, gate: str, prop: str,
                                                                 key_prefix: str) -> None:
    """The default run stops at the first failing example (no shrinking: it is at most
    MAX_RULES rules already, and printed as its schedule); `-m slow` shrinks it."""
    find(machine(request, system, "redis", key_prefix, Gates().off(gate)), prop, FIND_EXAMPLES, shrink=False)


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize(("system", "gate", "prop"), GUARDS, ids=[g for _, g, _ in GUARDS])
def test_the_machine_finds_each_seed_guard_switched_off_shrunk(request, system: str, gate: str, prop: str,
                                                               kind: str, key_prefix: str) -> None:
    find(machine(request, system, kind, key_prefix, Gates().off(gate)), prop, FIND_EXAMPLES, shrink=True)


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("system", ["workqueue", "command"])
def test_the_queue_machines_at_length(request, system: str, kind: str, key_prefix: str) -> None:
    m = machine(request, system, kind, key_prefix)
    run_state_machine_as_test(m, settings=budget(1_000, stateful_step_count=60, derandomize=False))
    assert validate(m) == {}


@pytest.mark.tlc
def test_a_planted_regression_is_rejected_by_the_trace_check(request, key_prefix: str) -> None:
    """external_call.lua without its owner check (tests/workqueue/known_bad_commands.py): a stale
    attempt calls the remote. The machine's NoStaleCall stops at the example that shows it
    (Hypothesis then runs that example once more, last), and the trace check rejects that
    example's trace at the call, printed with the example's schedule."""
    from .known_bad_commands import planted

    m = machine(request, "command", "twin", key_prefix)
    with planted("stale_call"):
        find(m, "NoStaleCall", FIND_EXAMPLES, shrink=False)
    rejected = validate(m, last=1)
    assert len(rejected) == 1, rejected
    assert all("external_call" in why and "NoStaleCall" in why and "  #  node" in why for why in rejected.values()), rejected
