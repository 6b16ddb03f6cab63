"""A consumer's finish against its own poller, on the twin (fakeredis, virtual clock).

Between a handler's return and its `invoke_end`, the entry is no longer renewed; a thread held up
there past the VT lets the node's own poller reclaim the entry. WorkQueue.tla drops that delivery
as a duplicate while the first invocation is active (until InvokeEnd): the second invocation may
start only after the first one's end is in the trace. A two-process run on a loaded machine
logged the second start before the end once (`test_run_two_consumer_processes`, CI).

The interleaving is forced with events, not timing: the store's invoke_end, called by finish,
first lets the poller run, and waits until the poller has either admitted the entry or is
waiting for finish's lock.
"""

from __future__ import annotations

import threading
from typing import Any

from impl.clock import VirtualClock
from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import Invocation
from impl.workqueue.node import QueueNode
from impl.workqueue.sim_redis import fake_client, virtual_time
from impl.workqueue.store import QueueStore

VT = 300


class WatchedLock:
    """A lock that says (sets `waiting`) when an acquire has to wait for it."""

    def __init__(self, waiting: threading.Event) -> None:
        self._lock = threading.Lock()
        self.waiting = waiting

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self.waiting.set()
            self._lock.acquire()

    def __exit__(self, *_: Any) -> None:
        self._lock.release()


def test_a_self_reclaim_during_finish_starts_only_after_the_end() -> None:
    clock = VirtualClock(1_000_000)
    settings = Settings(visibility_timeout_ms=VT, max_processing_ms=10 * VT, concurrency=2)
    moved = threading.Event()  # the poller admitted the entry, or waits for finish's lock
    admitted: list[Invocation | None] = []
    with virtual_time(clock):
        queue = QueueStore(fake_client(), "race", explicit_ids=True)
        node = QueueNode(queue, "a", clock, settings, Gates())
        node._hb_lock = WatchedLock(moved)  # type: ignore[assignment]
        entry = queue.offer("p", clock.now_ms(), "one")
        first = node.poll_and_admit()
        assert first is not None and first.entry == entry
        node.reserve(first)
        node.start(first)

        def poller() -> None:
            admitted.append(node.poll_and_admit())
            moved.set()

        thread = threading.Thread(target=poller)
        real_end = queue.invoke_end

        def invoke_end(*args: Any) -> None:
            clock.advance(2 * VT)  # the finishing thread was held up: the entry is idle past VT
            thread.start()
            assert moved.wait(60), "the poller neither admitted the entry nor waited for the lock"
            if admitted and admitted[0] is not None:  # admitted meanwhile: its handler starts now
                node.reserve(admitted[0])
                node.start(admitted[0])
            real_end(*args)

        queue.invoke_end = invoke_end  # type: ignore[method-assign]
        node.finish(first, "not_done")
        thread.join()
        second = admitted[0]
        assert second is not None and second.entry == entry and second.source == "reclaim"
        if not second.running:
            node.reserve(second)
            node.start(second)
        events = [(ev["op"], ev.get("outcome")) for ev in queue.events() if ev.get("entry") == entry]
    # Without the lock: offer, receive_new, started, reclaim, started, invoke_end, release.
    assert events == [("offer", "added"), ("receive_new", "delivered"), ("invoke_start", "started"),
                      ("reclaim", "claimed"), ("invoke_end", "ended"), ("release", "touched"),
                      ("invoke_start", "started")]
