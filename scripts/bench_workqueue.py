#!/usr/bin/env python3
"""Messages per second through the reference work queue on a real Redis, beside the Redis limit
for the same work measured in the same run, with one and with two consumer processes.

    python scripts/bench_workqueue.py --messages 2000 --redis redis://127.0.0.1:6379/9

Both sides drain the same number of messages, offered beforehand with the queue's own `offer`
script (not timed), from the same number of processes:

- queue: `Consumer` processes (poller, heartbeat and handler threads; trivial handler, done at
  once), every step recorded as a trace event by its script;
- raw: one loop per process issuing, back to back, the scripts one message costs the queue
  (receive_new, invoke_start, invoke_end, ack: `store.QueueStore`, the same scripts with the same
  keys and arguments, so the same trace events), with no queue logic around them;
- raw xC: the same with C = `concurrency` loops (threads) per process, as many messages in flight
  as the queue may have. One loop waits out every round trip; the queue's poller and handlers
  overlap theirs, so on a loaded machine, where a round trip is mostly waiting for a core, the
  queue can pass the one-loop figure (ratio below 1): xC is the limit for that much overlap.

The rate is messages over the span of the run's trace, from its first step after the offers to
its last (the server's clock; process start-up is not counted). On a machine shared with other
jobs one drain's rate swings by 2x or more, so each side runs `--repeat` times, alternating raw
and queue, and the best of each is printed (the least disturbed run); `ratio` is raw / queue. The
queue's duplicates are invocations started while another of the same entry ran
(`analysis.duplicate_invocations`); with `--trace-dir` each queue run's trace is exported and
checked against its TLA+ spec (`python -m conformance.cli traces check`), and its verdict printed.

`--before DIR` also drains with the queue of another checkout (a `git worktree` of an older
commit: its consumer and Lua scripts), printed as `before` beside this one's `after`, against
the same raw limits (this checkout's scripts, measured once per repeat for both), alternating
the two queues, and with this checkout's trace check for both:

    git worktree add /tmp/old-queue d7743b9
    python scripts/bench_workqueue.py --before /tmp/old-queue

Each side runs in processes of its own (`--child`, started with the side's checkout first on
PYTHONPATH; each says which checkout it imported, and the run stops if it is the wrong one).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import redis

from impl.clock import WallClock
from impl.workqueue import analysis, recording
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import Consumer
from impl.workqueue.runner import connect
from impl.workqueue.store import QueueStore

SETTINGS = Settings(visibility_timeout_ms=5_000, max_processing_ms=10_000, concurrency=4, poll_interval_ms=5)
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    """One drain: its rate, what its trace recorded, and (queue runs) the trace's verdict."""

    messages: int
    seconds: float
    events: int
    duplicates: int
    rejected: int = 0
    trace: Path | None = None
    verdict: str = "-"

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else float("inf")


def child(kind: str, url: str, prefix: str, name: str, loops: int) -> int:
    """One process of a drain (`--child`): a `Consumer` ('queue') or `loops` raw script loops
    ('raw'). It says `ready` and the checkout its queue code came from, starts at the parent's
    `go` line, stops at its `stop` line (a raw loop also stops when the stream is empty), and
    prints {"rejected": n, "errors": n} as JSON."""
    import impl.workqueue

    store = QueueStore(redis.Redis.from_url(url), prefix, url=url)
    clock = WallClock()
    print("ready", Path(impl.workqueue.__file__).resolve().parents[2], flush=True)
    sys.stdin.readline()  # go
    if kind == "queue":
        consumer = Consumer(store, name, lambda inv: True, settings=SETTINGS, gates=Gates(), clock=clock)
        consumer.start()
        sys.stdin.readline()  # stop
        consumer.close(timeout_s=10)
        print(json.dumps({"rejected": consumer.node.stats["rejected"], "errors": len(consumer.errors)}), flush=True)
        return 0

    def loop() -> None:
        while (d := store.receive_new(name, clock.now_ms())) is not None:
            store.invoke_start(name, clock.now_ms(), d.entry, "started")
            store.invoke_end(name, clock.now_ms(), d.entry, "done")
            store.ack(name, clock.now_ms(), d.entry, d.cmd)

    threads = [threading.Thread(target=loop) for _ in range(loops)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.stdin.readline()  # stop
    print(json.dumps({"rejected": 0, "errors": 0}), flush=True)
    return 0


def _start(kind: str, url: str, prefix: str, name: str, loops: int, root: Path) -> subprocess.Popen:
    """A `--child` process with the checkout at `root` first on its path; returns once it is
    ready, having checked that it imported that checkout's queue."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", kind, url, prefix, name, str(loops)],
                            cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    words = proc.stdout.readline().split(maxsplit=1)
    if words[:1] != ["ready"] or Path(words[1].strip()) != root.resolve():
        proc.kill()
        raise SystemExit(f"a {kind} process for {root} did not start with that checkout's queue (it said {words!r})")
    return proc


def _say(proc: subprocess.Popen, line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def drain(url: str, messages: int, procs: int, kind: str, trace_dir: Path | None = None, loops: int = 1,
          root: Path = ROOT, prefix: str | None = None) -> Result:
    """Offer `messages`, then drain them with `procs` processes running `kind` ('queue', the
    queue of the checkout at `root`, or 'raw' with `loops` script loops per process), under the
    key prefix `prefix` (default: a new one); the rate is measured over the trace's span after
    the offers. The keys are deleted at the end."""
    client = connect(url)
    prefix = prefix or f"lp-bench-{kind}-{uuid.uuid4().hex[:8]}"
    queue = QueueStore(client, prefix, url=url)
    clock = WallClock()
    for i in range(messages):
        queue.offer("producer", clock.now_ms(), f"m{i}")
    names = [f"c{i + 1}" for i in range(procs)]
    workers: list[subprocess.Popen] = []
    try:
        for name in names:
            workers.append(_start(kind, url, prefix, name, loops, root))
    except BaseException:
        for p in workers:
            p.kill()
        queue.delete_keys()
        raise
    for p in workers:
        _say(p, "go")
    deadline = time.monotonic() + 600
    while queue.stream_length() > 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    rejected = errors = 0
    for p in workers:
        _say(p, "stop")
    for p in workers:
        out, _ = p.communicate(timeout=60)
        try:
            said = json.loads(out)
            rejected, errors = rejected + said["rejected"], errors + said["errors"]
        except (ValueError, KeyError, TypeError):
            errors += 1  # a process that died or printed no result
    events = queue.events()
    after = [ev["now"] for ev in events if ev["op"] != "offer"]
    seconds = (max(after) - min(after)) / 1000 if after else 0.0
    result = Result(messages, seconds, len(events), analysis.duplicate_invocations(events), rejected)
    if errors:
        result.verdict = f"{errors} consumer error(s)"
    if trace_dir is not None and kind == "queue":
        result.trace = recording.export(
            trace_dir / f"bench-workqueue-{procs}c-{prefix}.ndjson", queue, system="workqueue", settings=SETTINGS,
            gates=Gates(), nodes=["producer", *names], run=f"bench_workqueue {procs} consumer(s) {prefix}",
            faults=recording.fault_counts(queue, reject=rejected))
        result.verdict = check_trace(result.trace)
    if queue.stream_length() > 0:
        result.verdict = f"{queue.stream_length()} left in the stream"
    queue.delete_keys()
    client.close()
    return result


def check_trace(path: Path) -> str:
    """The trace's verdict from `leaseproof traces check` (run as the project's command line)."""
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "traces", "check", "--root", str(ROOT),
                           "--no-coverage", "--json", str(path)], capture_output=True, text=True, cwd=ROOT)
    try:
        verdicts = {v["verdict"] for v in json.loads(proc.stdout)["traces"]}
        return ",".join(sorted(verdicts))
    except (ValueError, KeyError, TypeError):
        return f"check failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-300:]}"


def _row(label: str, n: int, messages: int, q: Result, raw: Result, raw_c: Result, duplicates: int, rejected: int,
         verdicts: list[str], trace: Path | None) -> str:
    return (f"{label:<6} {n:>9} {messages:>8} {q.rate:>11,.0f} {raw.rate:>9,.0f} {raw.rate / q.rate:>6.2f} "
            f"{raw_c.rate:>12,.0f} {raw_c.rate / q.rate:>6.2f} "
            f"{q.events:>7} {duplicates:>4} {rejected:>8}  {'; '.join(verdicts)}" + (f" ({trace})" if trace else ""))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        kind, url, prefix, name, loops = argv[1:6]
        return child(kind, url, prefix, name, int(loops))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--consumers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--repeat", type=int, default=3, help="drains per side; the best of each is printed")
    ap.add_argument("--trace-dir", type=Path, default=None,
                    help="export each side's last queue drain's trace here and check it (leaseproof traces check)")
    ap.add_argument("--before", type=Path, default=None, metavar="DIR",
                    help="also drain with the queue of the checkout at DIR, printed as before beside after")
    args = ap.parse_args(argv)
    if args.trace_dir is not None:
        args.trace_dir.mkdir(parents=True, exist_ok=True)
    sides = [("after", ROOT)] if args.before is None else [("before", args.before.resolve()), ("after", ROOT)]
    c = SETTINGS.concurrency
    print(f"best of {args.repeat} drains per side; dups and rejected summed over the queue's drains"
          + (f"; before: {sides[0][1]}, after: {ROOT}" if args.before is not None else ""))
    print(f"{'side':<6} {'consumers':>9} {'messages':>8} {'queue msg/s':>11} {'raw msg/s':>9} {'ratio':>6} "
          f"{f'raw x{c} msg/s':>12} {'ratio':>6} {'events':>7} {'dups':>4} {'rejected':>8}  trace")
    ok = True
    for n in args.consumers:
        raws, raws_c = [], []
        queues: dict[str, list[Result]] = {label: [] for label, _ in sides}
        for i in range(args.repeat):
            raws.append(drain(args.redis, args.messages, n, "raw"))
            raws_c.append(drain(args.redis, args.messages, n, "raw", loops=c))
            for label, root in sides:
                # Only the last queue drain's trace is exported and checked (a check takes
                # longer than a drain); every drain's duplicates count.
                queues[label].append(drain(args.redis, args.messages, n, "queue",
                                           args.trace_dir if i == args.repeat - 1 else None, root=root))
        raw = max(raws, key=lambda r: r.rate)
        raw_c = max(raws_c, key=lambda r: r.rate)
        for label, _ in sides:
            runs = queues[label]
            q = max(runs, key=lambda r: r.rate)
            duplicates = sum(r.duplicates for r in runs)
            rejected = sum(r.rejected for r in runs)
            # The last drain's verdict (its trace's), then any other drain's trouble.
            verdicts = [runs[-1].verdict, *(r.verdict for r in runs[:-1] if r.verdict != "-")]
            ok = ok and duplicates == 0 and all(v in ("-", "accepted") for v in verdicts)
            print(_row(label, n, args.messages, q, raw, raw_c, duplicates, rejected, verdicts, runs[-1].trace), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
