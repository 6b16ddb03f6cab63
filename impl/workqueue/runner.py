"""`leaseproof workqueue run`: commands through consumers in separate processes, on a real Redis.

    parent: submit N commands (some twice) ─┐              ┌─ consumer process 1: Consumer + CommandProcessor
                                            ├─ Redis ──────┤
    parent: wait until all terminal, stop ─┘              └─ consumer process 2: ...
    parent: export the trace (ordered by Redis), print the summary

The handlers sometimes outlive the visibility timeout, throw, or answer not-done.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import threading
import time
from collections.abc import Callable
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis

from impl.clock import WallClock
from impl.workqueue import analysis, recording
from impl.workqueue.command_store import TERMINAL, CommandStore
from impl.workqueue.commands import CommandClient, CommandProcessor
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import Consumer
from impl.workqueue.errors import BadSettings, RedisUnreachable
from impl.workqueue.store import QueueStore


@dataclass(frozen=True)
class RunConfig:
    """What `workqueue run` does."""

    redis_url: str
    trace_dir: Path
    consumers: int = 2
    commands: int = 20
    duplicates: int = 2          # commands submitted twice
    seed: int = 0
    timeout_s: float = 60.0
    settings: Settings = field(default_factory=lambda: Settings(
        visibility_timeout_ms=400, max_processing_ms=600, concurrency=4, guard_ttl_ms=400,
        state_ttl_ms=3_600_000, poll_interval_ms=10))
    gates: Gates = field(default_factory=Gates)
    keep_keys: bool = False
    prefix: str = ""


class ChaosApp:
    """The external system of a run: answers after a short delay; sometimes it outlives the
    visibility timeout or throws (the delivery is then not done and comes back after a VT);
    and now and then the whole consumer stalls with it (`stall`: the heartbeat too, as in a
    long GC pause), so that a peer takes over and the stale attempt then meets the live one."""

    def __init__(self, rng: random.Random, vt_ms: int, stall: Callable[[float], None] | None = None) -> None:
        self.rng = rng
        self.vt_s = vt_ms / 1000
        self.stall = stall

    def call(self, cmd: str, payload: str) -> str:
        r = self.rng.random()
        if r < 0.08 and self.stall is not None:
            self.stall(self.vt_s * 3)  # past the VT and the guard TTL, heartbeat included
        elif r < 0.14:
            time.sleep(self.vt_s * 1.5)  # longer than the VT: the heartbeat must carry it
        elif r < 0.24:
            raise RuntimeError(f"external system failed on {cmd}")
        time.sleep(self.rng.uniform(0.0, 0.01))
        return "failed" if r > 0.95 else "succeeded"

    def check(self, cmd: str, payload: str) -> str:
        return "failed" if self.rng.random() < 0.05 else "succeeded"


def connect(url: str) -> Any:
    """A Redis client for `url`, checked with PING; `RedisUnreachable` (one line) if it fails."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=10)
        client.ping()
    except ValueError as exc:
        raise BadSettings(f"--redis {url!r} is not a Redis URL (expected redis://HOST:PORT/DB)") from exc
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise RedisUnreachable(
            f"Redis at {url} does not answer; start it or pass another --redis URL") from exc
    return client


def _consumer_process(url: str, prefix: str, name: str, settings: dict[str, Any], gates: dict[str, bool],
                      seed: int, stop: Any, ready: Any, counts: Any) -> None:
    client = redis.Redis.from_url(url)
    st, gt = Settings(**settings), Gates(**gates)
    queue = QueueStore(client, prefix, url=url)
    cstore = CommandStore(client, prefix, url=url)
    clock = WallClock()
    stalls = Stalls()
    proc = CommandProcessor(cstore, name, clock, st, gt, ChaosApp(random.Random(seed), st.visibility_timeout_ms,
                                                                  stalls.stall))
    consumer = Consumer(queue, name, proc.handle, settings=st, gates=gt, clock=clock)
    stalls.consumer = consumer
    consumer.start()
    ready.set()
    stop.wait()
    consumer.close(timeout_s=30)
    # The executor's rejections (a saturated executor: a permit given back just before its
    # thread ends): not injected, but a fault the trace spec must be given a budget for; and
    # the injected stalls, one lapse per invocation each may have left without renewals.
    counts.put((name, consumer.node.stats["rejected"], stalls.lapses))


class Stalls:
    """Injected stalls of one consumer process: while any handler stalls, the heartbeat is
    paused; `lapses` counts the invocations each stall may have let lapse (the header's
    `faults.heartbeat_lag`: a hidden step the trace spec is given a budget for)."""

    def __init__(self) -> None:
        self.consumer: Consumer | None = None
        self.lapses = 0
        self._depth = 0
        self._lock = threading.Lock()

    def stall(self, seconds: float) -> None:
        """Stall this handler and the heartbeat for `seconds` (of wall time: a real pause)."""
        assert self.consumer is not None
        with self._lock:
            self._depth += 1
            self.lapses += len(self.consumer.node.active)
            self.consumer.heartbeat_paused.set()
        try:
            time.sleep(seconds)
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self.consumer.heartbeat_paused.clear()
        # The call itself goes on a little after the pause: the heartbeat that resumed renews
        # first, and learns what the peer took over (a lost renewal, a lost guard).
        time.sleep(2 * self.consumer.settings.heartbeat_interval_ms / 1000)


def run(config: RunConfig) -> dict[str, Any]:
    """Run the commands through `config.consumers` processes; returns the summary (with the
    trace path). Raises `RedisUnreachable` when Redis does not answer."""
    if config.consumers < 1 or config.commands < 1:
        raise BadSettings("--consumers and --commands must be at least 1")
    client = connect(config.redis_url)
    prefix = config.prefix or f"lp-run-{uuid.uuid4().hex[:8]}"
    queue = QueueStore(client, prefix, url=config.redis_url)
    cstore = CommandStore(client, prefix, url=config.redis_url)
    names = [f"consumer-{i + 1}" for i in range(config.consumers)]
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    counts = ctx.Queue()
    procs, readies = [], []
    try:
        for i, name in enumerate(names):
            ready = ctx.Event()
            p = ctx.Process(target=_consumer_process, daemon=True,
                            args=(config.redis_url, prefix, name, asdict(config.settings),
                                  config.gates.as_dict(), config.seed * 1000 + i, stop, ready, counts))
            p.start()
            procs.append(p)
            readies.append(ready)
        for ready in readies:
            ready.wait(30)
        client_api = CommandClient(queue, cstore, "client", WallClock(), config.settings, config.gates)
        cmds = [f"cmd-{i}" for i in range(config.commands)]
        t0 = time.monotonic()
        for i, c in enumerate(cmds):
            client_api.submit(c, f"payload-{c}")
            if i < config.duplicates:
                client_api.submit(c, f"payload-{c}")  # a duplicate submission: a second entry, at once
        deadline = t0 + config.timeout_s
        while time.monotonic() < deadline:
            if queue.stream_length() == 0 and all(cstore.status(c) in TERMINAL for c in cmds):
                break
            time.sleep(0.05)
        elapsed = time.monotonic() - t0
    finally:
        stop.set()
        rejected = lapses = 0
        for _ in procs:
            try:
                _, r, lapsed = counts.get(timeout=40)
            except Exception:  # a consumer that died reports nothing; its lines still show
                break
            rejected, lapses = rejected + r, lapses + lapsed
        for p in procs:
            p.join(40)
            if p.is_alive():
                p.terminate()
    statuses = {c: cstore.status(c) or "MISSING" for c in cmds}
    external = {c: cstore.external_calls(c) for c in cmds}
    # A run injects no crash, failed ack or offer (the fault plan stays empty), only stalls,
    # and its consumers close only after every command is terminal and the stream empty: the
    # header counts the executors' rejections and the stalls' lapses; any other lag the trace
    # needs must show in its own clock (settings.wall_clock, see tla/TraceWorkQueue.tla).
    faults = recording.fault_counts(queue, reject=rejected, heartbeat_lag=lapses)
    lagged = ["heartbeat_lag"] if lapses else []
    trace_path = recording.export(Path(config.trace_dir) / f"command-run-{prefix}.ndjson", queue, system="command",
                                  settings=config.settings, gates=config.gates, nodes=["client", *names],
                                  run=f"workqueue run {prefix}", features=["handler_throws", *lagged], faults=faults)
    queue_path = recording.export(Path(config.trace_dir) / f"workqueue-run-{prefix}.ndjson", queue, system="workqueue",
                                  settings=config.settings, gates=config.gates, nodes=["client", *names],
                                  run=f"workqueue run {prefix} (queue view)", features=lagged, faults=faults)
    events = queue.events()
    out = analysis.summary(events, statuses, external)
    out["seconds"] = round(elapsed, 3)
    out["commands_per_s"] = round(out["commands_done"] / elapsed, 1) if elapsed > 0 else None
    out["left_in_stream"] = queue.stream_length()
    out["trace"] = str(trace_path)
    out["queue_trace"] = str(queue_path)
    # A stall lets its invocations' leases lapse, and a peer may then run the same entry while
    # the stale call still runs: the known limit of leases, at most once per lapse injected.
    # (An overlap of two holders is what the trace check rejects, whatever the count.)
    out["lapses_injected"] = lapses
    out["ok"] = (out["duplicate_invocations"] <= lapses and out["commands_done"] == config.commands
                 and out["terminal_changes"] == 0 and out["external_calls"]["unexplained_repeats"] == 0)
    if not config.keep_keys:
        queue.delete_keys()
    client.close()
    return out
