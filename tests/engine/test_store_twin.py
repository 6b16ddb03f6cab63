"""The in-memory twin and the SQL stores agree, operation by operation (Hypothesis, stateful).

Two nodes call the scheduler on a shared store; every call runs on the twin and on SQLite
(and MariaDB when marked), and after each step the answers, the rows and the recorded events
must be the same.
"""

from __future__ import annotations

import tempfile
import uuid

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from impl.clock import VirtualClock
from impl.engine.backend import MemoryBackend
from impl.engine.model import ScheduleRequest, TaskKey
from impl.engine.store import Store
from impl.engine.urls import open_backend

LEASE = 100
WFS = ("a", "b")
NODES = ("n1", "n2")


class TwinMachine(RuleBasedStateMachine):
    """Runs each store operation on the twin and on a SQL store and compares."""

    sql_url: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.clock = VirtualClock(1_000)
        self._tmp = tempfile.TemporaryDirectory()
        url = self.sql_url or f"sqlite:///{self._tmp.name}/twin.db"
        self.prefix = "tw_" + uuid.uuid4().hex[:8] + "_"
        self.backends = [MemoryBackend(), open_backend(url, self.prefix)]
        self.stores = [Store(b, lease_ms=LEASE) for b in self.backends]
        self.held: dict[str, object] = {}

    def teardown(self) -> None:
        for b in self.backends:
            b.drop_schema()
            b.close()
        self._tmp.cleanup()

    def both(self, call):
        answers = [call(s) for s in self.stores]
        assert answers[0] == answers[1], answers
        return answers[0]

    @rule(wf=st.sampled_from(WFS), node=st.sampled_from(NODES), delay=st.sampled_from([0, 0, -10, LEASE // 2, LEASE, 3 * LEASE]),
          honour=st.booleans(), in_memory=st.booleans(), check=st.booleans())
    def schedule(self, wf, node, delay, honour, in_memory, check) -> None:
        req = ScheduleRequest(wf, run_after=self.clock.now_ms() + delay, honour_leases=honour)
        self.both(lambda s: s.schedule(node, self.clock.now_ms(), req, in_memory=in_memory, honour_check=check))

    @rule(node=st.sampled_from(NODES))
    def fetch(self, node) -> None:
        due = self.both(lambda s: s.due_tasks(self.clock.now_ms(), 10))
        for row in due:
            got = self.both(lambda s: s.fetch(node, self.clock.now_ms(), row))
            if got is not None:
                self.held[row.task_id] = got

    @precondition(lambda self: self.held)
    @rule(data=st.data(), node=st.sampled_from(NODES),
          op=st.sampled_from(["renew", "remove", "remove", "reschedule_retry", "mark_failed"]))
    def finish(self, data, node, op) -> None:
        wf = data.draw(st.sampled_from(sorted(self.held)))
        held = self.held[wf]
        now = self.clock.now_ms()
        if op == "renew":
            out = self.both(lambda s: s.renew(node, now, held.key, held.version, held.run_after))
        elif op == "remove":
            out = self.both(lambda s: s.remove(node, now, held.key, held.version, held.run_after))
        elif op == "reschedule_retry":
            out = self.both(lambda s: s.reschedule_retry(node, now, held.key, held.version, now + 30, held_run_after=held.run_after))
        else:
            out = self.both(lambda s: s.mark_failed(node, now, held.key, held.version, held.run_after))
        if out[0] in ("renewed", "rescheduled") and out[1] is not None:
            self.held[wf] = out[1]
        elif op != "renew":
            del self.held[wf]

    @rule(wf=st.sampled_from(WFS), node=st.sampled_from(NODES))
    def create_and_update(self, wf, node) -> None:
        now = self.clock.now_ms()
        _, inst, _ = self.both(lambda s: s.create_instance(node, now, wf, "approval", "{}"))
        self.both(lambda s: s.update_instance(node, now, wf, inst.version, '{"x":1}'))
        self.both(lambda s: s.run_start(node, now, wf, "store", 0))
        self.both(lambda s: s.run_end(node, now, wf, inst.version + 1, "waiting", "{}", None))

    @rule(ms=st.sampled_from([1, LEASE // 2, LEASE, 2 * LEASE]))
    def tick(self, ms) -> None:
        self.clock.advance(ms)

    @invariant()
    def same_rows_and_events(self) -> None:
        for wf in WFS:
            assert self.backends[0].read_task(TaskKey("workflow", wf)) == self.backends[1].read_task(TaskKey("workflow", wf))
            assert self.backends[0].read_instance(wf) == self.backends[1].read_instance(wf)
        strip = lambda evs: [(e.wf, e.wf_seq, e.node, e.op, e.now, e.args, e.outcome, e.state) for e in evs]  # noqa: E731
        assert strip(self.backends[0].read_events()) == strip(self.backends[1].read_events())


TestTwinSqlite = TwinMachine.TestCase
TestTwinSqlite.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)


@pytest.mark.mysql
def test_twin_agrees_with_mariadb(mysql_url: str) -> None:
    from hypothesis.stateful import run_state_machine_as_test

    class MysqlTwin(TwinMachine):
        sql_url = mysql_url

    run_state_machine_as_test(MysqlTwin, settings=settings(max_examples=10, stateful_step_count=20, deadline=None))
