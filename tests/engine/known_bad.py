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

`tests/engine/test_known_bad.py` checks that each is rejected at the line `RECIPES` names,
naming the property (`HeldLeaseKept`, `FetchOnlyDue` in `tla/TraceEngine.tla`).
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
from impl.engine.simulate import Faults, simulate

from . import recording

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "traces" / "corpus" / "engine" / "rejected"


@contextlib.contextmanager
def planted(owner: Any, name: str, old: str, new: str) -> Iterator[None]:
    """`owner.name` (a module's function or a class's method) replaced, while inside, by a copy
    of its source with the line `old` changed to `new` (exactly one occurrence)."""
    original = getattr(owner, name)
    source = textwrap.dedent(inspect.getsource(original))
    if source.count(old) != 1:
        raise AssertionError(f"cannot plant the bug: {old!r} occurs {source.count(old)} times in {name}")
    namespace: dict[str, Any] = {}
    exec(compile(source.replace(old, new), f"<planted {name}>", "exec"), vars(inspect.getmodule(original)), namespace)
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
        row = e["state"]["task"]
    return None


@dataclass(frozen=True)
class Recipe:
    """One known-bad trace: where the bug is planted, the simulation, the line that shows it."""

    file: str
    plant: Callable[[], contextlib.AbstractContextManager[None]]
    seeds: range
    sim: dict[str, Any]
    shows: Callable[[str], int | None]   # the line the bug shows at (None: not in this trace)
    names: str                            # the property the rejection names


RECIPES = (
    Recipe(
        "rerun-dropped.ndjson",
        lambda: planted(worker, "run_task", 'if outcome != "rerun" or row is None:', "if True:"),
        range(10, 40),
        dict(workflows=12, waiting_fraction=0.0, faults=Faults(pause=0.01)),
        after_dropped_rerun,
        "HeldLeaseKept",
    ),
    Recipe(
        "fetch-under-lease.ndjson",
        lambda: planted(model.Task, "is_due", " and self.run_after <= now", ""),
        range(0, 10),
        dict(workflows=4, faults=Faults(pause=0.01)),
        fetch_under_lease,
        "FetchOnlyDue",
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
        print(f"{out / recipe.file}: shows its bug at event {line} ({recipe.names})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
