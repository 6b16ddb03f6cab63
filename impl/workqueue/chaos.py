"""The faults of `workqueue run`: an external system that is slow, throws, or stalls its consumer.

A stall pauses the whole consumer (its heartbeat too, as a long GC pause would), so that its
invocations lapse and a peer process takes the entry and the command's guard over. A stall that
only slept would leave it to the wall clock whether the stale attempt acts while the peer still
holds what it took: on most runs the peer had already finished. So a stall is a `Takeover`,
driven by events the two processes see in Redis, not by time:

    stalled consumer S (in its call of cmd)        peer P
    claims the meeting (SET NX), pauses its
    heartbeat, waits ...                           reclaims the entry, takes the guard, calls:
                                                   sees S's meeting on cmd, says it holds
                                                   (live key), waits ...
    sees P hold; then, by turns,
      heartbeat first: its renewal is refused,
        its guard renewal lost; the call's
        answer is then never written;
      write first: its write is refused;
    its release of the entry is refused;
    its invocation ends: the meeting is over  ->   goes on: writes, releases, acks

Every wait is bounded (`Takeover.wait_s`); one that times out goes on as a plain stall.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from impl.workqueue.consumer import Consumer


class Stalls:
    """The pauses of one consumer process: a stall pauses its heartbeat and its poller (as a long
    GC pause would; its running handlers are left to the stall), a lag only its heartbeat (the
    process goes on). Each is a window of fault lines (`Consumer.lag_heartbeat`): the trace
    specs excuse a lapse of the consumer's leases inside it only. `lapses` counts the
    invocations a pause may have let lapse, every one alive at some time during it (the run's
    summary allows that many overlapping invocations)."""

    def __init__(self) -> None:
        self.consumer: Consumer | None = None
        self.lapses = 0
        self.polling = True  # whether the poller may poll (`Consumer.may_poll`)
        self._depth = 0
        self._seen: set[int] = set()  # the invocations alive during the current pause
        self._lock = threading.Lock()

    def _alive(self) -> set[int]:
        assert self.consumer is not None
        return {id(inv) for inv in self.consumer.node.active.all()}

    def pause(self, *, poller: bool = True) -> None:
        """Pause the heartbeat, and the poller too if `poller`, until the last pause resumes: a
        fault window the consumer logs (`pause` with the poller, else `heartbeat_lag`)."""
        assert self.consumer is not None
        with self._lock:
            self._depth += 1
            if poller:
                self.polling = False
            if self._depth == 1:
                self.consumer.lag_heartbeat("pause" if poller else "heartbeat_lag")
                self._seen = self._alive()

    def ended(self, inv: Any) -> None:
        """An invocation ended (`Consumer.after_finish`): one alive during a pause counts."""
        with self._lock:
            if self._depth:
                self._seen.add(id(inv))

    def resume(self) -> None:
        """End one pause; the heartbeat and the poller run again once none is left."""
        assert self.consumer is not None
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self.lapses += len(self._seen | self._alive())
                self.consumer.resume_heartbeat()
                self.polling = True


class Takeover:
    """Stalls that last until a peer process has taken the command over (module docstring), and
    heartbeat lags that last until the process's own poller has reclaimed an entry it still runs
    (a self-reclaim, dropped), while the peers' pollers wait.

    One at a time in the whole run (`<prefix>:chaos:meeting`, value `stall|lag consumer cmd`):
    two consumers stalled at once would each wait for the other.
    """

    def __init__(self, client: Any, prefix: str, name: str, stalls: Stalls, guard_owner: Callable[[str], str | None],
                 wait_s: float) -> None:
        self.client, self.prefix, self.name = client, prefix, name
        self.stalls, self.guard_owner, self.wait_s = stalls, guard_owner, wait_s
        self.meetings = 0  # meetings this process held in which the peer was seen holding
        self._open: dict[str, bool] = {}  # stalled attempt -> whether the heartbeat is still paused for it

    def _key(self, what: str) -> str:
        return f"{self.prefix}:chaos:{what}"

    def _until(self, ready: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + self.wait_s
        while not ready():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def stall(self, cmd: str) -> bool:
        """Stall the call of `cmd` until a peer holds it; False (no stall) if another meeting is on."""
        if not self._begin("stall", cmd):
            return False
        mine = self.guard_owner(cmd)  # the stalled attempt's: it holds the guard in its call
        if mine is None:
            self.client.delete(self._key("meeting"))
            return False
        self.stalls.pause()
        self._open[mine] = True
        held = self._until(lambda: self.client.exists(self._key(f"live:{cmd}"))
                           and self.guard_owner(cmd) not in (None, mine))
        if not held:
            return True  # nobody came: the rest is a plain stall, ended with the invocation
        self.meetings += 1
        # By turns over the whole run (write first on the first meeting, the rarer one).
        if self.client.incr(self._key("meetings")) % 2 == 0:  # heartbeat first: until the renewal is refused
            self._resume(mine)
            self._until(lambda: self._lost(mine))
        return True

    def _begin(self, kind: str, cmd: str) -> bool:
        return bool(self.client.set(self._key("meeting"), f"{kind} {self.name} {cmd}", nx=True,
                                    px=int(self.wait_s * 3000)))

    def _meeting(self) -> tuple[str, str, str] | None:
        value = self.client.get(self._key("meeting"))
        if value is None:
            return None
        kind, who, cmd = value.decode().split(" ", 2)
        return kind, who, cmd

    def lag(self, cmd: str) -> bool:
        """Lag this process's heartbeat (its poller goes on) until the poller has reclaimed an
        entry this process still runs; False if another meeting is on."""
        if not self._begin("lag", cmd):
            return False
        assert self.stalls.consumer is not None
        stats = self.stalls.consumer.node.stats
        dropped = stats["dropped"]
        self.stalls.pause(poller=False)
        try:
            self._until(lambda: stats["dropped"] > dropped)
        finally:
            self.stalls.resume()
            self.client.delete(self._key("meeting"))
        return True

    def may_poll(self) -> bool:
        """`Consumer.may_poll`: not while this process stalls, nor while a peer's heartbeat lags
        (so that the lagging entry comes back to its own process)."""
        if not self.stalls.polling:
            return False
        meeting = self._meeting()
        return meeting is None or meeting[0] != "lag" or meeting[1] == self.name

    def _lost(self, attempt: str) -> bool:
        assert self.stalls.consumer is not None
        return any(inv.lost for inv in self.stalls.consumer.node.active.all() if inv.attempt == attempt)

    def _resume(self, attempt: str) -> None:
        if self._open.get(attempt):
            self._open[attempt] = False
            self.stalls.resume()

    def finished(self, inv: Any) -> None:
        """`Consumer.after_finish`: an invocation has ended (released or acked); the stalled
        one's end is the meeting's, and the peer may go on."""
        self.stalls.ended(inv)
        if inv.attempt in self._open:
            self._resume(inv.attempt)
            del self._open[inv.attempt]
            self.client.delete(self._key("meeting"))

    def hold(self, cmd: str) -> None:
        """The peer's side, in its call of `cmd`: if another consumer is stalled on `cmd`, say
        so (the live key) and wait until its invocation has ended."""
        meeting = self._meeting()
        if meeting is None or meeting[0] != "stall" or meeting[1] == self.name or meeting[2] != cmd:
            return
        self.client.set(self._key(f"live:{cmd}"), self.name, px=int(self.wait_s * 3000))
        try:
            self._until(lambda: self._meeting() != meeting)
        finally:
            self.client.delete(self._key(f"live:{cmd}"))


class ChaosApp:
    """The external system of a run: answers after a short delay; sometimes it outlives the
    visibility timeout or throws (the delivery is then not done and comes back after a VT).
    Its first calls stall the consumer until a peer takes over, then lag its heartbeat until it
    reclaims its own entry (`takeover`: `stalls` and `lags` of them per process, each tried
    again on the next call while another is on), so that every run has stale attempts meet
    live ones, and a self-reclaim."""

    def __init__(self, rng: random.Random, vt_ms: int, takeover: Takeover | None = None, stalls: int = 2,
                 lags: int = 1) -> None:
        self.rng = rng
        self.vt_s = vt_ms / 1000
        self.takeover = takeover
        self.stalls_owed, self.lags_owed = (stalls, lags) if takeover is not None else (0, 0)

    def call(self, cmd: str, payload: str) -> str:
        if self.takeover is not None:
            self.takeover.hold(cmd)
            if self.stalls_owed and self.takeover.stall(cmd):
                self.stalls_owed -= 1
                return "succeeded"
            if not self.stalls_owed and self.lags_owed and self.takeover.lag(cmd):
                self.lags_owed -= 1
        r = self.rng.random()
        if r < 0.06:
            time.sleep(self.vt_s * 1.5)  # longer than the VT: the heartbeat must carry it
        elif r < 0.16:
            raise RuntimeError(f"external system failed on {cmd}")
        time.sleep(self.rng.uniform(0.0, 0.01))
        return "failed" if r > 0.95 else "succeeded"

    def check(self, cmd: str, payload: str) -> str:
        return "failed" if self.rng.random() < 0.05 else "succeeded"
