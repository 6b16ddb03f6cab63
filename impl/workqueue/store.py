"""The queue's store: one method per step of `tla/README.md` (Work queue table), each one Lua
script that commits the step and appends its trace event.

The same class runs on a real Redis server (real mode) and on fakeredis with a virtual clock
(simulation, see `sim_redis.py`): the twin runs the very same scripts. Keys live under one
prefix, so a test or a run owns its keys and can delete them.

Every step takes `now`, the calling node's clock; the event's `now` is read from the server's
clock inside the script instead (see `prelude.lua`: it is the clock idle times are measured
with). In simulation both are the same virtual clock; the caller's `now` also names explicit
stream ids there.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from typing import Any

import redis

from impl.workqueue import scripts
from impl.workqueue.errors import RedisUnreachable, StoreFault
from impl.workqueue.faults import FaultPlan

GROUP = "workers"


@dataclass(frozen=True)
class Delivery:
    """An entry handed to this consumer by `receive_new` or `reclaim`."""

    entry: str
    payload: str
    deliveries: int
    source: str  # "new" or "reclaim"
    cmd: str | None = None  # the command id, for a command layer's message


class Steps:
    """Runs named scripts on one Redis client under one key prefix, recording into one trace."""

    def __init__(self, client: Any, prefix: str, *, url: str = "redis", faults: FaultPlan | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self.url = url
        self.faults = faults or FaultPlan()
        self.trace_key = f"{prefix}:trace"
        # Every script's last key: a simulation's clock offset on a real server (prelude.lua).
        self.clock_key = clock_offset_key(prefix)
        self._scripts = {name: client.register_script(scripts.source(name)) for name in scripts.NAMES}

    def run(self, name: str, op: str, node: str, keys: list[str], args: list[Any], *, faults: bool = True) -> Any:
        """Run script `name` for step `op` by `node`, after any planned fault for it (unless the
        caller has handled the fault plan itself: `faults=False`). A planned fault that fires is
        logged first, as the fault line `<op>_fail` by `node`."""
        if faults:
            try:
                self.faults.check(op, node)
            except StoreFault:
                self.line(node, f"{op}_fail", "injected")
                raise
        try:
            return self._scripts[name](keys=[*keys, self.clock_key], args=args)
        except redis.exceptions.ConnectionError as exc:
            raise RedisUnreachable(
                f"Redis at {self.url} does not answer during {op}; start it or pass another --redis URL"
            ) from exc
        except redis.exceptions.TimeoutError as exc:
            raise StoreFault(f"{op} by {node} timed out at {self.url}; it may or may not have committed") from exc

    def line(self, node: str, op: str, outcome: str, *, late_ms: int | None = None,
             args: dict[str, Any] | None = None) -> None:
        """Append a trace line that no store step writes (`line.lua`), at the server's clock: a
        fault where it happened, by the node it hit (`op` a fault kind of tla/README.md, Work
        queue; `outcome` `injected`, `start`, `end` or `observed`; an observed window began
        `late_ms` before now: its args.since), or a consumer's `stop`."""
        self.run("line", op, node, [self.trace_key],
                 [node, op, outcome, "" if late_ms is None else int(late_ms),
                  json.dumps(args, sort_keys=True) if args else ""], faults=False)

    def events(self, start: int = 0) -> list[dict[str, Any]]:
        """Every recorded trace event so far (from the `start`-th on), in the server's commit order."""
        raw = self.client.lrange(self.trace_key, start, -1)
        return [normalise(json.loads(item)) for item in raw]

    def delete_keys(self) -> int:
        """Delete every key under this prefix (tests and runs clean up after themselves)."""
        keys = list(self.client.scan_iter(match=f"{self.prefix}:*", count=1000))
        return self.client.delete(*keys) if keys else 0


def clock_offset_key(prefix: str) -> str:
    """The key whose integer value (ms) the scripts add to the server's clock: absent (0) except
    in a simulation on a real server (`sim_redis.RedisTimeWarp`)."""
    return f"{prefix}:clock-offset-ms"


def normalise(value: Any) -> Any:
    """Lua numbers arrive as floats from some encoders; integral ones become ints again, and an
    empty Lua table (encoded as [] or {}) becomes {} so traces are byte-stable."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value] if value else {}
    return value


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class QueueStore(Steps):
    """One queue (stream + consumer group). Keeps the XAUTOCLAIM cursor per queue, so successive
    reclaims visit the whole pending-entries list round-robin.

    `explicit_ids`: give XADD ids `<now>-<n>` instead of `*`, so a simulation's ids come from the
    virtual clock (fakeredis would read `time.time()` for `*`).
    """

    def __init__(self, client: Any, prefix: str, queue: str = "jobs", *, url: str = "redis",
                 faults: FaultPlan | None = None, explicit_ids: bool = False) -> None:
        super().__init__(client, prefix, url=url, faults=faults)
        self.queue = queue
        self.stream = f"{prefix}:q:{queue}"
        self.explicit_ids = explicit_ids
        self._ids = itertools.count(1)
        self._cursor = "0-0"
        self._cursor_lock = threading.Lock()
        self.ensure_group()

    def ensure_group(self) -> None:
        """Create the stream and its consumer group if absent (from id 0: nothing offered is missed)."""
        try:
            self.client.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        except redis.exceptions.ConnectionError as exc:
            raise RedisUnreachable(
                f"Redis at {self.url} does not answer; start it or pass another --redis URL") from exc

    def _keys(self) -> list[str]:
        return [self.stream, self.trace_key]

    def offer(self, node: str, now: int, payload: str, cmd: str | None = None) -> str:
        """XADD one message; returns its entry id."""
        entry_id = f"{now}-{next(self._ids)}" if self.explicit_ids else "*"
        res = self.run("offer", "offer", node, self._keys(), [GROUP, node, now, entry_id, payload, cmd or ""])
        return _text(res)

    def receive_new(self, node: str, now: int) -> Delivery | None:
        """Deliver one never-delivered entry to `node`, or None."""
        res = self.run("receive_new", "receive_new", node, self._keys(), [GROUP, node, now])
        if not res:
            return None
        return Delivery(_text(res[0]), _text(res[1]), int(res[2]), "new", _text(res[3]) or None)

    def reclaim(self, node: str, now: int, visibility_timeout_ms: int) -> Delivery | None:
        """Take over one entry idle for at least the visibility timeout, or None."""
        with self._cursor_lock:
            res = self.run("reclaim", "reclaim", node, self._keys(),
                           [GROUP, node, now, visibility_timeout_ms, self._cursor])
            self._cursor = _text(res[0])
        if len(res) < 2:
            return None
        return Delivery(_text(res[1]), _text(res[2]), int(res[3]), "reclaim", _text(res[4]) or None)

    def renew(self, node: str, now: int, entry: str, *, check_owner: bool = True) -> bool:
        """Touch `entry` if `node` still owns it (XPENDING owner check + XCLAIM 0 JUSTID)."""
        return bool(self.run("touch", "renew", node, self._keys(),
                             [GROUP, node, now, entry, "renew", "1" if check_owner else "0"]))

    def release(self, node: str, now: int, entry: str, *, check_owner: bool = True) -> bool:
        """Touch a not-done entry once, owner-checked; it comes back after a visibility timeout."""
        return bool(self.run("touch", "release", node, self._keys(),
                             [GROUP, node, now, entry, "release", "1" if check_owner else "0"]))

    def ack(self, node: str, now: int, entry: str, cmd: str | None = None) -> bool:
        """XACK and XDEL in one step; False when the entry was no longer pending (a no-op).

        A planned `ack` fault aborts the step inside the script, which logs `ack failed` and
        commits nothing; then `StoreFault` is raised here, as a lost connection would be."""
        try:
            self.faults.check("ack", node)
            fail = "0"
        except StoreFault:
            fail = "1"
            self.line(node, "ack_fail", "injected")
        n = int(self.run("ack", "ack", node, self._keys(), [GROUP, node, now, entry, fail, cmd or ""], faults=False))
        if n < 0:
            raise StoreFault(f"injected fault: ack by {node} of {entry} did not commit")
        return n == 1

    def invoke_start(self, node: str, now: int, entry: str, outcome: str = "started") -> None:
        """Record that a handler invocation begins (`started`), or why it does not
        (`duplicate_dropped`, `rejected`)."""
        self.run("invoke", "invoke_start", node, self._keys(), [GROUP, node, now, entry, "invoke_start", outcome, ""])

    def invoke_end(self, node: str, now: int, entry: str, result: str) -> None:
        """Record that a handler invocation ended with `result` (`done`, `not_done`, `threw`)."""
        self.run("invoke", "invoke_end", node, self._keys(), [GROUP, node, now, entry, "invoke_end", "ended", result])

    def pending_owner(self, entry: str) -> str | None:
        """The entry's PEL owner now (a plain read: the first half of the later design's
        non-atomic renewal), or None if it is not pending."""
        rows = self.client.xpending_range(self.stream, GROUP, min=entry, max=entry, count=1)
        return _text(rows[0]["consumer"]) if rows else None

    def pending_count(self) -> int:
        """How many entries are delivered and not acked (for summaries and tests)."""
        return int(self.client.xpending(self.stream, GROUP)["pending"])

    def stream_length(self) -> int:
        """How many entries the stream holds (acked entries are deleted)."""
        return int(self.client.xlen(self.stream))
