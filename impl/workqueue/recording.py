"""Exporting a run's trace: the events the scripts appended to the Redis trace list (already in
commit order), with a header, as NDJSON through `impl.trace.write`.

A command run records one list holding both layers' steps; it is exported as two views:
`workqueue` (the queue's ops: every delivery, invocation, renewal, ack) and `command` (the
command layer's ops and the deliveries and acks of its messages, which is what
`CommandQueue.tla` explains: its queue is abstract, with no invocations or renewals).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from impl import trace
from impl.workqueue.config import Gates, Settings
from impl.workqueue.store import Steps

# The fault lines a run logs (`Steps.line`), where each fault happened, by the node it hit:
# the system files' `faults:`; the trace specs excuse a hidden step only where one says so.
FAULT_KINDS = ("crash", "close", "heartbeat_lag", "pause", "stall", "reject", "ack_fail", "offer_fail")
# The lines no store step writes: the fault lines and a consumer's `stop`; they name no entry.
LINE_OPS = frozenset({*FAULT_KINDS, "stop"})

# The ops of each view, as in the Work queue and Command layer tables of tla/README.md; both
# views carry every fault line, and a consumer's `stop`.
OPS = {
    "workqueue": frozenset({"offer", "receive_new", "reclaim", "renew", "invoke_start", "invoke_end",
                            "ack", "release", *LINE_OPS}),
    "command": frozenset({"submit_state", "offer", "guard_take", "guard_renew", "guard_release",
                          "put_if_owner", "external_call", "cancel", "receive_new", "reclaim", "ack",
                          *LINE_OPS}),
}


def export(path: Path, steps: Steps, *, system: str, settings: Settings, gates: Gates,
           nodes: Iterable[str], run: str | None = None, features: Iterable[str] = ()) -> Path:
    """Write the `system` view (`workqueue` or `command`) of the trace recorded under `steps`'
    prefix to `path`. The faults of the run are lines of it (`Steps.line`), not header counts."""
    if system not in OPS:
        raise ValueError(f"system must be one of {sorted(OPS)}, not {system!r}")
    events = [ev for ev in steps.events() if ev["op"] in OPS[system]]
    names = list(dict.fromkeys([*nodes, *(ev["node"] for ev in events)]))
    # A real server's `now` (a script's start, or the stamp it wrote) and the PEL stamps it
    # reads back are the server's own to the ms (prelude.lua), except a read that eight tries
    # could not pin to one millisecond: the header keeps 2 ms of slack for that, and the trace
    # spec allows that much (TraceWorkQueue's ClockSlack); a simulated server's clock does not
    # move within a step: held to the ms.
    # A real clock buys nothing here: a process that stalls unannounced shows it only through
    # the fault lines its own threads log (a heartbeat that woke late, consumer.py).
    simulated = type(steps.client).__module__.startswith("fakeredis")
    head = trace.header(system, gates=gates.as_dict(),
                        settings={**settings.as_dict(), "clock_slack_ms": 0 if simulated else 2,
                                  "drained": _drained(steps)},
                        nodes=names or ["none"], run=run, features=features)
    return trace.write(path, head, events)


def _drained(steps: Steps) -> bool:
    """Whether the queue's stream is empty at export: every entry offered was acked (acks delete
    entries). Read from Redis, not from the events, so that a trace that lost an ack does not
    agree with its header: the trace specs then require every entry acked and every command
    finished at the trace's end."""
    length = getattr(steps, "stream_length", None)
    return bool(length is not None and length() == 0)
