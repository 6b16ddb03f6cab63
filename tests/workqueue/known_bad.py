"""Record the known-bad work queue traces of traces/corpus/workqueue/rejected/: the real code
(the same Lua scripts, node and consumer) with one protecting behaviour broken IN THE CODE, while
every gate, and so the trace header, still says it is on, as a real regression would.

    PYTHONPATH=. python3 -m tests.workqueue.known_bad --out traces/corpus/workqueue/rejected
    PYTHONPATH=. python3 -m tests.workqueue.known_bad --out DIR --redis redis://127.0.0.1:6379/3

The bugs, each planted by a patch that lasts for one recording:

- `heartbeat-off`: the heartbeat runs but renews nothing (`QueueNode.heartbeat` returns at once).
- `renew-stops-at-max-processing`: the heartbeat stops renewing a call past max_processing_ms,
  ignoring the gate renew_past_max_processing (the old behaviour).
- `close-does-not-wait`: a closing node stops renewing its running calls at once, ignoring the
  gate close_waits_for_handlers (in simulation the close is `Simulation._heartbeats`; on a real
  server `Consumer.close`).
- `lag-logged-not-made` (simulation only): an over-counting recorder: the simulation logs a
  heartbeat lag's window (its start line) and makes no lag: the node's heartbeat runs on.
- `lag-window-ends-early` (simulation only): the simulation makes its lag but closes the lag's
  window at once (start and end lines together): the lease lapses outside the window.
- `permit-leak` (simulation only): a consumer gives no permit back after a handler that did
  not finish (`QueueNode._release_permit`): it takes less and less work while its peer drains
  the stream, and stops holding permits no call holds.

Simulations inject no other fault (no crash, lag, rejection or failed ack) and a close only where
the bug needs one, so the trace has no fault line to excuse a lapse with. The seeds are fixed:
the first seeds (from 0) whose run shows the bug (an entry reclaimed from under a running call).
The real-server recordings keep each consumer busy with short messages, so that the node whose
lease lapses goes on logging lines (a real run's stall shows only as the fault lines its own
threads log: a heartbeat round that ended late; tla/TraceWorkQueue.tla).
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from impl.workqueue import recording
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import Consumer
from impl.workqueue.core import Invocation
from impl.workqueue.node import QueueNode
from impl.workqueue.sim import SimConfig, Simulation, seeded

BUGS = ("heartbeat-off", "renew-stops-at-max-processing", "close-does-not-wait", "lag-logged-not-made",
        "lag-window-ends-early", "permit-leak")
SIM_ONLY = ("lag-logged-not-made", "lag-window-ends-early", "permit-leak")


# -- the planted bugs ---------------------------------------------------------------------------
def _no_heartbeat(self: QueueNode) -> None:
    return  # the bug: the heartbeat thread runs and renews nothing


def _renew_until_max_processing(self: QueueNode, inv: Invocation) -> None:
    if inv.lost:
        return
    now = self.now()
    if now - inv.started_ms > self.settings.max_processing_ms:
        return  # the bug: stops renewing at max_processing_ms whatever the gate says
    if not self._renew_entry(inv.entry, now):
        inv.lost = True
        self.stats["renew_refused"] += 1
    for renew in list(inv.renewers):
        renew()


def _sim_close_stops_heartbeat(self: Simulation, n: str) -> bool:
    return n not in self.closing  # the bug: a closing node stops renewing at once


def _close_without_waiting(self: Consumer, timeout_s: float = 30.0) -> bool:
    self._closed = True
    self._stop.set()
    if self._threads:
        self._threads[0].join(timeout_s)
    self._hb_stop.set()  # the bug: the heartbeat stops before the handlers have returned
    for t in self._threads[1:]:
        t.join(timeout_s)
    self.executor.wait_idle(timeout_s)
    self.node.store.line(self.name, "stop", "stopped", args={"permits_in_use": self.node.permits.in_use})
    return True


def _lag_logged_not_made(self: Simulation, n: str, *, takeover: bool) -> None:
    self.lags_used += 1
    self.queue.line(n, "heartbeat_lag", "start")  # the bug: a window logged for a lag not made
    st = self.config.settings
    self.elapse(max(st.visibility_timeout_ms, st.guard_ttl_ms) + st.heartbeat_interval_ms)  # n beats on


_make_lag = Simulation.pause_past_lease


def _lag_window_ends_early(self: Simulation, n: str, *, takeover: bool) -> None:
    real_line = self.queue.line

    def line(node: str, op: str, outcome: str, **kw: object) -> None:
        real_line(node, op, outcome, **kw)  # type: ignore[arg-type]
        if (node, op, outcome) == (n, "heartbeat_lag", "start"):
            real_line(node, op, "end")  # the bug: the window closes at once, the lag goes on

    self.queue.line = line  # type: ignore[method-assign]
    try:
        _make_lag(self, n, takeover=takeover)
    finally:
        del self.queue.line  # the instance's own line again


def _keeps_permit_of_undone(self: QueueNode, inv: Invocation, result: str) -> None:
    if result == "done":
        self.permits.release()  # the bug: a handler that did not finish keeps its permit


@contextlib.contextmanager
def planted(bug: str, real: bool = False) -> Iterator[None]:
    """The code with `bug` planted, for the duration of the block."""
    if bug == "heartbeat-off":
        patch = mock.patch.object(QueueNode, "heartbeat", _no_heartbeat)
    elif bug == "renew-stops-at-max-processing":
        patch = mock.patch.object(QueueNode, "_renew", _renew_until_max_processing)
    elif bug == "close-does-not-wait":
        patch = (mock.patch.object(Consumer, "close", _close_without_waiting) if real
                 else mock.patch.object(Simulation, "_heartbeats", _sim_close_stops_heartbeat))
    elif bug == "lag-logged-not-made":
        patch = mock.patch.object(Simulation, "pause_past_lease", _lag_logged_not_made)
    elif bug == "lag-window-ends-early":
        patch = mock.patch.object(Simulation, "pause_past_lease", _lag_window_ends_early)
    elif bug == "permit-leak":
        patch = mock.patch.object(QueueNode, "_release_permit", _keeps_permit_of_undone)
    else:
        raise ValueError(f"unknown bug {bug!r}; known: {BUGS}")
    with patch:
        yield


# -- simulation ---------------------------------------------------------------------------------
def sim_config(bug: str) -> SimConfig:
    """What the simulation of `bug` runs: long handlers (past VT and, for the max-processing bug,
    past max_processing_ms), a close for the close bug, heartbeat lags for the lag bugs, more
    messages for the leak; no other fault."""
    steps = 12 if bug == "renew-stops-at-max-processing" else 8
    lags = 2 if bug.startswith("lag-") else 0
    return SimConfig(system="workqueue", messages=6 if bug == "permit-leak" else 3, crashes=0, faults=0, lags=lags,
                     closes=1 if bug == "close-does-not-wait" else 0, handler_steps=steps)


def shows(sim: Simulation, bug: str = "") -> bool:
    """Whether a run shows the bug (from the trace): a renewal inside the logged lag window for
    `lag-logged-not-made`; a permit still held by a consumer that stopped, in a drained run, for
    `permit-leak`; else an entry reclaimed while the invocation it was taken from still runs."""
    if bug == "lag-logged-not-made":
        lagging: set[str] = set()
        for ev in sim.events:
            if ev["op"] == "heartbeat_lag":
                lagging.add(ev["node"])
            elif ev["op"] == "renew" and ev["node"] in lagging:
                return True
        return False
    if bug == "permit-leak":
        return sim.leftover == 0 and any(ev["op"] == "stop" and ev["args"]["permits_in_use"] for ev in sim.events)
    running: dict[str, set[str]] = {}
    for ev in sim.events:
        if ev["op"] == "invoke_start" and ev["outcome"] == "started":
            running.setdefault(ev["entry"], set()).add(ev["node"])
        elif ev["op"] == "invoke_end":
            running.get(ev["entry"], set()).discard(ev["node"])
        elif ev["op"] == "reclaim" and running.get(ev["entry"], set()) - {ev["node"]}:
            return True
    return False


def record_sim(bug: str, out: Path, first_seed: int = 0, tries: int = 200) -> tuple[Path, int]:
    """Record the first seed (from `first_seed`) whose run with `bug` planted shows it."""
    for seed in range(first_seed, first_seed + tries):
        with planted(bug):
            sim = seeded(sim_config(bug), seed)
            sim.run()
        if shows(sim, bug):
            name = f"sim-{bug}-seed{seed}.ndjson"
            return sim.write_trace(out / name, run=f"tests/workqueue/known_bad.py {bug} seed {seed}"), seed
    raise RuntimeError(f"no seed in {first_seed}..{first_seed + tries - 1} shows {bug}")


# -- a real server ------------------------------------------------------------------------------
REAL = Settings(visibility_timeout_ms=200, max_processing_ms=300, concurrency=4, fairness_ratio=3,
                guard_ttl_ms=200, state_ttl_ms=60_000, poll_interval_ms=10, heartbeat_ms=50)


# How long a handler runs, by payload (short ones: 40 ms). The `med-` ones are a's other calls
# at its close, ending one after the other (each within its lease): a closing node takes no new
# work, so without them it would log nothing while its long call's lease lapses, and a
# wall-clock trace would read that as a stall.
DURATION_S = {"long": 1.2, "med-1": 0.115, "med-2": 0.18, "med-3": 0.245}


def record_real(bug: str, out: Path, url: str) -> Path:
    """Record `bug` on the Redis at `url`: consumer a takes a long message (1.2 s, past VT and
    max_processing_ms) and a stream of short ones (so that it keeps logging); b starts later
    and reclaims the long one when its lease lapses. For the close bug a also takes three
    medium ones and closes at 120 ms."""
    import redis

    from impl.clock import WallClock
    from impl.workqueue.store import QueueStore

    client = redis.Redis.from_url(url)
    prefix = f"lp-known-bad-{uuid.uuid4().hex[:8]}"
    queue = QueueStore(client, prefix, url=url)
    clock = WallClock()
    calls: list[tuple[str, str]] = []

    def handler(name: str) -> Callable[[Invocation], bool]:
        def run(inv: Invocation) -> bool:
            calls.append((name, inv.payload))
            time.sleep(DURATION_S.get(inv.payload, 0.04))
            return True
        return run

    try:
        with planted(bug, real=True):
            queue.offer("producer", clock.now_ms(), "long")
            if bug == "close-does-not-wait":
                for k in (1, 2, 3):
                    queue.offer("producer", clock.now_ms(), f"med-{k}")
            a = Consumer(queue, "a", handler("a"), settings=REAL, gates=Gates(), clock=clock).start()
            stop = threading.Event()

            def produce() -> None:
                i = 0
                while not stop.is_set():
                    queue.offer("producer", clock.now_ms(), f"short-{i}")
                    i += 1
                    stop.wait(0.03)

            producer = threading.Thread(target=produce, daemon=True)
            producer.start()
            time.sleep(0.12)
            if bug == "close-does-not-wait":
                queue.line("a", "close", "injected")  # the recording closes a mid-call
                closer = threading.Thread(target=a.close, daemon=True)
                closer.start()
            b = Consumer(queue, "b", handler("b"), settings=REAL, gates=Gates(), clock=clock).start()
            time.sleep(1.3)
            stop.set()
            producer.join(2)
            deadline = time.monotonic() + 5
            while queue.stream_length() > 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            for c in (a, b):
                c.close(timeout_s=5)
        path = recording.export(out / f"real-redis-{bug}.ndjson", queue, system="workqueue", settings=REAL,
                                gates=Gates(), nodes=["producer", "a", "b"],
                                run=f"tests/workqueue/known_bad.py {bug} on {url}",
                                features=["close"] if bug == "close-does-not-wait" else [])
    finally:
        queue.delete_keys()
        client.close()
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--bug", choices=BUGS, action="append", help="default: all")
    p.add_argument("--redis", help="also record on this Redis (a URL); default: simulation only")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for bug in args.bug or BUGS:
        path, seed = record_sim(bug, args.out)
        print(f"{bug}: simulation seed {seed} -> {path}")
        if args.redis and bug not in SIM_ONLY:
            print(f"{bug}: real server -> {record_real(bug, args.out, args.redis)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
