"""scripts/bench_workqueue.py: a drain through its child processes, and `--before`'s check that a
side's processes run the queue of the checkout they were started for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import redis

pytestmark = pytest.mark.redis


def keys(url: str, prefix: str) -> list[bytes]:
    client = redis.Redis.from_url(url)
    try:
        return list(client.scan_iter(match=f"{prefix}*"))
    finally:
        client.close()


def test_a_drain_takes_every_message_once_through_the_queues_processes(redis_url: str, key_prefix: str,
                                                                      script: Callable[[str], ModuleType]) -> None:
    b = script("bench_workqueue")
    result = b.drain(redis_url, 20, 1, "queue", prefix=key_prefix)
    assert result.messages == 20 and result.duplicates == 0 and result.verdict == "-"
    # offer, receive_new, invoke_start, invoke_end, ack: five events a message; and the one
    # consumer's stop when it closes
    assert result.events == 100 + 1 and result.seconds > 0
    assert keys(redis_url, key_prefix) == []


def test_a_side_whose_processes_import_another_checkout_stops_the_run(redis_url: str, key_prefix: str, tmp_path: Path,
                                                                      script: Callable[[str], ModuleType]) -> None:
    # tmp_path holds no queue: the child imports the installed one (this checkout), says so, and
    # the drain stops instead of measuring this checkout's queue as tmp_path's.
    b = script("bench_workqueue")
    with pytest.raises(SystemExit, match=f"for {tmp_path} did not start with that checkout's queue"):
        b.drain(redis_url, 5, 1, "queue", root=tmp_path, prefix=key_prefix)
    assert keys(redis_url, key_prefix) == []  # its offers deleted
