"""The backends' transaction operations, on every store (twin, SQLite, MariaDB)."""

from __future__ import annotations

from impl.engine.backend import Backend
from impl.engine.model import PENDING, RUNNING, WORKFLOW_OWNER, Instance, Task, TaskKey


def test_read_state_is_the_instance_and_the_task_row_as_read_one_by_one(backend: Backend) -> None:
    """A trace event records both rows after the write: one read gives what two did."""
    inst = Instance(wf="wf1", workflow="approval", status=RUNNING, version=1, state='{"a":1}')
    task = Task(owner=WORKFLOW_OWNER, task_id="wf1", status=PENDING, run_after=5, version=2, payload="p")
    with backend.transaction() as tx:
        assert tx.read_state("wf1") == (None, None)
        tx.insert_instance(inst)
        assert tx.read_state("wf1") == (inst, None)
        tx.insert_task(task)
        tx.insert_task(Task(owner="other", task_id="wf2", status=PENDING, run_after=0, version=1))
        both = tx.read_state("wf1")
        assert both == (tx.read_instance("wf1"), tx.read_task(TaskKey(WORKFLOW_OWNER, "wf1"))) == (inst, task)
        assert tx.read_state("wf2") == (None, None)  # another owner's row is not the workflow's task
        assert tx.delete_task(task.key, 2) == 1
        assert tx.read_state("wf1") == (inst, None)
