"""The stateful machine against broken engines (`impl/engine/mutants.py`): each must be found.

A mutant is found when the machine fails one of its invariants (shrunk to a short schedule of
named rules, printed) or, failing none, when one of its examples' traces is rejected by
`tla/TraceEngine.tla`. A mutant nobody finds means the machine cannot see that break.
The default run finds the seeds' guards (the honour check and the bump on SQLite, the renewal's
version check on the twin); the rest of both matrices runs with `-m slow`.
"""

from __future__ import annotations

import pytest
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from impl.engine.mutants import MUTANTS, Mutant

from .machine import machine_for
from .test_stateful import MAX_RULES, budget, validate


def rules_of(text: str) -> list[str]:
    """The rule lines of a printed schedule (not its header, not the seeded drain's steps)."""
    return [line for line in text.split("after\n", 1)[-1].splitlines()[1:] if not line.lstrip().startswith("d")]


def found(kind: str, mu: Mutant, key_prefix: str) -> str:
    """How the machine found `mu`, with the schedule; fails the test if it did not."""
    m = machine_for(kind, mu.gates, None, key_prefix.replace("-", "_") + "_", mu.decisions() if mu.overrides else None)
    try:
        # One failure reported, not a group: a mutant may break two invariants, and Hypothesis
        # would then raise an ExceptionGroup of both (it did, in a CI trial) instead of the first.
        run_state_machine_as_test(m, settings=budget(150, stateful_step_count=MAX_RULES, report_multiple_bugs=False))
    except (AssertionError, Flaky) as e:
        text = str(e)
        assert "after\n" in text, text
        assert 1 <= len(rules_of(text)) <= MAX_RULES, text
        return text
    rejected = validate(m)
    assert rejected, f"{mu.name} ({mu.breaks}): no invariant failed and every trace was accepted"
    return next(iter(rejected.values()))


# The seeds' guards run by default: two on SQLite, the renewal's version check on the twin (the
# decision is the same code on both stores; on SQLite the machine needs all its 150 examples and
# the trace check to find it: 250 s loaded, where the twin took 22 s loaded and 65 s in CI).
SQLITE_DEFAULT = {"copy_on_honoured_lease", "no_bump"}
TWIN_DEFAULT = {"renew_ignores_version"}
CASES = [pytest.param("sqlite", mu, id=f"sqlite-{mu.name}", marks=() if mu.name in SQLITE_DEFAULT else pytest.mark.slow)
         for mu in MUTANTS]
CASES += [pytest.param("twin", mu, id=f"twin-{mu.name}", marks=() if mu.name in TWIN_DEFAULT else pytest.mark.slow)
          for mu in MUTANTS]


@pytest.mark.tlc
@pytest.mark.parametrize(("kind", "mu"), CASES)
def test_the_machine_finds_the_mutant(kind: str, mu: Mutant, key_prefix: str) -> None:
    print(f"{mu.name} on {kind}:\n{found(kind, mu, key_prefix)}")
