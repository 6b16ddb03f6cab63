"""scripts/bench_machine.py: the seeded runs put the very same schedules on every store."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType


def test_seeded_runs_do_the_same_store_steps_on_the_twin_and_on_sqlite(script: Callable[[str], ModuleType]) -> None:
    bench = script("bench_machine")
    twin, sqlite = (bench.run_seeded(kind, 8, 20, bench.MYSQL_URL) for kind in ("twin", "sqlite"))
    assert twin.store_steps > 20 and twin.steps_per_s > 0
    assert (twin.examples, twin.rules, twin.store_steps) == (sqlite.examples, sqlite.rules, sqlite.store_steps)
