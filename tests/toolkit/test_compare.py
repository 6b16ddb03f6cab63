"""Comparing a verdict with what a model file expects (pure)."""

from __future__ import annotations

from conformance.check.compare import actual_label, mismatches
from conformance.models.model import Expect
from conformance.output.counterexample import Counterexample, State
from conformance.output.verdict import ErrorKind, Kind, PropertyKind, Stats, Verdict


def violated(prop: str, length: int = 3) -> Verdict:
    states = tuple(State(i, "A", None, {}) for i in range(1, length + 1))
    return Verdict(Kind.VIOLATED, Stats(10, 20, length), property=prop, property_kind=PropertyKind.INVARIANT,
                   counterexample=Counterexample(states))


def ok(distinct: int = 100) -> Verdict:
    return Verdict(Kind.OK, Stats(distinct, 200, 5))


def test_the_expected_verdict_matches() -> None:
    assert mismatches(Expect("ok"), ok()) == ()
    assert mismatches(Expect("violated", "NoOverlappingRuns", length=3), violated("NoOverlappingRuns")) == ()


def test_a_calibration_failing_for_another_reason_is_a_mismatch() -> None:
    found = mismatches(Expect("violated", "NoOverlappingRuns"), violated("RunningIsDriven"))
    assert found == ("expected NoOverlappingRuns to be violated, but RunningIsDriven was",)


def test_a_calibration_that_passes_is_a_mismatch() -> None:
    assert mismatches(Expect("violated", "NoOverlappingRuns"), ok()) == ("expected violated NoOverlappingRuns, got ok",)


def test_pinned_length_and_states() -> None:
    assert mismatches(Expect("violated", "P", length=8), violated("P", 9)) == ("expected a counterexample of 8 states, got 9",)
    assert mismatches(Expect("ok", distinct_states=996207), ok(177590)) == ("expected 996,207 distinct states, got 177,590",)


def test_a_pinned_count_on_a_violated_model_is_compared() -> None:
    # It used to be read only on ok models: a pin on a calibration could never fail.
    assert mismatches(Expect("violated", "P", distinct_states=10), violated("P")) == ()
    assert mismatches(Expect("violated", "P", distinct_states=11), violated("P")) == ("expected 11 distinct states, got 10",)


def test_a_model_with_a_temporal_property_gets_one_worker() -> None:
    import dataclasses
    from pathlib import Path

    from conformance.check.runner import workers_for
    from conformance.models.model import load_model

    project = Path(__file__).parent.parent / "fixtures" / "project"
    temporal = load_model(project / "models" / "temporal.yaml", (project / "tla",))
    assert workers_for(temporal, 4) == 1
    assert workers_for(dataclasses.replace(temporal, workers=2), 4) == 1  # whatever its file says
    safety = dataclasses.replace(temporal, properties=())
    assert workers_for(safety, 4) == 4 and workers_for(dataclasses.replace(safety, workers=2), 4) == 2


def test_errors_and_timeouts_never_match() -> None:
    err = Verdict(Kind.ERROR, Stats(), error_kind=ErrorKind.PARSE, message="Encountered x")
    timeout = Verdict(Kind.TIMEOUT, Stats(seconds=300.0), message="stopped after 300 s")
    for expect in (Expect("ok"), Expect("violated", "P"), Expect("deadlock")):
        assert mismatches(expect, err) and mismatches(expect, timeout)
    assert actual_label(err) == "error (parse error)" and actual_label(timeout) == "timeout"


def test_deadlock_is_its_own_verdict() -> None:
    dead = Verdict(Kind.DEADLOCK, Stats(3, 3, 3), property_kind=PropertyKind.DEADLOCK)
    assert mismatches(Expect("deadlock"), dead) == ()
    assert mismatches(Expect("ok"), dead) == ("expected ok, got deadlock",)
