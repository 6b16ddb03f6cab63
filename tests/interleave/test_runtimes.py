"""The real threaded runtimes under the controlled scheduler: the engine's node runtime
(`impl/engine/interleavings.py`) and the queue's consumer (`impl/workqueue/interleavings.py`).

Every explored schedule of the designed code passes its invariants and its traces are accepted
by the trace specs; the same seed writes the same trace; and bugs planted in the runtimes'
threads (a heartbeat loop that stops after its first beat, a pool that keeps counting a
finished task as running, a default heartbeat period no simulation uses, a woken run not
put first) and the seed's guards off are found within the default budget, each replaying from
its saved schedule to the same failure.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from conformance.interleave.explore import explore, load_schedule, run_once, save_schedule
from conformance.interleave.strategies import RandomWalk
from impl.engine import interleavings as engine
from impl.engine import threads
from impl.workqueue import config, consumer, interleavings as queue
from impl.workqueue.config import Gates as QueueGates
from tests.interleave.planting import planted

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 30  # the default budget of random schedules for a planted bug
SCENARIOS = {
    "engine:start_signal_fetch": engine.start_signal_fetch,
    "engine:start_signal_fetch_sqlite": engine.start_signal_fetch_sqlite,
    "engine:start_signal_fetch_defaults": engine.start_signal_fetch_defaults,
    "engine:renewals_under_signals": engine.renewals_under_signals,
    "engine:two_nodes": engine.two_nodes,
    "engine:busy_sqlite_nodes": engine.busy_sqlite_nodes,
    "engine:signals_in_memory": engine.signals_in_memory,
    "engine:start_signal_fetch_in_memory": engine.start_signal_fetch_in_memory,
    "engine:stranded_start": engine.stranded_start,
    "engine:stalled_start": engine.stalled_start,
    "engine:failing": engine.failing,
    "engine:failing_stale": engine.failing_stale,
    "engine:stale_remove": engine.stale_remove,
    "engine:stale_remove_sqlite": engine.stale_remove_sqlite,
    "engine:signals_while_due": engine.signals_while_due,
    "queue:long_handlers": queue.long_handlers,
    "queue:self_reclaim": queue.self_reclaim,
    "queue:pool_at_bound": queue.pool_at_bound,
    "queue:stale_owner": queue.stale_owner,
    "queue:not_done_first": queue.not_done_first,
    "queue:close_while_active": queue.close_while_active,
    "queue:past_max_processing": queue.past_max_processing,
    "queue:executor_rejects": queue.executor_rejects,
    "queue:ack_fails": queue.ack_fails,
    "queue:commands": queue.commands,
    "queue:commands_stale": queue.commands_stale,
    "queue:commands_guard_held": queue.commands_guard_held,
    "queue:commands_guard_taken_over": queue.commands_guard_taken_over,
    "queue:commands_cancelled_queued": queue.commands_cancelled_queued,
    "queue:commands_stale_write": queue.commands_stale_write,
    "queue:commands_stale_call": queue.commands_stale_call,
    "queue:commands_call_throws": queue.commands_call_throws,
    "queue:commands_resubmitted": queue.commands_resubmitted,
    "queue:commands_resubmitted_after": queue.commands_resubmitted_after,
    "queue:commands_offer_lost": queue.commands_offer_lost,
    "queue:steady_intake": queue.steady_intake,
}


# Scenarios cheap enough to explore longer by default (a run takes ~0.1 s): the race of an
# in-memory start and signal on one node shows in 40% of random schedules, 0 of 100 PCT ones.
RUNS = {"engine:start_signal_fetch_in_memory": 8}


@pytest.fixture(scope="module")
def validate() -> Any:
    from conformance.interleave.validate import trace_validator
    return trace_validator(ROOT)


@pytest.mark.tlc
@pytest.mark.parametrize("strategy", ["random", "pct"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_explored_schedule_passes_and_its_traces_are_accepted(name: str, strategy: str, validate: Any,
                                                                    tmp_path: Path) -> None:
    runs = RUNS.get(name, 3)
    x = explore(SCENARIOS[name], name=name, strategy=strategy, runs=runs, seed=11, trace_dir=tmp_path, validate=validate)
    assert x.ok, [o.failure.describe() for o in x.failed]  # type: ignore[union-attr]
    assert len(x.outcomes) == runs and all(o.traces for o in x.outcomes)
    assert all(o.run.left == () or name.startswith("queue") for o in x.outcomes)  # every node thread ended


def test_the_same_seed_writes_the_same_trace_byte_for_byte(tmp_path: Path) -> None:
    for name, sc in (("engine", engine.two_nodes), ("queue", queue.long_handlers)):
        texts = []
        for k in range(2):
            run = run_once(sc, RandomWalk(5), trace_dir=tmp_path / f"{name}{k}")
            assert run.ok, run.failure
            texts.append([p.read_bytes() for p in sorted((tmp_path / f"{name}{k}").glob("*.ndjson"))])
        assert texts[0] and texts[0] == texts[1]


def _found_and_replayed(sc: Any, tmp_path: Path, expect: str, runs: int = BUDGET) -> None:
    x = explore(sc, strategy="random", runs=runs)
    assert x.failed, f"not found in {runs} schedules"
    bad = x.failed[0]
    assert expect in bad.failure.describe()  # type: ignore[union-attr]
    again = run_once(sc, load_schedule(save_schedule(bad.run, tmp_path / "schedule.json")))
    assert again.failure is not None and again.failure.describe() == bad.failure.describe()  # type: ignore[union-attr]


def test_a_heartbeat_loop_that_stops_after_its_first_beat_is_found(tmp_path: Path) -> None:
    with planted(consumer.Consumer, "_heartbeat_loop", "        due = self.node.now() + period", "        break"):
        _found_and_replayed(queue.long_handlers, tmp_path, "an entry invoked twice at once")


def test_a_pool_that_keeps_counting_a_finished_task_as_running_is_found(tmp_path: Path) -> None:
    with planted(consumer.ThreadExecutor, "_worker", "self.running -= 1\n                self._cond.notify_all()\n                if self.on_return",
                 "self._cond.notify_all()\n                if self.on_return"):
        _found_and_replayed(queue.pool_at_bound, tmp_path, "messages left unacked")


def test_a_poller_woken_at_the_permit_before_its_thread_is_back_is_found_by_pct(tmp_path: Path) -> None:
    # Found by this scenario on the designed code: woken when a handler gave its permit back,
    # the poller handed the next entry to a pool that still counted that handler's thread busy,
    # which refused it (delivered, not run, back a VT later). Under a steady intake the one
    # retry was refused at each of its reclaims. Now the pool wakes the poller once the thread
    # is back; this plants the old wake-up.
    with planted(consumer.Consumer, "_invoke", "        if not self._wake_on_return:\n            self._permit_back.set()",
                 "        self._permit_back.set()"):
        x = explore(queue.steady_intake, strategy="pct", runs=10, seed=0)
        assert x.failed, "not found in 10 PCT schedules"
        assert "retries starved" in x.failed[0].failure.describe()  # type: ignore[union-attr]
        again = run_once(queue.steady_intake, load_schedule(save_schedule(x.failed[0].run, tmp_path / "schedule.json")))
        assert again.failure is not None and again.failure.describe() == x.failed[0].failure.describe()


def test_a_default_heartbeat_period_past_the_visibility_timeout_is_found_by_the_default_settings(tmp_path: Path) -> None:
    with planted(config.Settings, "heartbeat_interval_ms", "max(1, self.visibility_timeout_ms // 3)",
                 "self.visibility_timeout_ms + 1"):
        # The short settings' scenario does not see it at all (its handlers are as long as its
        # own period): only the defaults run the period the bug changed for long enough.
        _found_and_replayed(queue.long_handlers_defaults, tmp_path, "an entry invoked twice at once", runs=2)




def test_a_woken_run_not_put_first_is_found_on_busy_sqlite_nodes(tmp_path: Path) -> None:
    # One worker thread per SQLite node: a run woken to renew its lease waits behind the node's
    # callers and fetches, its lease lapses, and the other node runs the workflow meanwhile.
    with planted(threads.NodeRuntime, "_next", "(self._urgent if task.urgent else self._ready).append(task)",
                 "self._ready.append(task)"):
        _found_and_replayed(engine.busy_sqlite_nodes, tmp_path, "NoOverlappingRuns")


def test_a_schedule_made_without_the_workflow_s_lock_is_found(tmp_path: Path) -> None:
    # A start and an in-memory signal of one workflow on one node both find no copy queued and
    # both write. The trace cannot show it (a copy already taken looks the same), the runs do
    # not overlap (the second write bumps the first's row): the step guard at the write sees it.
    from impl.engine import queue as execution_queue

    with planted(execution_queue.ExecutionQueue, "schedule", "        with self.holding(request.task_id):\n            if self.contains",
                 "        if True:\n            if self.contains"):
        _found_and_replayed(engine.start_signal_fetch_in_memory, tmp_path, "StepGuards")


@pytest.mark.parametrize("gate, scenario, expect", [
    ("honour_check", engine.signals_in_memory, "NoOverlappingRuns"),
    ("bump_task_version_on_honored_lease", engine.signals_in_memory, "did not finish"),
    ("renew_adopts_rerun", engine.two_nodes, "NoOverlappingRuns"),
    ("automatic_lease_renewal", engine.two_nodes, "NoOverlappingRuns"),
    ("renew_adopts_rerun", engine.stalled_start, "NoOverlappingRuns"),
    ("recover_stranded_start", engine.stranded_start, "did not finish"),
])
def test_the_engine_seed_s_guards_off_are_found(gate: str, scenario: Any, expect: str, tmp_path: Path) -> None:
    gates = dataclasses.replace(scenario.gates, **{gate: False})
    _found_and_replayed(dataclasses.replace(scenario, gates=gates), tmp_path, expect)


@pytest.mark.tlc
def test_a_duplicate_check_made_without_the_heartbeat_lock_is_found_by_pct(tmp_path: Path, validate: Any) -> None:
    # The poller's self-reclaim check between the finishing handler's leaving the active table
    # and its invoke_end: a second invocation starts before the first one's end is logged, which
    # only the trace shows (the handler itself has returned). A narrow window at one virtual
    # instant: random walks miss it in 300 schedules, PCT (depth 3) finds it at its 47th.
    from impl.workqueue import node

    with planted(node.QueueNode, "poll_and_admit", "        with self._hb_lock:\n            if self.active.running",
                 "        if True:\n            if self.active.running"):
        x = explore(queue.self_reclaim, strategy="pct", runs=100, trace_dir=tmp_path, validate=validate)
    assert x.failed, "not found in 100 PCT schedules"
    assert "invoke_start" in x.failed[0].failure.message and "duplicate_dropped" in x.failed[0].failure.message  # type: ignore[union-attr]


@pytest.mark.tlc
@pytest.mark.parametrize("gate, scenario, strategy", [
    ("heartbeat", queue.long_handlers, "random"),
    ("renew_owner_check", queue.stale_owner, "random"),
    ("atomic_renew", queue.stale_owner, "random"),
    ("permit_bound", queue.pool_at_bound, "random"),
    ("renew_past_max_processing", queue.past_max_processing, "random"),
    ("invocation_scoped_permits", queue.not_done_first, "random"),
    ("local_dedup", queue.self_reclaim, "pct"),
    ("close_waits_for_handlers", queue.close_while_active, "random"),
    ("reclaim_retries", queue.not_done_first, "random"),
    ("release_permit_on_rejection", queue.executor_rejects, "random"),
    ("cleanup_on_ack_failure", queue.ack_fails, "random"),
    ("attempt_guard", queue.commands_stale, "random"),
    ("cancel_takes_guard", queue.commands, "random"),
    ("terminal_check", queue.commands_cancelled_queued, "random"),
    ("atomic_put_if_owner", queue.commands_stale_write, "random"),
])
def test_the_queue_seed_s_guards_off_are_found(gate: str, scenario: Any, strategy: str, tmp_path: Path,
                                               validate: Any) -> None:
    sc = dataclasses.replace(scenario, gates=QueueGates(**{gate: False}))
    x = explore(sc, strategy=strategy, runs=BUDGET, trace_dir=tmp_path / "explored", validate=validate)
    assert x.failed, f"{gate} off: not found in {BUDGET} {strategy} schedules"
    # Its saved schedule replays to the same failure: the same invariant or assertion, or the
    # same traces rejected the same way.
    bad = x.failed[0]
    again = run_once(sc, load_schedule(save_schedule(bad.run, tmp_path / "schedule.json")), trace_dir=tmp_path / "again")
    if bad.run.failure is not None:
        assert again.failure is not None and again.failure.describe() == bad.run.failure.describe()
    else:
        traces = sorted((tmp_path / "again").glob("*.ndjson"))
        verdicts = validate(traces)
        assert again.ok and [f"{t.name}: {verdicts[t]}" for t in traces if t in verdicts] == bad.rejected


def test_a_stranded_start_recovered_at_once_is_safe_with_our_renewal(tmp_path: Path, validate: Any) -> None:
    # RECOVER_AFTER_LEASE off: the recovering start schedules now rather than a lease later, and
    # the stalled first start's write then meets its lease. With our renewal adopting the bump
    # this is safe, as the model says (models/engine/start_race_recover_in_memory.yaml is ok;
    # ..._seed_renewal, the seed's renewal, violates NoOverlappingRuns): the gate is not a
    # guard of this engine, and the runtime agrees.
    sc = dataclasses.replace(engine.stalled_start, gates=dataclasses.replace(engine.stalled_start.gates,
                                                                              recover_after_lease=False))
    for strategy in ("random", "pct"):
        x = explore(sc, strategy=strategy, runs=10, trace_dir=tmp_path / strategy, validate=validate)
        assert x.ok, [o.failure.describe() for o in x.failed]  # type: ignore[union-attr]
