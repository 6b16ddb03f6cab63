"""The controlled scheduler (conformance/interleave) on small programs: one thread at a time,
virtual time, determinism, deadlocks and hangs reported with places, and each strategy finding
the lost update a missing lock lets through."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.interleave.exhaustive import Exhaustive, estimate, probe
from conformance.interleave.explore import explore, load_schedule, run_once, save_schedule
from conformance.interleave.primitives import Controlled
from conformance.interleave.strategies import Drawn, RandomWalk, Replay


def counter(locked: bool, rounds: int = 2) -> Callable[[Controlled], int]:
    """Two threads add 1 `rounds` times each; without the lock, a read and its write are apart."""
    def scenario(sync: Controlled) -> int:
        box = {"v": 0}
        lock = sync.Lock()

        def add() -> None:
            for _ in range(rounds):
                if locked:
                    lock.acquire()
                v = box["v"]
                sync.sleep(0)  # a point between the read and the write
                box["v"] = v + 1
                if locked:
                    lock.release()
        threads = [sync.Thread(add, name=f"w{i}") for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert box["v"] == 2 * rounds, f"lost update: {box['v']}"
        return box["v"]
    return scenario


def test_with_the_lock_every_schedule_counts_right_and_without_it_some_lose_an_update() -> None:
    good = explore(counter(True), strategy="random", runs=30)
    assert good.ok and len(good.outcomes) == 30
    bad = explore(counter(False), strategy="random", runs=30)
    assert bad.failed and "lost update" in bad.failed[0].failure.message  # type: ignore[union-attr]


def test_the_same_seed_gives_the_same_schedule() -> None:
    a = run_once(counter(False), RandomWalk(7))
    b = run_once(counter(False), RandomWalk(7))
    assert a.steps == b.steps and len(a.steps) > 10
    c = run_once(counter(False), RandomWalk(8))
    assert [s.thread for s in c.steps] != [s.thread for s in a.steps]


def test_a_timed_wait_moves_the_virtual_clock_only_when_no_thread_can_run() -> None:
    def scenario(sync: Controlled) -> list[int]:
        seen: list[int] = []
        ev = sync.Event()

        def setter() -> None:
            sync.sleep(2.5)
            seen.append(sync.clock.now_ms())
            ev.set()
        t = sync.Thread(setter, name="setter")
        t.start()
        assert not ev.wait(1.0)  # times out at 1 s: the setter still sleeps
        seen.append(sync.clock.now_ms())
        assert ev.wait(10.0)  # set at 2.5 s, long before its timeout
        seen.append(sync.clock.now_ms())
        t.join()
        return seen
    r = run_once(scenario, RandomWalk(0))
    assert r.ok, r.failure
    start = r.steps[0].now_ms
    assert [v - start for v in r.value] == [1000, 2500, 2500]


def test_a_deadlock_is_reported_with_every_thread_s_place() -> None:
    def scenario(sync: Controlled) -> None:
        a, b = sync.Lock(), sync.Lock()

        def one(first: Any, second: Any) -> None:
            with first:
                sync.sleep(0.01)
                with second:
                    pass
        ts = [sync.Thread(one, name="x", args=(a, b)), sync.Thread(one, name="y", args=(b, a))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    r = run_once(scenario, RandomWalk(0))
    assert r.failure is not None and r.failure.kind == "deadlock"
    places = "\n".join(r.failure.places)
    assert "x: acquire lock#2" in places and "y: acquire lock#1" in places and "(blocked)" in places
    assert "test_scheduler.py" in places  # the code location of each place


def test_a_thread_blocked_on_a_primitive_that_is_not_injected_is_reported_as_a_hang() -> None:
    real = threading.Event()  # not the controlled one: the scheduler cannot see it

    def scenario(sync: Controlled) -> None:
        real.wait()
    try:
        r = run_once(scenario, RandomWalk(0), hang_s=0.5)
    finally:
        real.set()
    assert r.failure is not None and r.failure.kind == "hang"
    assert "main: running" in r.failure.places


def test_a_run_past_its_step_budget_fails_naming_it() -> None:
    def scenario(sync: Controlled) -> None:
        while True:
            sync.sleep(0.001)
    r = run_once(scenario, RandomWalk(0), max_steps=500)
    assert r.failure is not None and r.failure.kind == "budget"


def test_an_exception_in_any_thread_fails_the_run() -> None:
    def scenario(sync: Controlled) -> None:
        t = sync.Thread(lambda: 1 / 0, name="boom")
        t.start()
        t.join()
    r = run_once(scenario, RandomWalk(0))
    assert r.failure is not None and r.failure.kind == "raised" and "ZeroDivisionError" in r.failure.message


def test_bounded_exhaustive_search_covers_its_space_and_finds_the_lost_update() -> None:
    for bound, found in ((0, False), (1, True)):
        x = explore(counter(False), strategy="exhaustive", runs=10_000, bound=bound, stop_at_failure=False)
        assert x.space is not None and "the bounded space is covered" in x.space
        assert bool(x.failed) is found, (bound, x.space)
    # The lock makes every schedule right: the whole space within 2 preemptions is run.
    x = explore(counter(True), strategy="exhaustive", runs=10_000, bound=2)
    assert x.ok and "covered" in x.space  # type: ignore[operator]


def test_sleep_sets_cut_schedules_and_the_estimate_counts_the_space_without_them() -> None:
    search = Exhaustive(2)
    while (s := search.next()) is not None:
        search.record(run_once(counter(True), s))
    products = []
    for k in range(20):
        p = probe(k, 2)
        run_once(counter(True), p)
        products.append(p.product)
    assert search.exhausted and search.pruned > 0
    assert estimate(products) > search.runs - search.pruned


def test_pct_finds_the_lost_update() -> None:
    x = explore(counter(False, rounds=1), strategy="pct", runs=50, depth=2)
    assert x.failed


def test_a_saved_schedule_replays_to_the_same_failure(tmp_path) -> None:
    bad = explore(counter(False), strategy="random", runs=30).failed[0]
    path = save_schedule(bad.run, tmp_path / "s.json")
    again = run_once(counter(False), load_schedule(path))
    assert again.failure is not None and again.failure.message == bad.failure.message  # type: ignore[union-attr]
    assert again.steps == bad.run.steps


def test_a_schedule_that_does_not_fit_the_code_is_reported_as_diverged() -> None:
    r = run_once(counter(True), Replay(["main", "nobody"]))
    assert r.failure is not None and r.failure.kind == "diverged" and "nobody" in r.failure.message


@pytest.mark.parametrize("text", ['{"schedule": "main"}', "[]", '{"schedule": [1]}', "not json"])
def test_a_malformed_schedule_file_is_refused(tmp_path, text: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(ValueError):
        load_schedule(path)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(st.integers(0, 7), max_size=80))
def test_hypothesis_drives_the_choices_and_the_lock_holds(choices: list[int]) -> None:
    r = run_once(counter(True), Drawn(choices))
    assert r.ok, r.failure


def test_hypothesis_finds_and_shrinks_the_lost_update() -> None:
    found: list[int] = []

    @settings(max_examples=300, derandomize=True, deadline=None, database=None)
    @given(st.lists(st.integers(0, 7), max_size=80))
    def search(choices: list[int]) -> None:
        r = run_once(counter(False, rounds=1), Drawn(choices))
        if not r.ok:
            found.append(sum(s.preempted for s in r.steps))
            raise AssertionError(r.failure.describe())  # type: ignore[union-attr]
    with pytest.raises(AssertionError, match="lost update"):
        search()
    assert found and found[-1] <= 2  # shrunk to a schedule of one or two preemptions
