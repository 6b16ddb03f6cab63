"""Printing an exploration: a summary, and a failure's schedule with the command that replays it."""

from __future__ import annotations

from conformance.interleave.explore import Exploration, Outcome
from conformance.interleave.runtime import Run
from conformance.output.safe_text import visible


def schedule_lines(run: Run, states: list[str] | None = None, calls: int = 25, tail: int = 12) -> list[str]:
    """The end of `run`'s schedule: its last `calls` store calls and its last `tail` steps of any
    kind, each as step, virtual time, thread, point and code location, and the store after the
    step where it changed (when `states`, the store before each step, is given). The whole
    schedule is the saved file's."""
    store_steps = [s.index for s in run.steps if s.point.kind.startswith("call ")][-calls:]
    shown = sorted(set(store_steps) | {s.index for s in run.steps[-tail:]})
    lines = []
    last = -1
    for i in shown:
        if i > last + 1:
            lines.append(f"  ... {i - last - 1} steps")
        last = i
        s = run.steps[i]
        mark = " (preempted)" if s.preempted else ""
        line = f"  {s.index:>6} {s.now_ms:>10} ms  {s.thread:<16} {s.point.kind} {s.point.obj}  {s.point.where}{mark}"
        after = s.index + 1  # states[i] is the store before step i
        if states is not None and after < len(states) and states[after] and states[after] != states[s.index]:
            line += f"\n{'':>28}store after: {states[after]}"
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
