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

# The ops of each view, as in the Work queue and Command layer tables of tla/README.md.
OPS = {
    "workqueue": frozenset({"offer", "receive_new", "reclaim", "renew", "invoke_start", "invoke_end",
                            "ack", "release"}),
    "command": frozenset({"submit_state", "offer", "guard_take", "guard_renew", "guard_release",
                          "put_if_owner", "external_call", "cancel", "receive_new", "reclaim", "ack"}),
}


# The hidden faults a run may inject, as the header's `faults` names them (and the system
# files' `faults:` list them): the trace specs take at most that many of each.
FAULT_KINDS = ("crash", "pause", "heartbeat_lag", "close", "ack_fail", "reject", "offer_fail")


def fault_counts(steps: Steps, **counted: int) -> dict[str, int]:
    """The header's `faults`: the store faults that fired (failed acks and offers, from the fault
    plan) plus the `counted` ones the caller injected itself (crashes, lags, closes, executor
    rejections); kinds with a count of 0 are left out (a kind left out counts 0)."""
    fired = steps.faults.fired
    counts = {"ack_fail": fired["ack"], "offer_fail": fired["offer"], **counted}
    unknown = sorted(set(counts) - set(FAULT_KINDS))
    if unknown:
        raise ValueError(f"unknown fault kind(s) {unknown}; known: {list(FAULT_KINDS)}")
    return {k: counts[k] for k in FAULT_KINDS if counts.get(k)}


def export(path: Path, steps: Steps, *, system: str, settings: Settings, gates: Gates,
           nodes: Iterable[str], run: str | None = None, features: Iterable[str] = (),
           faults: dict[str, int] | None = None) -> Path:
    """Write the `system` view (`workqueue` or `command`) of the trace recorded under `steps`'
    prefix to `path`. `faults`: the hidden faults the run injected, by kind (`fault_counts`);
    both views of one run carry the same counts."""
    if system not in OPS:
        raise ValueError(f"system must be one of {sorted(OPS)}, not {system!r}")
    events = [ev for ev in steps.events() if ev["op"] in OPS[system]]
    names = list(dict.fromkeys([*nodes, *(ev["node"] for ev in events)]))
    # A real server's `now` (a script's start, or the stamp it wrote) and the PEL stamps it
    # reads back are the server's own to the ms (prelude.lua), except a read that eight tries
    # could not pin to one millisecond: the header keeps 2 ms of slack for that, and the trace
    # spec allows that much (TraceWorkQueue's ClockSlack); a simulated server's clock does not
    # move within a step: held to the ms.
    # `wall_clock`: the times are a real clock's, where a process may stall with nothing
    # injected; TraceWorkQueue then allows a lag or stall the trace's own times show.
    simulated = type(steps.client).__module__.startswith("fakeredis")
    head = trace.header(system, gates=gates.as_dict(),
                        settings={**settings.as_dict(), "clock_slack_ms": 0 if simulated else 2,
                                  "wall_clock": not simulated, "drained": _drained(steps)},
                        nodes=names or ["none"], run=run, features=features)
    counts = {k: v for k, v in (faults or {}).items() if v}
    if counts:
        head["faults"] = dict(sorted(counts.items()))
    return trace.write(path, head, events)


def _drained(steps: Steps) -> bool:
    """Whether the queue's stream is empty at export: every entry offered was acked (acks delete
    entries). Read from Redis, not from the events, so that a trace that lost an ack does not
    agree with its header: the trace specs then require every entry acked and every command
    finished at the trace's end."""
    length = getattr(steps, "stream_length", None)
    return bool(length is not None and length() == 0)
