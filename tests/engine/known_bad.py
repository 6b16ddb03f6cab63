"""Known-bad engine traces, recorded from the real engine with one bug planted.

Each recipe copies one function of `impl/engine` with one line changed (the planted bug), puts
the copy in place of the original for one seeded simulation, and keeps the first workflow whose
trace shows the bug. Not a gate, not a decision swapped through `Store(decisions=...)`
(`impl/engine/mutants.py`): the bug is in the code that a gate or a mutant would leave alone.
The same recipe writes the same bytes, so anyone can re-record the corpus files:

    PYTHONPATH=. python3 -m tests.engine.known_bad [DIR]     # default traces/corpus/engine/rejected

| file | planted in | the bug |
|---|---|---|
| `rerun-dropped.ndjson` | `impl/engine/worker.py` `run_task` | after `remove: rerun` the worker returns instead of running again |
| `fetch-under-lease.ndjson` | `impl/engine/model.py` `Task.is_due` | the fetch's `run_after <= now` comparison is gone: a fetch leases a row under an active lease |
| `caller-left-unanswered.ndjson` | `impl/engine/node.py` `Node.start` | a start that queued no copy here never fails its caller's future with `ResultUnavailable` |
| `caller-answered-from-conflict.ndjson` | `impl/engine/worker.py` `run_task` | a run whose save conflicted answers its node's callers with its own result (not the stored one) |
| `signal-never-scheduled.ndjson` | `impl/engine/node.py` `Node.signal` | a signal updates the instance and returns without scheduling a run |

`tests/engine/test_known_bad.py` checks that each is rejected at the line `RECIPES` names, as
`RECIPES` says (`HeldLeaseKept`, `FetchOnlyDue`, `CallersAnswered`, the `answer` a caller is
owed, `SignalsScheduled` in `tla/TraceEngine.tla`). The last three end drained (the simulation
had nothing left to do), where TraceEngine requires every caller answered and every signal
scheduled.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from impl.engine import model, worker
from impl.engine.node import Node
from impl.engine.simulate import Faults, simulate

from . import recording

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "traces" / "corpus" / "engine" / "rejected"


@contextlib.contextmanager
def planted(owner: Any, name: str, old: str, new: str) -> Iterator[None]:
    """`owner.name` (a module's function or a class's method) replaced, while inside, by a copy
    of its source with the line `old` changed to `new` (exactly one occurrence)."""
    original = getattr(owner, name)
    # The code itself, not a recorder's wrapper around it (tests/engine/recording.py).
    source = textwrap.dedent(inspect.getsource(inspect.unwrap(original)))
    if source.count(old) != 1:
        raise AssertionError(f"cannot plant the bug: {old!r} occurs {source.count(old)} times in {name}")
    namespace: dict[str, Any] = {}
    exec(compile(source.replace(old, new), f"<planted {name}>", "exec"), vars(inspect.getmodule(inspect.unwrap(original))), namespace)
    setattr(owner, name, namespace[name])
    try:
        with recording.planting():  # the tests' recorder must not export the broken engine's traces
            yield
    finally:
        setattr(owner, name, original)


def events(text: str) -> list[dict[str, Any]]:
    """The event lines of a trace."""
    return [e for e in map(json.loads, text.splitlines()) if e["kind"] == "event"]


def after_dropped_rerun(text: str) -> int | None:
    """The first line that needs a dropped rerun's lease to be over: the first fetch after a
    `remove: rerun` (the `seq`), or None."""
    evs = events(text)
    for i, e in enumerate(evs):
        if (e["op"], e["outcome"]) != ("remove", "rerun"):
            continue
        fetch = next((r for r in evs[i + 1:] if r["op"] == "fetch"), None)
        if fetch is not None:
            return int(fetch["seq"])
    return None


def fetch_under_lease(text: str) -> int | None:
    """The first fetch of a live row whose lease had not ended (`run_after > now`), or None."""
    row = None
    for e in events(text):
        if e["op"] == "fetch" and row is not None and row["status"] in ("PENDING", "RUNNING") and row["run_after"] > e["now"]:
            return int(e["seq"])
        if e["state"]:  # a fault or answer line logs no state
            row = e["state"]["task"]
    return None


def drained(text: str) -> bool:
    """Whether the trace's run ended with nothing left to do (its header says so)."""
    return bool(json.loads(text.splitlines()[0])["settings"].get("drained"))


def last_line(text: str) -> int:
    """The `seq` of the trace's last event (where a drained run's obligations are checked)."""
    return int(events(text)[-1]["seq"])


def unanswered_start(text: str) -> int | None:
    """In a drained trace, a start whose first schedule queued no copy on its node (so its caller
    is owed `ResultUnavailable`) and no answer line of that node after it: the last line."""
    evs = events(text)
    if not drained(text):
        return None
    for i, e in enumerate(evs):
        if (e["op"], e["outcome"]) != ("create_instance", "created"):
            continue
        mine = [r for r in evs[i + 1:] if r["node"] == e["node"]]
        first = next((r for r in mine if r["op"] in ("schedule", "schedule_in_memory")), None)
        if first is not None and not first["args"].get("queued", False) \
                and not any(r["op"] == "answer" for r in mine):
            return last_line(text)
    return None


def answered_from_conflict(text: str) -> int | None:
    """The first answer line from a run (`from: run`) that follows its node's conflicted save."""
    last_end: dict[str, str] = {}
    for e in events(text):
        if e["op"] == "run_end":
            last_end[e["node"]] = e["outcome"]
        if e["op"] == "answer" and e["args"].get("from") == "run" and last_end.get(e["node"]) == "conflict":
            return int(e["seq"])
    return None


def unscheduled_signal(text: str) -> int | None:
    """In a drained trace, a signal's `update_instance: updated` with no schedule of its node
    after it: the last line."""
    evs = events(text)
    if not drained(text):
        return None
    for i, e in enumerate(evs):
        if (e["op"], e["outcome"]) == ("update_instance", "updated") and not any(
            r["node"] == e["node"] and r["op"] in ("schedule", "schedule_in_memory") for r in evs[i + 1:]
        ):
            return last_line(text)
    return None


@dataclass(frozen=True)
class Recipe:
    """One known-bad trace: where the bug is planted, the simulation, the line that shows it."""

    file: str
    plant: Callable[[], contextlib.AbstractContextManager[None]]
    seeds: range
    sim: dict[str, Any]
    shows: Callable[[str], int | None]   # the line the bug shows at (None: not in this trace)
    says: str                             # what the rejection says (the property it names)


RECIPES = (
    Recipe(
        "rerun-dropped.ndjson",
        lambda: planted(worker, "run_task", 'if outcome != "rerun" or row is None:', "if True:"),
        range(10, 40),
        dict(workflows=12, waiting_fraction=0.0, faults=Faults(pause=0.01)),
        after_dropped_rerun,
        "breaks HeldLeaseKept",
    ),
    Recipe(
        "fetch-under-lease.ndjson",
        lambda: planted(model.Task, "is_due", " and self.run_after <= now", ""),
        range(0, 10),
        dict(workflows=4, faults=Faults(pause=0.01)),
        fetch_under_lease,
        "breaks FetchOnlyDue",
    ),
    Recipe(
        "caller-left-unanswered.ndjson",
        lambda: planted(Node, "start", "if not scheduled.queued_in_memory:", "if False:"),
        range(0, 20),
        dict(workflows=8, stranded_fraction=0.5, faults=Faults(pause=0.01)),
        unanswered_start,
        "breaks CallersAnswered",
    ),
    Recipe(
        "caller-answered-from-conflict.ndjson",
        lambda: planted(worker, "run_task", 'if result == "completed" and saved == "saved" and step is not None:',
                        'if result == "completed" and step is not None:'),
        range(0, 40),
        dict(workflows=8, stale_fraction=1.0, faults=Faults(pause=0.02)),
        answered_from_conflict,
        "disagrees on answer",
    ),
    Recipe(
        "signal-never-scheduled.ndjson",
        lambda: planted(Node, "signal", "scheduled = yield from self._schedule_now(wf, in_memory=in_memory)",
                        "scheduled = None"),
        range(0, 20),
        dict(workflows=4, faults=Faults(pause=0.01)),
        unscheduled_signal,
        # The starter still waits for the workflow too (CallersAnswered), named first.
        'SignalsScheduled (after it {"n2"}',
    ),
)


def record(recipe: Recipe) -> tuple[str, int]:
    """The first trace (by seed, then workflow) that shows `recipe`'s bug, and its line."""
    for seed in recipe.seeds:
        with recipe.plant():
            run = simulate(seed=seed, max_steps=40_000, **recipe.sim)
        for _wf, text in sorted(run.traces.items()):
            line = recipe.shows(text)
            if line is not None:
                return text, line
    raise AssertionError(f"{recipe.file}: no seed in {recipe.seeds} shows the planted bug")


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else CORPUS
    for recipe in RECIPES:
        text, line = record(recipe)
        out.mkdir(parents=True, exist_ok=True)
        (out / recipe.file).write_text(text, encoding="utf-8")
        print(f"{out / recipe.file}: shows its bug at event {line} ({recipe.says})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
