"""Fixtures for the work queue's tests against the real Redis server: a harness that owns one
key prefix, starts consumers, and on teardown closes them, validates the recorded trace against
the schema, and deletes its keys."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import redis

from impl.clock import WallClock
from impl.workqueue import analysis, recording
from impl.workqueue.command_store import CommandStore
from impl.workqueue.commands import CommandClient, CommandProcessor
from impl.workqueue.config import Gates, Settings
from impl.workqueue.consumer import Consumer, ThreadExecutor
from impl.workqueue.store import QueueStore

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "traces/schema"
SCHEMA = json.loads((SCHEMA_DIR / "trace-line.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)  # built once: validate() per line is slow
EVENT_VALIDATORS = {  # per-system narrowing, where a schema exists
    path.name.split("-event")[0]: jsonschema.Draft202012Validator(json.loads(path.read_text()))
    for path in SCHEMA_DIR.glob("*-event.schema.json")
}

# Short real-time settings: VT 200 ms, heartbeat every 50 ms (margin for a loaded 2-core box).
FAST = Settings(visibility_timeout_ms=200, max_processing_ms=300, concurrency=2, fairness_ratio=3,
                guard_ttl_ms=200, state_ttl_ms=60_000, poll_interval_ms=10, heartbeat_ms=50)


def wait_until(pred: Callable[[], bool], timeout_s: float, step_s: float = 0.01) -> bool:
    """Poll `pred` until it holds or `timeout_s` passes; returns whether it held."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step_s)
    return bool(pred())


def validate_trace(path: Path) -> list[dict[str, Any]]:
    """Check every line of a trace against the schema and the end count; returns its events."""
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for line in lines:
        VALIDATOR.validate(line)
    assert lines[0]["kind"] == "header" and lines[-1]["kind"] == "end"
    narrow = EVENT_VALIDATORS.get(lines[0]["system"])
    for line in lines[1:-1]:
        if narrow is not None:
            narrow.validate(line)
    assert lines[-1]["count"] == len(lines) - 2
    assert [e["seq"] for e in lines[1:-1]] == list(range(1, len(lines) - 1))
    return lines[1:-1]


class Harness:
    """One test's queue, command store and consumers on the real Redis, under one key prefix."""

    def __init__(self, url: str, prefix: str, tmp: Path, system: str = "workqueue", name: str = "test") -> None:
        self.name = name
        self.client = redis.Redis.from_url(url)
        self.prefix = prefix
        self.tmp = tmp
        self.system = system
        self.clock = WallClock()
        self.queue = QueueStore(self.client, prefix, url=url)
        self.cstore = CommandStore(self.client, prefix, url=url, faults=self.queue.faults)
        self.consumers: list[Consumer] = []
        self.settings = FAST
        self.gates = Gates()
        self.features: list[str] = []  # header features (faults the test injects), as the sim names them
        self.check_order = True  # off for tests that drive store steps by hand (their traces are not kept)

    def configure(self, settings: Settings | None = None, gates: Gates | None = None) -> "Harness":
        """Set the settings and gates that new consumers and clients use."""
        self.settings = settings or self.settings
        self.gates = gates or self.gates
        return self

    def offer(self, payload: str) -> str:
        """Offer a plain message."""
        return self.queue.offer("producer", self.clock.now_ms(), payload)

    def consumer(self, name: str, handler: Callable[..., bool], executor: ThreadExecutor | None = None,
                 start: bool = True) -> Consumer:
        """A consumer on this harness' queue (started unless `start=False`)."""
        c = Consumer(self.queue, name, handler, settings=self.settings, gates=self.gates,
                     clock=self.clock, executor=executor)
        self.consumers.append(c)
        return c.start() if start else c

    def command_client(self) -> CommandClient:
        """A client that submits and cancels commands."""
        self.system = "command"
        return CommandClient(self.queue, self.cstore, "client", self.clock, self.settings, self.gates)

    def processor(self, name: str, app: Any) -> CommandProcessor:
        """A command processor for node `name`."""
        self.system = "command"
        return CommandProcessor(self.cstore, name, self.clock, self.settings, self.gates, app)

    def events(self) -> list[dict[str, Any]]:
        """The recorded trace events so far."""
        return self.queue.events()

    def duplicates(self) -> int:
        """Overlapping invocations of one entry so far, from the trace."""
        return analysis.duplicate_invocations(self.events())

    def acked(self) -> int:
        """How many entries were acked so far."""
        return sum(1 for e in self.events() if e["op"] == "ack" and e["outcome"] == "acked")

    def close(self) -> Path:
        """Close consumers, write and validate the trace, delete the keys."""
        for c in self.consumers:
            c.close(timeout_s=5)
        # With LEASEPROOF_TRACE_DIR set (scripts/record_traces.sh), the traces of runs with every
        # guard on are kept there for the checker; a run with a guard off is a calibration.
        keep = os.environ.get("LEASEPROOF_TRACE_DIR") if self.gates == Gates() and self.check_order else None
        if not self.events():
            keep = None  # a test that ran no step (a consumer's threads only) has no trace to check
        out = Path(keep) if keep else self.tmp
        stem = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in self.name)
        path = recording.export(out / f"{self.system}-{stem}.ndjson", self.queue, system=self.system,
                                settings=self.settings, gates=self.gates, nodes=["producer"], run=f"tests/workqueue {self.name}",
                                features=self.features)
        problems = analysis.command_order_problems(validate_trace(path))
        queue_view = path
        if self.system != "workqueue":
            queue_view = recording.export(out / f"workqueue-{stem}.ndjson", self.queue, system="workqueue",
                                          settings=self.settings, gates=self.gates, nodes=["producer"],
                                          run=f"tests/workqueue {self.name} (queue view)",
                                          features=[f for f in self.features if f != "handler_throws"])
        problems += analysis.order_problems(validate_trace(queue_view))
        self.queue.delete_keys()
        self.client.close()
        if self.check_order and self.gates == Gates():  # a gate off may break the order on purpose
            assert problems == [], problems
        return path


@pytest.fixture
def harness(redis_url: str, key_prefix: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    """A `Harness` on the real Redis, cleaned up after the test."""
    h = Harness(redis_url, key_prefix, tmp_path, name=request.node.name)
    try:
        yield h
    finally:
        h.close()
