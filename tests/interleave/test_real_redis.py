"""The queue's real threads under the controlled scheduler on a real Redis server (not
fakeredis): the very scripts on the server, its clock moved along with the virtual one
(`RedisTimeWarp`), every duration scaled so that the real milliseconds a step takes decide
nothing (`interleavings.on_real_redis`). Skipped without a server on a user's machine, failed
so in CI; the nightly profile (HYPOTHESIS_PROFILE=nightly) explores ten times as many schedules.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from conformance.interleave.explore import explore
from impl.workqueue import interleavings as queue
from impl.workqueue.config import Gates
from tests.interleave.test_runtimes import SCENARIOS

pytestmark = [pytest.mark.redis, pytest.mark.tlc]
QUEUE = sorted(name for name in SCENARIOS if name.startswith("queue:"))


def _runs(default: int) -> int:
    return default * 10 if settings.default is settings.get_profile("nightly") else default


@pytest.fixture(scope="module")
def validate() -> Any:
    from conformance.interleave.validate import trace_validator
    return trace_validator(Path(__file__).resolve().parents[2])


@pytest.mark.parametrize("name", QUEUE)
def test_every_explored_schedule_on_real_redis_passes_and_its_traces_are_accepted(name: str, redis_url: str,
                                                                                 validate: Any, tmp_path: Path) -> None:
    sc = queue.on_real_redis(SCENARIOS[name], redis_url)
    x = explore(sc, name=name, strategy="random", runs=_runs(2), seed=3, trace_dir=tmp_path, validate=validate)
    assert x.ok, [o.failure.describe() for o in x.failed]  # type: ignore[union-attr]
    assert all(o.traces for o in x.outcomes)


@pytest.mark.parametrize("gate, scenario, expect", [
    ("heartbeat", queue.long_handlers, "an entry invoked twice at once"),
    ("permit_bound", queue.pool_at_bound, "handlers with 2 permits"),
    ("atomic_put_if_owner", queue.commands_stale_write, "changed status after the queue drained"),
    ("renew_owner_check", queue.stale_owner, "breaks NoOverlappingInvocations"),
])
def test_a_queue_guard_switched_off_is_found_on_real_redis(gate: str, scenario: Any, expect: str, redis_url: str,
                                                           validate: Any, tmp_path: Path) -> None:
    sc = queue.on_real_redis(dataclasses.replace(scenario, gates=Gates(**{gate: False})), redis_url)
    x = explore(sc, strategy="random", runs=_runs(10), trace_dir=tmp_path, validate=validate)
    assert x.failed, f"{gate} off: not found in {len(x.outcomes)} schedules on real Redis"
    assert expect in x.failed[0].failure.describe()  # type: ignore[union-attr]


def test_the_scaled_scenario_keeps_its_shape(redis_url: str) -> None:
    # Every time of the scenario is scaled with its settings: a cancel 50 ms after the
    # submissions stays inside the attempt it was meant to meet.
    sc = queue.on_real_redis(queue.commands, redis_url)
    k = queue.REAL_SERVER_SCALE
    assert sc.settings.visibility_timeout_ms == queue.commands.settings.visibility_timeout_ms * k
    assert sc.cancel == (queue.commands.cancel[0], queue.commands.cancel[1] * k)
    assert sc.redis_url == redis_url and sc.name == "commands_redis"


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["random", "pct"])
@pytest.mark.parametrize("name", QUEUE)
def test_a_long_exploration_on_real_redis(name: str, strategy: str, redis_url: str, validate: Any,
                                          tmp_path: Path) -> None:
    # `-m slow` (and the nightly profile's ten times as many) schedules of each queue scenario.
    sc = queue.on_real_redis(SCENARIOS[name], redis_url)
    x = explore(sc, name=name, strategy=strategy, runs=_runs(20), seed=7, trace_dir=tmp_path, validate=validate)
    assert x.ok, [o.failure.describe() for o in x.failed]  # type: ignore[union-attr]
