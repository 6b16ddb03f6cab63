"""scripts/bench_machine.py: the seeded runs put the very same schedules on every store."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_seeded_runs_do_the_same_store_steps_on_the_twin_and_on_sqlite() -> None:
    spec = importlib.util.spec_from_file_location("bench_machine", ROOT / "scripts" / "bench_machine.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_machine"] = bench  # its dataclass looks its module up there
    spec.loader.exec_module(bench)
    twin, sqlite = (bench.run_seeded(kind, 8, 20, bench.MYSQL_URL) for kind in ("twin", "sqlite"))
    assert twin.store_steps > 20 and twin.steps_per_s > 0
    assert (twin.examples, twin.rules, twin.store_steps) == (sqlite.examples, sqlite.rules, sqlite.store_steps)
