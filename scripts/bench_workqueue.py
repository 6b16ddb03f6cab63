#!/usr/bin/env python3
"""Messages per second through the reference work queue on a real Redis, with one and with two
consumer processes (trivial handler: done at once; every step recorded in the trace).

    python scripts/bench_workqueue.py --messages 2000 --redis redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
import uuid

import redis

from impl.clock import WallClock
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import Consumer
from impl.workqueue.runner import connect
from impl.workqueue.store import QueueStore

SETTINGS = Settings(visibility_timeout_ms=5_000, max_processing_ms=10_000, concurrency=4, poll_interval_ms=5)


def _consume(url: str, prefix: str, name: str, stop, ready) -> None:  # type: ignore[no-untyped-def]
    queue = QueueStore(redis.Redis.from_url(url), prefix, url=url)
    consumer = Consumer(queue, name, lambda inv: True, settings=SETTINGS, gates=Gates(), clock=WallClock()).start()
    ready.set()
    stop.wait()
    consumer.close(timeout_s=10)


def bench(url: str, messages: int, consumers: int) -> tuple[float, int]:
    """Seconds to drain `messages` pre-offered messages with `consumers` processes, and the
    number of trace events recorded."""
    client = connect(url)
    prefix = f"lp-bench-{uuid.uuid4().hex[:8]}"
    queue = QueueStore(client, prefix, url=url)
    clock = WallClock()
    for i in range(messages):
        queue.offer("producer", clock.now_ms(), f"m{i}")
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    readies = [ctx.Event() for _ in range(consumers)]
    t0 = time.perf_counter()
    procs = [ctx.Process(target=_consume, args=(url, prefix, f"c{i}", stop, readies[i]), daemon=True)
             for i in range(consumers)]
    for p in procs:
        p.start()
    for r in readies:
        r.wait(30)
    t_start = time.perf_counter()
    while queue.stream_length() > 0:
        time.sleep(0.005)
    elapsed = time.perf_counter() - t_start
    stop.set()
    for p in procs:
        p.join(20)
    events = client.llen(queue.trace_key)
    queue.delete_keys()
    return elapsed, events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = ap.parse_args()
    for n in (1, 2):
        secs, events = bench(args.redis, args.messages, n)
        print(f"{n} consumer(s): {args.messages} messages in {secs:.2f} s = {args.messages / secs:,.0f} msg/s "
              f"({events} trace events)")


if __name__ == "__main__":
    main()
