"""The pure parts: fairness order, permits, the active table, settings and gates."""

from __future__ import annotations

import pytest

from impl.workqueue.config import Gates, Settings
from impl.workqueue.core import ActiveTable, Fairness, Invocation, Permits
from impl.workqueue.errors import BadSettings


def test_fairness_gives_reclaim_first_one_poll_in_ratio_plus_one() -> None:
    f = Fairness(3)
    firsts = [f.next_order()[0] for _ in range(8)]
    assert firsts == ["receive_new"] * 3 + ["reclaim"] + ["receive_new"] * 3 + ["reclaim"]
    assert Fairness(0).next_order() == ("reclaim", "receive_new")


def test_permits_bound_and_unbounded() -> None:
    p = Permits(2)
    assert p.try_acquire() and p.try_acquire() and not p.try_acquire()
    p.release()
    assert p.try_acquire()
    q = Permits(1, bounded=False)
    assert all(q.try_acquire() for _ in range(5)) and q.in_use == 5
    with pytest.raises(AssertionError):
        Permits(1).release()


def test_active_table_counts_duplicates_and_orders_entries() -> None:
    t = ActiveTable()
    a, b, a2 = (Invocation(e, "", 1, "new") for e in ("2-0", "1-0", "2-0"))
    for inv in (a, b, a2):
        t.add(inv)
    assert len(t) == 3 and [i.entry for i in t.all()] == ["1-0", "2-0", "2-0"]
    t.remove(a)
    assert t.running("2-0")
    t.remove(a2)
    assert not t.running("2-0")


def test_settings_and_gates_refuse_bad_values_with_the_fix() -> None:
    with pytest.raises(BadSettings, match="visibility_timeout_ms must be positive"):
        Settings(visibility_timeout_ms=0)
    with pytest.raises(BadSettings, match="heartbeat_ms"):
        Settings(visibility_timeout_ms=100, heartbeat_ms=100)
    with pytest.raises(BadSettings, match="known gates"):
        Gates().off("nope")
    assert Settings(visibility_timeout_ms=300).heartbeat_interval_ms == 100
    assert Gates().off("heartbeat").as_dict()["heartbeat"] is False
