"""Printing an exploration: a summary, and a failure's schedule with the command that replays it."""

from __future__ import annotations

from conformance.interleave.explore import Exploration, Outcome
from conformance.interleave.runtime import Run
from conformance.output.safe_text import visible


def schedule_lines(run: Run, states: list[str] | None = None, last: int = 40) -> list[str]:
    """The last `last` steps of `run`: step, virtual time, thread, point, code location, and the
    store after the step when `states` (one per step) is given."""
    steps = run.steps[-last:] if last else run.steps
    lines = []
    if len(run.steps) > len(steps):
        lines.append(f"  ... {len(run.steps) - len(steps)} earlier steps")
    for s in steps:
        mark = " (preempted)" if s.preempted else ""
        line = f"  {s.index:>6} {s.now_ms:>10} ms  {s.thread:<16} {s.point.kind} {s.point.obj}  {s.point.where}{mark}"
        if states is not None and s.index < len(states) and states[s.index]:
            line += f"\n{'':>30}store after: {states[s.index]}"
        lines.append(line)
    return lines


def replay_command(target: str, outcome: Outcome, saved: str | None) -> str:
    """The one command that replays `outcome`."""
    if saved is not None:
        return f"leaseproof interleave {target} --replay {saved}"
    return f"leaseproof interleave {target} --strategy {outcome.strategy} --runs 1"


def summary(x: Exploration) -> list[str]:
    """One line per fact: runs, steps, failures, the bounded space."""
    failed = x.failed
    lines = [f"{x.scenario}: {len(x.outcomes)} schedules ({x.strategy}), {x.steps:,} steps, "
             f"{sum(len(o.traces) for o in x.outcomes)} traces, "
             + (f"{len(failed)} FAILED" if failed else "every schedule passed")]
    if x.space:
        lines.append(f"  {x.space}")
    return [visible(line) for line in lines]


def failure_report(target: str, o: Outcome, saved: str | None, states: list[str] | None = None) -> list[str]:
    """A failing run: why, its schedule, and its replay command."""
    f = o.failure
    assert f is not None
    lines = [f"FAILED schedule {o.index} ({o.strategy}): {f.describe()}", "schedule (step, virtual time, thread, point, where):"]
    lines += schedule_lines(o.run, states)
    lines.append(f"replay: {replay_command(target, o, saved)}")
    return [visible(line, lines=True) for line in lines]
