"""Watching the fence: a write of a task row for a lease that a later grant superseded.

Engine.tla's `LeaseFenced`, read from the committed events alone (the replay's monitor for it).
A lease is named by what its holder sends with each write: the version it holds and the
`run_after` it was given (`held_run_after`). A grant starts a lease: a fetch, or a schedule that
queued its copy; a row inserted or overwritten with no copy is granted to nobody until a fetch.
The holder's renewal moves its lease on, and a bump (a rerun recorded on the lease) adds the
row's new version to it; a finish ends it. A renewal, remove, retry or dead letter that commits
for a lease not current is a stale write: the version check let through a holder it was meant
to stop (the seed's ABA, with versions that start again at 1; or a new row landing on a stale
lease's end: `lease_faults_rerun_on_new_row`).
"""

from __future__ import annotations

from collections.abc import Iterable

from impl.engine.model import Event

Lease = tuple[int, int]  # (version, run_after)

_WRITES = {("renew", "renewed"), ("remove", "removed"), ("reschedule_retry", "rescheduled"),
           ("mark_failed", "failed")}
_ENDS = {"remove", "reschedule_retry", "mark_failed"}


def _row(e: Event) -> Lease | None:
    task = e.state.get("task")
    if not task:
        return None
    return int(task["version"]), int(task["run_after"])


def stale_write(events: Iterable[Event]) -> str | None:
    """The first committed write of a task row for a superseded lease, described; None if none.

    >>> ev = lambda op, out, v, ra, args=None: Event(0, "w", 0, "n1", op, 0, args or {}, out,
    ...     {"task": {"version": v, "run_after": ra}})
    >>> stale_write([ev("fetch", "leased", 2, 10), ev("renew", "renewed", 3, 20,
    ...     {"task_version": 2, "held_run_after": 10})]) is None
    True
    >>> stale_write([ev("schedule", "inserted", 4, 10), ev("renew", "renewed", 5, 20,
    ...     {"task_version": 4, "held_run_after": 10})])
    'event 2: n1 renew renewed for the lease (4, 10), which is not the current one (none)'
    """
    current: dict[str, set[Lease]] = {}
    for i, e in enumerate(events, 1):
        row = _row(e)
        leases = current.setdefault(e.wf, set())
        if (e.op, e.outcome) in _WRITES:
            held = (int(e.args["task_version"]), int(e.args["held_run_after"]))
            if held not in leases:
                now = ", ".join(str(le) for le in sorted(leases)) or "none"
                return (f"event {i}: {e.node} {e.op} {e.outcome} for the lease {held}, "
                        f"which is not the current one ({now})")
        if e.op == "fetch" and e.outcome == "leased" and row:
            current[e.wf] = {row}
        elif e.op in ("schedule", "schedule_in_memory") and row:
            if e.outcome in ("inserted", "overwritten"):
                current[e.wf] = {row} if e.args.get("queued") else set()
            elif e.outcome == "bumped":
                leases.add(row)  # the rerun recorded on the lease: the holder adopts it
            elif e.args.get("queued"):
                current[e.wf] = leases | {row}  # a copy queued on an honoured lease (HonourCheck off)
        elif (e.op, e.outcome) == ("renew", "renewed") and row:
            leases.add(row)
        elif e.op in _ENDS and (e.op, e.outcome) in _WRITES:
            current[e.wf] = set()
    return None
