"""Checking many models, several at a time, so that the suite uses every core.

With `jobs` models in flight, each TLC run gets `cores // jobs` workers (at least one), unless
its model file fixes `workers`, or it checks a temporal property (one worker: `workers_for`).
The one-worker models run one per core, side by side, before the others. Short models are
dominated by JVM start-up, so running two at once with one worker each beats running them one
after the other with two.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.check.compare import Outcome, outcome
from conformance.check.runner import Tlc, check_model, default_workers, workers_for
from conformance.models.model import Model

_PROGRESS = re.compile(r"^Progress\(\d+\) at .*?: [\d,]+ states generated .*?, ([\d,]+) distinct states found")


def progress_states(line: str) -> int | None:
    """The distinct-state count of a TLC progress line (message 2200), else None."""
    m = _PROGRESS.match(line)
    return int(m.group(1).replace(",", "")) if m else None


def run_suite(
    models: Iterable[Model],
    tlc: Tlc,
    jobs: int = 1,
    workers: int | None = None,
    on_start: Callable[[Model], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    keep_dir: Path | None = None,
    on_progress: Callable[[Model, int], None] | None = None,
) -> list[Outcome]:
    """Check every model; returns the outcomes in the order the models were given.

    `on_progress(model, distinct_states)` is called as TLC reports progress (about once a minute
    for long runs, and at the end).
    """
    models = list(models)
    per_run = workers or max(1, default_workers() // max(1, jobs))

    def one(model: Model) -> Outcome:
        if on_start is not None:
            on_start(model)
        def line(text: str) -> None:
            found = progress_states(text)
            if found is not None and on_progress is not None:
                on_progress(model, found)

        result = outcome(model, check_model(model, tlc, per_run, on_line=line, keep_dir=keep_dir), workers_for(model, per_run))
        if on_done is not None:
            on_done(result)
        return result

    # A model with a temporal property gets one TLC worker (workers_for), so such models run as
    # many at once as there are cores; the safety-only ones keep `jobs` and every core each.
    temporal = [i for i, m in enumerate(models) if m.properties]
    safety = [i for i, m in enumerate(models) if not m.properties]
    results: dict[int, Outcome] = {}
    for indices, at_once in ((temporal, max(jobs, default_workers())), (safety, jobs)):
        if at_once <= 1:
            results.update((i, one(models[i])) for i in indices)
            continue
        with ThreadPoolExecutor(max_workers=at_once) as pool:
            results.update(zip(indices, pool.map(lambda i: one(models[i]), indices)))
    return [results[i] for i in range(len(models))]
