"""Known-bad command traces, recorded from the real command layer with one protecting behaviour
broken in the code (not by a gate: the header still says every gate is on, as a regression
would). Each plant is a small monkeypatch or a scratch Lua script, applied only while one run
records:

    no_nx          guard_take.lua without NX: a second delivery takes a held guard over
    short_ttl      the guard TTL check skipped (commands.check_guard_ttl): a guard TTL below
                   the heartbeat period is accepted, and a live attempt's guard lapses
                   between two renewals
    stale_call     external_call.lua without its owner check: an attempt whose guard lapsed
                   (or passed to another) still calls the remote

`simulate(plant, seed, out)` records one seeded simulation (fakeredis, virtual clock) with the
plant in; `record_real(plant, out, url)` the same plant on a real Redis (two consumers in this
process). `CORPUS` names the seeds that show each bug. The corpus traces under traces/corpus/command/rejected/ were written by

    PYTHONPATH=. python3 tests/workqueue/known_bad_commands.py traces/corpus/command/rejected \
        --redis redis://127.0.0.1:6379/4

(the real-Redis runs differ from run to run; the simulated ones are byte for byte the same)

and tests/workqueue/test_known_bad_commands.py checks that each is rejected at its line,
naming the property or field (see traces/corpus/command/README.md).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from impl.workqueue import commands, scripts
from impl.workqueue.sim import SIM_SETTINGS, SimConfig, seeded

# The scripts as the regression would have them (everything else as in impl/workqueue).
SCRATCH_LUA = {
    "no_nx": ("guard_take", """
-- A regression: SET without NX takes the guard whoever holds it.
local ok = redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
local outcome = ok and 'taken' or 'busy'
record(KEYS[4], ARGV[1], ARGV[2], 'guard_take', outcome, cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4], ttl_ms = tonumber(ARGV[5])}})
return outcome
"""),
    "stale_call": ("external_call", """
-- A regression: the call is recorded (and made) without checking the guard's owner.
local n = redis.call('INCR', KEYS[3])
record(KEYS[4], ARGV[1], ARGV[2], 'external_call', 'called', cmd_state(KEYS[1], KEYS[2], KEYS[3]),
       {cmd = ARGV[3], args = {attempt = ARGV[4], key = ARGV[3]}})
return n
"""),
}

PLANTS = ("no_nx", "short_ttl", "stale_call")

# short_ttl: a guard TTL below the heartbeat period (100 ms in simulation).
SHORT_TTL = replace(SIM_SETTINGS, guard_ttl_ms=80)



@contextlib.contextmanager
def planted(plant: str) -> Iterator[None]:
    """Break one protecting behaviour of the command layer while the block runs."""
    if plant not in PLANTS:
        raise ValueError(f"unknown plant {plant!r}; known: {', '.join(PLANTS)}")
    saved: list[tuple[Any, str, Any]] = []
    try:
        if plant in SCRATCH_LUA:
            name, body = SCRATCH_LUA[plant]
            real = scripts.source

            def source(n: str) -> str:
                if n == name:
                    return (scripts.HERE / "prelude.lua").read_text(encoding="utf-8") + "\n" + body
                return real(n)

            saved.append((scripts, "source", real))
            scripts.source = source  # type: ignore[assignment]
        else:  # short_ttl: the old code accepted any guard TTL
            saved.append((commands, "check_guard_ttl", commands.check_guard_ttl))
            commands.check_guard_ttl = lambda settings: None  # type: ignore[assignment]
        yield
    finally:
        for mod, attr, value in reversed(saved):
            setattr(mod, attr, value)


def config(plant: str) -> SimConfig:
    """The simulation a plant records in: no hidden fault at all for no_nx and short_ttl (so no
    stall can explain a lapse), heartbeat lags for stale_call (a guard must lapse under a live
    attempt first)."""
    quiet = dict(system="command", crashes=0, faults=0, lags=0, closes=0)
    if plant == "no_nx":
        return SimConfig(**quiet, duplicate_submits=2)
    if plant == "short_ttl":
        return SimConfig(**quiet, settings=SHORT_TTL)
    return SimConfig(system="command", crashes=0, faults=0, lags=2, closes=0)


def simulate(plant: str, seed: int, out: Path, name: str | None = None) -> Path:
    """Record the command view of one seeded simulation with `plant` in the code."""
    with planted(plant):
        sim = seeded(config(plant), seed)
        sim.run()
        return sim.write_trace(out / (name or f"sim-{plant}-seed{seed}.ndjson"),
                               run=f"known bad {plant}: workqueue sim --system command, seed {seed}")


def record_real(plant: str, out: Path, url: str, name: str | None = None) -> Path:
    """Record `plant` on a real Redis at `url`: two consumers (threads of this process) on one
    queue, two submissions of one command and a remote slower than the guard TTL, so that a
    second delivery meets a guard held (no_nx), a guard lapses under a live attempt
    (short_ttl), or a stale attempt reaches its call (stale_call, after a pause of its node,
    heartbeat included, past the TTL, which the trace's real clock shows)."""
    import uuid

    import redis

    from impl.clock import WallClock
    from impl.workqueue import recording
    from impl.workqueue.command_store import CommandStore
    from impl.workqueue.commands import CommandClient, CommandProcessor
    from impl.workqueue.config import Gates, Settings
    from impl.workqueue.consumer import Consumer
    from impl.workqueue.store import QueueStore

    settings = Settings(visibility_timeout_ms=600, max_processing_ms=2000, concurrency=2, fairness_ratio=3,
                        guard_ttl_ms=300, state_ttl_ms=60_000, poll_interval_ms=10, heartbeat_ms=100)
    if plant == "short_ttl":
        settings = replace(settings, guard_ttl_ms=80)
    slow_s = 0.5

    class SlowApp:
        def call(self, cmd: str, payload: str) -> str:
            time.sleep(slow_s)
            return "succeeded"

        def check(self, cmd: str, payload: str) -> str:
            return "succeeded"

    client = redis.Redis.from_url(url)
    prefix = f"lp-known-bad-{plant}-{uuid.uuid4().hex[:6]}"
    queue = QueueStore(client, prefix, url=url)
    cstore = CommandStore(client, prefix, url=url, faults=queue.faults)
    clock = WallClock()
    gates = Gates()
    consumers = []
    once: list[bool] = []  # stale_call: whether a node has paused already
    with planted(plant):
        try:
            for n in ("n1", "n2"):
                store = CommandStore(client, prefix, url=url)
                proc = CommandProcessor(store, n, clock, settings, gates, SlowApp())
                consumer = Consumer(QueueStore(client, prefix, url=url), n, proc.handle,
                                    settings=settings, gates=gates, clock=clock)
                if plant == "stale_call":
                    _pause_before_the_call(store, consumer, once, pause_s=2 * settings.visibility_timeout_ms / 1000)
                consumers.append(consumer.start())
            api = CommandClient(queue, cstore, "client", clock, settings, gates)
            api.submit("c1", "p")
            api.submit("c1", "p")  # a second entry of the same command, delivered at once
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not (queue.stream_length() == 0 and cstore.status("c1") == "SUCCEEDED"):
                time.sleep(0.05)
        finally:
            for c in consumers:
                c.close(timeout_s=5)
        path = recording.export(out / (name or f"real-redis-{plant}.ndjson"), queue, system="command",
                                settings=settings, gates=gates, nodes=["client", "n1", "n2"],
                                run=f"known bad {plant}: tests/workqueue/known_bad_commands.py record_real")
    queue.delete_keys()
    client.close()
    return path


def _pause_before_the_call(store: Any, consumer: Any, once: list[bool], pause_s: float) -> None:
    """A stall (as a long GC stop would be) of the node that makes the run's first external
    call, just before it (`once` is shared by the nodes): its heartbeat stops too, a window the
    trace logs (`Consumer.lag_heartbeat`), so its guard lapses and the peer takes the command
    over; then the node goes on and calls. The designed script refuses that call; the plant
    records it."""
    call = store.external_call

    def external_call(*args: Any, **kwargs: Any) -> int:
        if not once:
            once.append(True)
            consumer.lag_heartbeat()
            time.sleep(pause_s)
            consumer.resume_heartbeat()
        return call(*args, **kwargs)

    store.external_call = external_call


# The corpus traces (file name, plant, seed): the first seeds of `config(plant)` whose trace
# shows the bug (tests/workqueue/test_known_bad_commands.py asserts the line and the name).
CORPUS = (
    ("sim-guard-taken-without-nx.ndjson", "no_nx", 1),
    ("sim-guard-ttl-below-heartbeat.ndjson", "short_ttl", 0),
    ("sim-stale-attempt-calls-remote.ndjson", "stale_call", 10),
)


# The same plants on a real Redis (`--redis URL`): lines differ from run to run, the
# rejection's name does not.
REAL_CORPUS = (
    ("real-redis-guard-taken-without-nx.ndjson", "no_nx"),
    ("real-redis-guard-ttl-below-heartbeat.ndjson", "short_ttl"),
    ("real-redis-stale-attempt-calls-remote.ndjson", "stale_call"),
)


def main(argv: list[str]) -> int:
    """`known_bad_commands.py [OUT_DIR] [--redis URL]`: the simulated known-bad traces, and
    with --redis the real-Redis ones too."""
    url = argv[argv.index("--redis") + 1] if "--redis" in argv else None
    rest = [a for i, a in enumerate(argv) if a != "--redis" and (i == 0 or argv[i - 1] != "--redis")]
    out = Path(rest[0]) if rest else Path("traces/corpus/command/rejected")
    out.mkdir(parents=True, exist_ok=True)
    for name, plant, seed in CORPUS:
        print(simulate(plant, seed, out, name))
    if url:
        import logging

        logging.getLogger("impl.workqueue").setLevel(logging.ERROR)
        for name, plant in REAL_CORPUS:
            print(record_real(plant, out, url, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
