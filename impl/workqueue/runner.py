"""`leaseproof workqueue run`: commands through consumers in separate processes, on a real Redis.

    parent: submit N commands (some twice) ─┐              ┌─ consumer process 1: Consumer + CommandProcessor
                                            ├─ Redis ──────┤
    parent: wait until all terminal, stop ─┘              └─ consumer process 2: ...
    parent: export the trace (ordered by Redis), print the summary

The handlers sometimes outlive the visibility timeout, throw, or answer not-done, and a
consumer sometimes stalls until its peer has taken its command over (`chaos.py`), so that the
stale attempt meets the live one on every run.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import redis

from impl.clock import WallClock
from impl.workqueue import analysis, recording
from impl.workqueue.chaos import ChaosApp, Stalls, Takeover
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
    # A stall waits for a peer to take over, a few leases at most.
    takeover = Takeover(client, prefix, name, stalls, cstore.guard_owner, wait_s=20 * st.visibility_timeout_ms / 1000)
    proc = CommandProcessor(cstore, name, clock, st, gt, ChaosApp(random.Random(seed), st.visibility_timeout_ms,
                                                                  takeover))
    consumer = Consumer(queue, name, proc.handle, settings=st, gates=gt, clock=clock)
    consumer.after_finish = takeover.finished
    consumer.may_poll = takeover.may_poll
    stalls.consumer = consumer
    consumer.start()
    ready.set()
    stop.wait()
    consumer.close(timeout_s=30)
    # The executor's rejections (a saturated executor: a permit given back just before its
    # thread ends): not injected, but a fault the trace spec must be given a budget for; and
    # the injected stalls, one lapse per invocation each may have left without renewals.
    counts.put((name, consumer.node.stats["rejected"], stalls.lapses, takeover.meetings))


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
        rejected = lapses = meetings = 0
        for _ in procs:
            try:
                _, r, lapsed, met = counts.get(timeout=40)
            except Exception:  # a consumer that died reports nothing; its lines still show
                break
            rejected, lapses, meetings = rejected + r, lapses + lapsed, meetings + met
        for p in procs:
            p.join(40)
            if p.is_alive():
                p.terminate()
    statuses = {c: cstore.status(c) or "MISSING" for c in cmds}
    external = {c: cstore.external_calls(c) for c in cmds}
    # A run injects no crash, failed ack or offer (the fault plan stays empty), only stalls and
    # lags, each a window its consumer logged (chaos.Stalls); a heartbeat that ran late by
    # itself, or a hand-off started late, is logged by the consumer that saw it (consumer.py).
    lagged = ["heartbeat_lag"] if lapses else []
    trace_path = recording.export(Path(config.trace_dir) / f"command-run-{prefix}.ndjson", queue, system="command",
                                  settings=config.settings, gates=config.gates, nodes=["client", *names],
                                  run=f"workqueue run {prefix}", features=["handler_throws", *lagged])
    queue_path = recording.export(Path(config.trace_dir) / f"workqueue-run-{prefix}.ndjson", queue, system="workqueue",
                                  settings=config.settings, gates=config.gates, nodes=["client", *names],
                                  run=f"workqueue run {prefix} (queue view)", features=lagged)
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
    out["takeovers_met"] = meetings  # stalls that lasted until the peer held the command
    out["ok"] = (out["duplicate_invocations"] <= lapses and out["commands_done"] == config.commands
                 and out["terminal_changes"] == 0 and out["external_calls"]["unexplained_repeats"] == 0)
    if not config.keep_keys:
        queue.delete_keys()
    client.close()
    return out
