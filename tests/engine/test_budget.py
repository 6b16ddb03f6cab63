"""The engine's stateful budgets follow the Hypothesis profile (tests/conftest.py): the default
run's are as written, the nightly profile's larger and at random."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from .test_stateful import MAX_RULES, budget, nightly


@pytest.fixture
def profile() -> Iterator[None]:
    before = settings._current_profile  # restored after: a loaded profile is global
    try:
        yield
    finally:
        settings.load_profile(before or "default")


def test_the_default_profile_keeps_the_written_budgets(profile: None) -> None:
    settings.load_profile("default")
    assert not nightly()
    b = budget(40)
    assert (b.max_examples, b.stateful_step_count, b.derandomize) == (40, 30, True)
    bug = budget(300, stateful_step_count=MAX_RULES)
    assert (bug.max_examples, bug.stateful_step_count) == (300, MAX_RULES)


def test_the_nightly_profile_scales_them_and_explores_at_random(profile: None) -> None:
    settings.load_profile("nightly")
    assert nightly()
    b = budget(40)
    assert (b.max_examples, b.stateful_step_count, b.derandomize) == (400, 60, False)
    # The bound a shrunk bug must meet stays as written.
    assert budget(300, stateful_step_count=MAX_RULES).stateful_step_count == MAX_RULES


def test_the_environment_selects_the_profile() -> None:
    import os

    assert nightly() is (os.environ.get("HYPOTHESIS_PROFILE") == "nightly")
