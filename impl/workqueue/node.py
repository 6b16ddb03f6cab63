"""One consumer's steps, shared by the real consumer (threads, wall clock) and the simulation
(one step at a time, virtual clock): poll, admit, start or reject, finish, heartbeat.

    poller:    permit? -> poll (receive_new | reclaim, fair order) -> admit -> start -> handler
    handler:   ... runs outside this module ... -> finish: invoke_end, ack | release, permit back
    heartbeat: every VT/3: renew each active entry (owner-checked), and its command guard

Each step that touches the store is one script and one trace event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from impl.clock import Clock
from impl.sync import REAL, Sync
from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import ActiveTable, Fairness, Invocation, Permits
from impl.workqueue.store import Delivery, QueueStore

log = logging.getLogger(__name__)

RESULTS = ("done", "not_done", "threw")


class QueueNode:
    """The consumer `name` of `store`'s queue: its fairness counter, permits and active table."""

    def __init__(self, store: QueueStore, name: str, clock: Clock, settings: Settings, gates: Gates,
                 sync: Sync = REAL) -> None:
        self.store = store
        self.name = name
        self.clock = clock
        self.settings = settings
        self.gates = gates
        self.fairness = Fairness(settings.fairness_ratio)
        self.sync = sync  # its locks (`impl/sync.py`): real ones unless a test controls them
        self.permits = Permits(settings.concurrency, bounded=gates.permit_bound, sync=sync)
        self.active = ActiveTable(sync)
        # Entries holding a permit for their whole life (only with invocation_scoped_permits off).
        self.live: set[str] = set()
        self._hb_lock = sync.Lock()
        # Test hook: runs between the read and the claim of the non-atomic renewal.
        self.between_renew_check_and_claim: Callable[[str], None] | None = None
        # Replay hook: runs between a call's invoke_end and its ack or release (two store steps,
        # between which a peer's poll may land).
        self.between_end_and_settle: Callable[[str], None] | None = None
        self.stats: dict[str, int] = {"delivered": 0, "reclaimed": 0, "dropped": 0, "rejected": 0,
                                      "acked": 0, "ack_failed": 0, "renew_refused": 0}

    def now(self) -> int:
        """This node's clock, in ms."""
        return self.clock.now_ms()

    # -- intake -------------------------------------------------------------------------------
    def poll(self) -> Delivery | None:
        """One poll in fairness order, falling back to the other kind; None if both are empty."""
        for kind in self.fairness.next_order():
            if kind == "receive_new":
                got = self.store.receive_new(self.name, self.now())
            elif self.gates.reclaim_retries:
                got = self.store.reclaim(self.name, self.now(), self.settings.visibility_timeout_ms)
            else:
                got = None
            if got is not None:
                self.stats["delivered" if got.source == "new" else "reclaimed"] += 1
                return got
        return None

    def poll_and_admit(self) -> Invocation | None:
        """Take a permit, poll, and admit what comes: an invocation to start, or None (no permit,
        nothing to do, or a self-reclaim of an entry this node already runs, which is dropped)."""
        if not self.permits.try_acquire():
            return None
        delivery = self.poll()
        if delivery is None:
            self.permits.release()
            return None
        if self.gates.local_dedup:
            # Under the lock that `finish` holds from leaving the active table to its invoke_end:
            # an entry seen not running has its earlier invocation's end in the trace already.
            with self._hb_lock:
                if self.active.running(delivery.entry):
                    # A self-reclaim after heartbeat lag: running it again would overlap our own call.
                    self.store.invoke_start(self.name, self.now(), delivery.entry, "duplicate_dropped")
                    self.stats["dropped"] += 1
                    self.permits.release()
                    return None
        if not self.gates.invocation_scoped_permits and delivery.entry in self.live:
            self.permits.release()  # the live message already holds one for its whole life
        return Invocation(delivery.entry, delivery.payload, delivery.deliveries, delivery.source, delivery.cmd)

    def reserve(self, inv: Invocation) -> None:
        """Register the invocation as active before it is handed to an executor, so a
        self-reclaim polled meanwhile is already recognised as a duplicate."""
        inv.started_ms = self.now()
        self.active.add(inv)

    def start(self, inv: Invocation) -> None:
        """The handler is about to run: record `invoke_start started`."""
        inv.started_ms = self.now()
        self.store.invoke_start(self.name, inv.started_ms, inv.entry, "started")
        inv.running = True  # only now: a renewal before invoke_start would renew a hand-off

    def abandon(self, inv: Invocation) -> None:
        """`start` failed (the store did not answer): the handler does not run; unregister it
        and give the permit back. The entry stays pending and comes back after a VT."""
        self.active.remove(inv)
        self.permits.release()

    def reject(self, inv: Invocation) -> None:
        """The executor refused the invocation: record it, give the permit back, and leave the
        entry pending untouched, for a later reclaim."""
        self.active.remove(inv)
        self.stats["rejected"] += 1
        self.store.invoke_start(self.name, self.now(), inv.entry, "rejected")
        if self.gates.release_permit_on_rejection:
            self.permits.release()

    # -- completion -----------------------------------------------------------------------------
    def finish(self, inv: Invocation, result: str) -> None:
        """The handler returned (`done`, `not_done`) or threw: record the end, ack a done entry
        (XACK+XDEL) or touch a not-done one once, and give the permit back.

        A failing ack leaves the entry pending: it is redelivered after a visibility timeout and
        acked then. The cleanup runs even when the ack fails (gate `cleanup_on_ack_failure`).
        """
        if result not in RESULTS:
            raise ValueError(f"handler result must be one of {RESULTS}, got {result!r}")
        if not self.gates.cleanup_on_ack_failure:
            # The old code: clean up only after a successful ack; a throwing ack leaks the
            # active record (renewed forever, its redeliveries dropped) and the permit.
            self._complete(inv, result)
            self.active.remove(inv)
            self._release_permit(inv, result)
            return
        try:
            # Leaving the active table and logging the end are one step for the heartbeat (no
            # renewal after invoke_end) and for the poller (a self-reclaim meanwhile would
            # otherwise start a second invocation before this one's end: WorkQueue.tla drops
            # it as a duplicate, and a trace of it is rejected; seen once under load).
            with self._hb_lock:
                self.active.remove(inv)
                self._end(inv, result)
            if self.between_end_and_settle is not None:
                self.between_end_and_settle(inv.entry)
            self._settle(inv, result)
        finally:
            self._release_permit(inv, result)

    def _complete(self, inv: Invocation, result: str) -> None:
        self._end(inv, result)
        if self.between_end_and_settle is not None:
            self.between_end_and_settle(inv.entry)
        self._settle(inv, result)

    def _end(self, inv: Invocation, result: str) -> None:
        try:
            self.store.invoke_end(self.name, self.now(), inv.entry, result)
        except Exception:
            self.stats["ack_failed"] += 1  # counted as before: a failed finishing step
            raise

    def _settle(self, inv: Invocation, result: str) -> None:
        """Ack a done entry, or touch a not-done one once (owner-checked)."""
        try:
            if result == "done":
                if self.store.ack(self.name, self.now(), inv.entry, inv.cmd):
                    self.stats["acked"] += 1
            else:
                # Owner-checked like a renewal (gate renew_owner_check: WorkQueue.tla's Release).
                self.store.release(self.name, self.now(), inv.entry, check_owner=self.gates.renew_owner_check)
        except Exception:
            self.stats["ack_failed"] += 1
            raise

    def _release_permit(self, inv: Invocation, result: str) -> None:
        if self.gates.invocation_scoped_permits:
            self.permits.release()
        elif result == "done":
            self.live.discard(inv.entry)
            self.permits.release()
        else:
            self.live.add(inv.entry)  # the old design: the message keeps its permit until acked

    # -- heartbeat ------------------------------------------------------------------------------
    def heartbeat(self) -> None:
        """Renew every active invocation's entry (owner-checked), and run its renewers. Past
        `max_processing_ms` it only warns and keeps renewing: stopping would let a peer start
        an overlapping call (gate `renew_past_max_processing`)."""
        if not self.gates.heartbeat:
            return
        for inv in self.active.all():
            with self._hb_lock:  # an invocation that ended meanwhile is not renewed
                if inv.running and self.active.holds(inv):
                    self._renew(inv)

    def _renew(self, inv: Invocation) -> None:
        if inv.lost:
            return  # a peer owns it now; a refused renewal is never retried
        now = self.now()
        if now - inv.started_ms > self.settings.max_processing_ms:
            if not inv.warned_past_max:
                inv.warned_past_max = True
                log.warning("%s: handler on %s has run %d ms, past max_processing_ms=%d; %s",
                            self.name, inv.entry, now - inv.started_ms, self.settings.max_processing_ms,
                            "still renewing" if self.gates.renew_past_max_processing
                            else "no longer renewing (gate renew_past_max_processing off)")
            if not self.gates.renew_past_max_processing:
                return
        if self._renew_entry(inv.entry, now):
            inv.renewed_ms = now
        else:
            inv.lost = True
            self.stats["renew_refused"] += 1
        for renew in list(inv.renewers):
            renew()

    def _renew_entry(self, entry: str, now: int) -> bool:
        if self.gates.atomic_renew:
            return self.store.renew(self.name, now, entry, check_owner=self.gates.renew_owner_check)
        # The later design's renewal: XPENDING, then XCLAIM, as two round trips. A peer's
        # reclaim landing between them is claimed back.
        still_mine = self.store.pending_owner(entry) == self.name
        if self.between_renew_check_and_claim is not None:
            self.between_renew_check_and_claim(entry)
        return self.store.renew(self.name, self.now(), entry, check_owner=not still_mine)

    def snapshot(self) -> dict[str, Any]:
        """Counters for summaries."""
        return {**self.stats, "active": len(self.active), "permits_in_use": self.permits.in_use}
