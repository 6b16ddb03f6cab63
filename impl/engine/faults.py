"""The faults of a run as lines of its traces: each logged where it happened, by the node it hit.

A trace shows committed store steps. Between two of them a node may have crashed, or one of its
leases may have lapsed under it (a pause, a stall, a slow commit); `tla/TraceEngine.tla` explains
such lines with hidden steps, and takes each only where a fault line of the workflow's trace
says so (`Store.line`, a transaction of its own, in commit order with the workflow's steps):

    crash        a node crashed while it held a copy or a run of the workflow (its queue and
                 runs are lost: TraceEngine's Crash), logged by whoever crashed it (a simulation)
    pause        start ... end: a node frozen (a simulation's pause), logged in each workflow it
                 held a copy or a run of; a lease of it may lapse inside the window
    stall        start ... end: a thread held up before a call of the workflow, or a taker before
                 its queued copy (`Stalls`, a simulation's take stall); likewise
    lapse        observed: a lease the holder had on the workflow's row ended while it was held
                 up: a step it meant to take before the lease's end (a store call it reached, a
                 wake-up it slept until, a queued task the taker takes at once) came at or after
                 that end, read on its own clock after the step (`worker.py`). Args: the lease
                 (`run_after`) and when the holder meant to act (`meant`)
    store_error  a finishing write that failed in the store (nothing injects these today)

The holder notices a lapse itself, in a simulation and on a wall clock alike: that is the
measured stall, not a guess made from the trace. A lease that ends because the code planned no
step before its end (renewal off, or a bug that stops renewing or drops a task) is no fault and
no line is logged, so a line never pays for the bug it would hide; and a line whose lease was not
held, or whose step came in time (`meant` and its `now` on either side of `run_after`), is
rejected where it stands. A holder that never steps again after its lease lapsed (a stall ended
by a crash) notices nothing: the window its injector logged is what excuses that lapse.
"""

from __future__ import annotations

import threading
from typing import Any

# The fault lines of an engine trace (traces/systems/engine.yaml `faults:`).
KINDS = ("crash", "pause", "stall", "lapse", "store_error")
# Every line that is no store step: the faults and what a caller was told (`Node._told`).
LINE_OPS = (*KINDS, "answer")


def stall_line(node: Any, call: Any, outcome: str) -> None:
    """Log the window of `node`'s thread held up before `call` (a `Stalls` plan): `start` when
    the stall begins, `end` when the call is made at last, in the trace of the workflow the call
    acts on. A call that names no workflow logs nothing."""
    if getattr(call, "subject", ""):
        node.store.line(node.name, node.clock.now_ms, call.subject, "stall", outcome)


class Stalls:
    """A plan of injected stalls: the thread that is about to make a workflow's finishing
    write (`remove`, or the calls `ops` names for it) stalls first, once per workflow, for the planned time (a GC pause, a
    blocked thread, a slow disk between a handler's end and its last write).

    A stall past the lease lets another node lease the row; the stalled node's remove then
    meets that live holder and is refused (`lost`): a stale actor meeting a live one. Its
    driver logs the stall's window (`stall` start, and end when the call is made): its lease
    lapsed inside it. Thread-safe: every driver of a node asks it before each call.

    >>> s = Stalls({"wf1": 1500})
    >>> from impl.engine.effects import Call
    >>> [s.before(Call(lambda: None, "remove", "wf1")) for _ in range(2)], s.before(Call(lambda: None, "remove", "wf2"))
    ([1500, 0], 0)
    """

    ops = ("remove",)

    def __init__(self, plan: dict[str, int], ops: dict[str, tuple[str, ...]] | None = None) -> None:
        self._left = {wf: ms for wf, ms in plan.items() if ms > 0}
        # The calls a workflow's stall precedes, where not `ops` (a failing workflow's finishing
        # write is a retry or a dead letter, not a remove).
        self._ops = dict(ops or {})
        self._lock = threading.Lock()
        self.stalled: list[str] = []  # the workflows whose finishing thread stalled, in order

    def before(self, call: Any) -> int:
        """How long to stall before `call` (an `effects.Call`): its planned time once, else 0."""
        if not call.subject or call.label not in self._ops.get(call.subject, self.ops):
            return 0
        with self._lock:
            ms = self._left.pop(call.subject, 0)
            if ms:
                self.stalled.append(call.subject)
            return ms
