"""Running a taken task: the handler with lease renewal, then `finish_task`.

    run_start --(handler: sleep, renew, sleep, renew ...)--> run_end --> remove
        ^                                                                  |
        +------------- rerun: the remove found our lease bumped -----------+

`finish_task` removes the row at the version held. On a mismatch it reads the row: gone means
it was removed elsewhere; the same `run_after` as held means an honoured, bumping schedule
recorded a rerun on our lease, so the task runs again at once; a different `run_after` means
our lease was lost, and the row is left to whoever holds it. Up to `max_finish_attempts` runs.

A renewal can meet the same bump: the row's version moved but its `run_after` is still ours.
The reference's `renewLease` fails there and the run goes on unrenewed, so a handler that
outlives its lease then overlaps a fetch on another node. With `Gates.renew_adopts_rerun`
(this engine's default) the run renews at the row's new version and remembers that a rerun is
owed; instead of removing the row, it runs again at once.

The worker logs a `lapse` line (`faults.py`) when its lease ended while it was held up: a step
it meant to take before the lease's end (a store call it reached, a wake-up it slept until, a
queued task the taker takes at once) happened at or after that end (a pause, a stall, a slow
commit), so that `tla/TraceEngine.tla` may let that lease lapse. A lease that ends because the
code planned no step before it (renewal off, or a bug that stops renewing or drops the task) is
not a fault and no line is logged: the trace check then says which lease was not kept. The store logs the held `run_after` (`held_run_after`) on every finishing write and
renewal: it is what tells a rerun from a lost lease.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from impl.engine import decide
from impl.engine.effects import Call, Fiber, Sleep
from impl.engine.model import COMPLETED, FAILED, Task
from impl.engine.queue import QueuedTask
from impl.engine.workflows import RunContext, Step

if TYPE_CHECKING:
    from impl.engine.node import Node


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _lapsed(node: Node, held: Task, meant: int) -> None:
    """Count a lapse if `held`'s lease ended between `meant` (when the code meant to act) and now.

    Read after the step, so a step that committed in time but returned late counts too: the
    count may be high, never low, which is the side a budget may err on.
    """
    if meant < held.run_after <= node.clock.now_ms():
        node.lapse(held.task_id, held.run_after, meant)


def _step(node: Node, held: Task, call: Any, label: str, meant: int | None = None) -> Fiber[Any]:
    """One store call on `held`'s lease (meant for now, or for `meant`), counting a lapse."""
    at = node.clock.now_ms() if meant is None else meant
    value = yield Call(call, label, held.task_id)
    _lapsed(node, held, at)
    return value


def run_task(node: Node, item: QueuedTask) -> Fiber[None]:
    """Run `item` on `node` until its row is removed, retried, dead-lettered or lost."""
    s, store, now = node.settings, node.store, node.clock.now_ms
    held: Task = item.task
    wf = held.task_id
    # A queued task is meant to run at once: from its write (its lease began then).
    meant: int | None = held.run_after - store.lease_ms
    for _ in range(s.max_finish_attempts):
        version = held.version
        inst = yield from _step(
            node, held, lambda: store.run_start(node.name, now, wf, item.source, version), "run_start", meant
        )
        meant = None
        node.monitor.begin(wf, node.name)
        try:
            step, duration = _handler(node, inst, held)
            held, rerun_owed = yield from _work(node, held, duration)
            result = step.result if step is not None else "failed"
            state = _json(step.state) if step is not None else ""
            value = _json(step.value) if step is not None and step.result == "completed" else None
            inst_version = inst.version if inst is not None else 0
            saved = yield from _step(
                node, held, lambda: store.run_end(node.name, now, wf, inst_version, result, state, value), "run_end"
            )
            # The finishing write is meant for now: a read for the callers (_answer_from_store)
            # that keeps it past the lease's end is a lapse (on a loaded MariaDB such a read
            # waited seconds, and the remove then came after the lease with none counted).
            ended = now()
        finally:
            node.monitor.end(wf, node.name)
        if result == "completed" and saved == "saved" and step is not None:
            node.complete(wf, step.value)
        elif result == "completed" and step is not None:
            # The save conflicted. If another run finished the workflow, this node's callers
            # awaiting their future would wait forever (a copy that ran late): answer them
            # from the store (AnswerFromStore in tla/Engine.tla).
            yield from _answer_from_store(node, wf)
        if result == "failed":
            yield from _retry_or_fail(node, held)
            return
        if rerun_owed:
            continue
        h = held
        outcome, row = yield from _step(
            node, h, lambda: store.remove(node.name, now, h.key, h.version, h.run_after), "remove", ended
        )
        if outcome != "rerun" or row is None:
            return  # removed; removed elsewhere; or our lease was lost and the row is not ours
        held = row


def _answer_from_store(node: Node, wf: str) -> Fiber[None]:
    """Complete (or fail) this node's futures for `wf` from its stored result, if terminal."""
    from impl.engine.node import WorkflowFailed

    inst = yield Call(lambda: node.store.get_instance(wf), "read_instance")
    if inst is not None and inst.status == COMPLETED:
        node.complete(wf, json.loads(inst.result) if inst.result is not None else None, source="store")
    elif inst is not None and inst.status == FAILED:
        node.fail(wf, WorkflowFailed(f"workflow {wf!r} failed"), source="store")


def _handler(node: Node, inst: Any, held: Task) -> tuple[Step | None, int]:
    """The workflow function's step (None if it raised) and how long the handler runs."""
    if inst is None or inst.terminal:
        # Nothing to do: a stale delivery of a finished (or never created) workflow.
        state = json.loads(inst.state) if inst is not None else {}
        return Step("completed", state, json.loads(inst.result) if inst and inst.result else None), 0
    workflow = node.workflows.get(inst.workflow)
    state = json.loads(inst.state)
    duration = int(workflow.duration_ms(state))
    try:
        return workflow.run(state, RunContext(attempt=held.retry_count)), duration
    except Exception:  # a handler's failure is data: the run ends `failed` and is retried
        return None, duration


def _work(node: Node, held: Task, duration: int) -> Fiber[tuple[Task, bool]]:
    """Spend the handler's `duration`, renewing the lease whenever it would lapse within
    `renew_interval_ms` (as `Renew` in tla/Engine.tla: when the lease would lapse at the next
    tick, a tick being the renew interval)."""
    s, now = node.settings, node.clock.now_ms
    rerun_owed = False
    renewing = node.gates.automatic_lease_renewal
    end = now() + duration
    while True:
        # One reading of the clock per turn: reading it twice let a turn that began just
        # before `end` renew at `end` (the second reading had passed it), a renewal no
        # handler needs and one the spec's Renew does not allow.
        t = now()
        if t >= end:
            break
        wake = min(end, held.run_after - s.renew_interval_ms) if renewing else end
        if wake > t:
            yield Sleep(wake - t)
            _lapsed(node, held, wake)  # woke at or past the lease's end, meaning to act before it
            continue
        held, owed, renewing = yield from _renew(node, held)
        rerun_owed = rerun_owed or owed
    return held, rerun_owed


def _renew(node: Node, held: Task) -> Fiber[tuple[Task, bool, bool]]:
    """One renewal: the row now held, whether a rerun is owed, whether to keep renewing."""
    store, now = node.store, node.clock.now_ms
    outcome, row = yield from _step(
        node, held, lambda: store.renew(node.name, now, held.key, held.version, held.run_after), "renew"
    )
    if outcome == "renewed" and row is not None:
        return row, False, True
    if node.gates.renew_adopts_rerun and row is not None and decide.is_rerun_signal(row, held):
        # A rerun was recorded on our lease: adopt the row's version, and renew at it.
        adopted = row
        outcome, again = yield from _step(
            node, adopted, lambda: store.renew(node.name, now, held.key, adopted.version, adopted.run_after), "renew"
        )
        if outcome == "renewed" and again is not None:
            return again, True, True
        if again is not None and decide.is_rerun_signal(again, adopted):
            # Another rerun was recorded on our lease in between: adopt it too and renew on the
            # next turn (Renew in tla/Engine.tla adopts at each conflict), rather than stop
            # renewing and let the lease lapse under the run.
            return again, True, True
        return adopted, True, False
    return held, False, False  # the lease is not ours: stop renewing; the remove will say so


def _retry_or_fail(node: Node, held: Task) -> Fiber[None]:
    s, store, now = node.settings, node.store, node.clock.now_ms
    if decide.retries_exhausted(held, s.max_retries):
        yield from _mark_failed(node, held)
        return
    delay = decide.retry_delay_ms(held, s.retry_backoff_ms)
    yield from _step(
        node, held,
        lambda: store.reschedule_retry(node.name, now, held.key, held.version, delay_ms=delay,
                                       held_run_after=held.run_after),
        "reschedule_retry",
    )


def _mark_failed(node: Node, held: Task) -> Fiber[None]:
    store, now = node.store, node.clock.now_ms
    outcome, _ = yield from _step(
        node, held, lambda: store.mark_failed(node.name, now, held.key, held.version, held.run_after), "mark_failed"
    )
    if outcome == "failed":
        from impl.engine.node import WorkflowFailed

        node.fail(held.task_id, WorkflowFailed(f"workflow {held.task_id!r} failed after {held.retry_count} deliveries"))
