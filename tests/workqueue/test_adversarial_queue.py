"""The seed's adversarial cases for the work queue, on the real Redis server.

Each test runs twice: with its guard on it must hold; with the guard switched off (the gate named
in the test) the bad outcome must actually happen, which shows the test can fail.
"""

from __future__ import annotations

import threading
import time

import pytest

from impl.workqueue import analysis
from impl.workqueue.config import Gates
from impl.workqueue.consumer import ExecutorRejected, ThreadExecutor
from impl.workqueue.core import Invocation

from .conftest import FAST, Harness, wait_until

pytestmark = pytest.mark.redis
GUARD = pytest.mark.parametrize("guarded", [True, False], ids=["guard-on", "guard-off"])


def gates(guarded: bool, *names: str) -> Gates:
    return Gates() if guarded else Gates().off(*names)


@GUARD
def test_more_non_terminal_entries_than_permits(harness: Harness, guarded: bool) -> None:
    """Two permits, two entries that stay not-done: intake must still reach the third entry."""
    harness.configure(gates=gates(guarded, "invocation_scoped_permits"))
    for p in ("stuck-0", "stuck-1", "fresh"):
        harness.offer(p)
    seen: list[str] = []
    harness.consumer("a", lambda inv: seen.append(inv.payload) or inv.payload == "fresh")
    got_fresh = wait_until(lambda: "fresh" in seen, 1.0)
    assert got_fresh == guarded, f"fresh entry processed: {got_fresh}; deliveries: {seen}"


class RejectFirst(ThreadExecutor):
    """Rejects its first `n` submissions, as a saturated executor would."""

    def __init__(self, n: int, max_threads: int) -> None:
        super().__init__(max_threads)
        self.left = n

    def submit(self, fn):  # type: ignore[no-untyped-def]
        if self.left > 0:
            self.left -= 1
            raise ExecutorRejected("saturated (test)")
        super().submit(fn)


@GUARD
def test_multi_threaded_handlers_within_the_bound(harness: Harness, guarded: bool) -> None:
    """Concurrency 3 runs handlers on several threads at once, never more than 3."""
    harness.configure(settings=FAST.__class__(**{**FAST.__dict__, "concurrency": 3}),
                      gates=gates(guarded, "permit_bound"))
    for i in range(12):
        harness.offer(f"m{i}")
    lock = threading.Lock()
    state = {"now": 0, "peak": 0, "done": 0}

    def handler(inv: Invocation) -> bool:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
            state["done"] += 1
        return True

    harness.consumer("a", handler)
    assert wait_until(lambda: state["done"] == 12, 3.0)
    peak_trace = analysis.max_concurrent_per_node(harness.events())["a"]
    if guarded:
        assert 2 <= state["peak"] <= 3 and peak_trace <= 3, (state, peak_trace)
    else:
        assert state["peak"] > 3 and peak_trace > 3, (state, peak_trace)


@GUARD
def test_handler_longer_than_vt_and_max_processing(harness: Harness, guarded: bool) -> None:
    """A 900 ms handler, VT 200 ms, max-processing 300 ms: the heartbeat keeps renewing past
    max-processing (only warning), so the peer never starts an overlapping call. (Concurrency 1,
    so a's own poller, holding no free permit, cannot self-reclaim and race b.)"""
    harness.configure(settings=FAST.__class__(**{**FAST.__dict__, "concurrency": 1}),
                      gates=gates(guarded, "renew_past_max_processing"))
    harness.offer("long")
    calls: list[str] = []

    def handler(inv: Invocation) -> bool:
        calls.append(threading.current_thread().name)
        time.sleep(0.9)
        return True

    harness.consumer("a", handler)
    assert wait_until(lambda: len(calls) == 1, 1.0)
    harness.consumer("b", handler)
    assert wait_until(lambda: harness.acked() >= 1, 3.0)
    time.sleep(0.1)
    if guarded:
        assert len(calls) == 1 and harness.duplicates() == 0
    else:
        assert len(calls) >= 2 and harness.duplicates() >= 1


@GUARD
def test_dead_owners_lease_expires_and_a_peer_takes_over(harness: Harness, guarded: bool) -> None:
    """Node a takes an entry and dies (no heartbeat, no handler): after a VT, b reclaims it."""
    harness.configure(gates=gates(guarded, "reclaim_retries"))
    entry = harness.offer("orphan")
    harness.features.append("crash")
    got = harness.queue.receive_new("a", harness.clock.now_ms())
    assert got is not None and got.entry == entry  # a owns it now, then "crashes"
    harness.queue.line("a", "crash", "injected")  # the fault line, where the test makes it
    handled: list[str] = []
    harness.consumer("b", lambda inv: handled.append(inv.entry) or True)
    taken_over = wait_until(lambda: harness.acked() == 1, 1.2)
    assert taken_over == guarded
    if guarded:
        assert handled == [entry]
        reclaim = [e for e in harness.events() if e["op"] == "reclaim"]
        assert reclaim and reclaim[0]["node"] == "b" and reclaim[0]["state"]["entry"]["owner"] == "b"


@GUARD
def test_stale_owner_cannot_renew_a_reclaimed_entry(harness: Harness, guarded: bool) -> None:
    """a pauses past the VT, b reclaims; a's renewal must be refused and b keep the entry."""
    harness.configure(gates=gates(guarded, "renew_owner_check"))
    check = harness.gates.renew_owner_check  # passed per call: the steps are driven by hand
    harness.check_order = False  # renewals by hand, with no invocation running
    entry = harness.offer("x")
    assert harness.queue.receive_new("a", harness.clock.now_ms())
    time.sleep(0.25)  # a pauses longer than the VT (200 ms)
    assert harness.queue.reclaim("b", harness.clock.now_ms(), FAST.visibility_timeout_ms)
    renewed = harness.queue.renew("a", harness.clock.now_ms(), entry, check_owner=check)
    owner = harness.events()[-1]["state"]["entry"]["owner"]
    if guarded:
        assert not renewed and owner == "b"
    else:
        assert renewed and owner == "a"  # the stale worker seized it back from its peer


@GUARD
def test_executor_rejection_releases_the_permit(harness: Harness, guarded: bool) -> None:
    """Two rejections with two permits: the permits come back and the rejected entries are
    reclaimed after a VT and handled."""
    harness.configure(gates=gates(guarded, "release_permit_on_rejection"))
    harness.features.append("faults")
    for i in range(2):
        harness.offer(f"m{i}")
    handled: list[str] = []
    harness.consumer("a", lambda inv: handled.append(inv.payload) or True, executor=RejectFirst(2, 2))
    all_done = wait_until(lambda: harness.acked() == 2, 1.5)
    rejected = [e for e in harness.events() if e["op"] == "invoke_start" and e["outcome"] == "rejected"]
    assert len(rejected) == 2
    assert all_done == guarded, f"handled: {handled}"


@GUARD
def test_close_while_a_handler_runs(harness: Harness, guarded: bool) -> None:
    """a closes while its handler runs: close must wait for the handler and keep renewing its
    entry meanwhile, so the entry never becomes reclaimable for b.

    Event-driven, so that a loaded machine cannot change the verdict: the handler is held until
    the test has seen what it looks for. With the guard on, close is still waiting while the
    handler is held and a's heartbeat renews the entry after close began; with it off, close
    returns at once, the heartbeat has stopped, and b (started only then) reclaims the entry
    after a VT and runs it beside a's held call."""
    harness.configure(gates=gates(guarded, "close_waits_for_handlers"))
    harness.features.append("close")
    entry = harness.offer("job")
    calls: list[str] = []
    release = threading.Event()

    def held(inv: Invocation) -> bool:
        calls.append(inv.entry)
        if len(calls) == 1:
            release.wait(30.0)
        return True

    def renewals_by_a() -> int:
        return sum(1 for e in harness.events() if e["op"] == "renew" and e["node"] == "a"
                   and e["outcome"] == "renewed" and e["entry"] == entry)

    a = harness.consumer("a", held)
    try:
        assert wait_until(lambda: len(calls) == 1, 30.0), "a never started its handler"
        harness.queue.line("a", "close", "injected")  # the test closes a mid-call: the fault line
        closer = threading.Thread(target=a.close)
        closer.start()
        assert wait_until(lambda: not a._threads[0].is_alive(), 30.0), "a's poller did not stop"
        before = renewals_by_a()
        if guarded:
            # The heartbeat runs on until the handler ends: one more renewal shows it, however late.
            assert wait_until(lambda: renewals_by_a() > before, 30.0), "no renewal after close began"
            assert closer.is_alive(), "close returned while a handler still ran"
        else:
            closer.join(30.0)
            assert not closer.is_alive(), "close without the guard should not wait for handlers"
            harness.consumer("b", held)
            assert wait_until(lambda: len(calls) == 2, 30.0), "b never reclaimed the abandoned entry"
    finally:
        release.set()
    closer.join(30.0)
    assert not closer.is_alive()
    assert wait_until(lambda: harness.acked() >= 1, 30.0)
    if guarded:
        assert calls == [entry] and harness.duplicates() == 0
    else:
        assert calls == [entry, entry] and harness.duplicates() == 1


@GUARD
def test_ack_failure_leaves_the_entry_for_redelivery(harness: Harness, guarded: bool) -> None:
    """The first ack fails (nothing commits): the entry stays pending, comes back after a VT and
    is acked on that delivery."""
    harness.configure(gates=gates(guarded, "cleanup_on_ack_failure"))
    harness.features.append("faults")
    harness.queue.faults.fail("ack", "a")
    entry = harness.offer("job")
    calls: list[int] = []
    c = harness.consumer("a", lambda inv: calls.append(inv.deliveries) or True)
    acked = wait_until(lambda: harness.acked() == 1, 1.5)
    assert acked == guarded
    if guarded:
        assert calls == [1, 2] and harness.duplicates() == 0
        assert harness.queue.stream_length() == 0
    else:
        assert calls == [1] and harness.queue.pending_count() == 1  # stranded: renewed forever
        assert c.node.active.running(entry)


@GUARD
def test_duplicate_delivery_by_self_reclaim_is_dropped(harness: Harness, guarded: bool) -> None:
    """a's heartbeat lags past the VT while its handler runs; a's own poller reclaims the entry
    and must drop that delivery instead of running the entry twice at once.

    The first call is held until the reclaim has shown itself (a dropped delivery, or a second
    call), not for a fixed time: on a loaded machine a fixed sleep could end first, and a later
    redelivery after the call ended is at-least-once, not an overlap."""
    harness.configure(gates=gates(guarded, "local_dedup"))
    harness.features.append("heartbeat_lag")
    harness.offer("job")
    calls: list[int] = []
    release = threading.Event()

    def slow(inv: Invocation) -> bool:
        calls.append(inv.deliveries)
        if len(calls) == 1:
            release.wait(10.0)
        return True

    def dropped() -> list[dict]:  # type: ignore[type-arg]
        return [e for e in harness.events() if e["op"] == "invoke_start" and e["outcome"] == "duplicate_dropped"]

    a = harness.consumer("a", slow)
    a.lag_heartbeat()
    try:
        shown = wait_until(lambda: bool(dropped()) or len(calls) >= 2, 10.0)
    finally:
        release.set()
    assert shown, "a's poller never reclaimed the entry it runs"
    assert wait_until(lambda: harness.acked() >= 1, 10.0)
    if guarded:
        assert calls[0] == 1 and dropped() and harness.duplicates() == 0, (calls, harness.duplicates())
    else:
        assert len(calls) >= 2 and harness.duplicates() >= 1


@GUARD
def test_a_peer_claim_between_check_and_claim_is_not_seized_back(harness: Harness, guarded: bool) -> None:
    """The known weak spot of a later design: renewal as XPENDING, then XCLAIM. If a's check
    passes and b's reclaim lands before a's claim, a must not take the entry back (one script
    makes that impossible); with `atomic_renew` off it does."""
    from impl.workqueue.node import QueueNode

    harness.configure(gates=gates(guarded, "atomic_renew"))
    harness.check_order = False  # b's reclaim by hand, with no invocation
    entry = harness.offer("x")
    a = QueueNode(harness.queue, "a", harness.clock, harness.settings, harness.gates)
    inv = a.poll_and_admit()
    assert inv is not None and inv.entry == entry
    a.reserve(inv)
    a.start(inv)

    def peer_reclaims(_: str) -> None:
        time.sleep(0.25)  # a stalls past the VT between its two round trips
        assert harness.queue.reclaim("b", harness.clock.now_ms(), FAST.visibility_timeout_ms)

    a.between_renew_check_and_claim = peer_reclaims
    time.sleep(0.25)  # a pauses before its heartbeat; the atomic variant's check sees b too
    if guarded:
        assert harness.queue.reclaim("b", harness.clock.now_ms(), FAST.visibility_timeout_ms)
    a.heartbeat()
    owner = harness.queue.pending_owner(entry)
    if guarded:
        assert inv.lost and owner == "b"
    else:
        assert not inv.lost and owner == "a"  # seized back from b
