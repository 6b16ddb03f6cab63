"""`RunMonitor`: runs of one workflow in progress at once, counted as runs begin and end."""

from __future__ import annotations

from impl.engine.monitor import RunMonitor


def test_overlapping_runs_of_one_workflow_are_counted_and_others_are_not() -> None:
    m = RunMonitor()
    m.begin("wf1", "n1")
    m.begin("wf2", "n1")  # another workflow: no overlap
    m.begin("wf1", "n2")  # wf1 is running on n1: an overlap
    assert (m.overlaps, m.concurrent("wf1"), m.max_concurrent["wf1"]) == (1, 2, 2)
    m.end("wf1", "n1")
    m.end("wf1", "n1")  # an end without a run in progress there changes nothing
    assert m.concurrent("wf1") == 1
    m.drop_node("n2")
    assert m.concurrent("wf1") == 0 and m.running() == {"wf2": 1}


def test_only_runs_in_progress_are_kept() -> None:
    """A run's begin looks at its own workflow's runs: ended runs leave nothing behind to scan."""
    m = RunMonitor()
    for i in range(1000):
        m.begin(f"wf{i}", "n1")
        m.end(f"wf{i}", "n1")
    m.begin("wf0", "n1")
    assert m.running() == {"wf0": 1}
    assert (m.overlaps, m.runs["wf0"], m.max_concurrent["wf0"]) == (0, 2, 1)
