"""Checking many models, several at a time, so that the suite uses every core.

With `jobs` models in flight, each TLC run gets `cores // jobs` workers (at least one), unless
its model file fixes `workers`. Short models are dominated by JVM start-up, so running two at
once with one worker each beats running them one after the other with two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance.check.compare import Outcome, outcome
from conformance.check.runner import Tlc, check_model, default_workers
from conformance.models.model import Model


def run_suite(
    models: Iterable[Model],
    tlc: Tlc,
    jobs: int = 1,
    workers: int | None = None,
    on_start: Callable[[Model], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    keep_dir: Path | None = None,
) -> list[Outcome]:
    """Check every model; returns the outcomes in the order the models were given."""
    models = list(models)
    per_run = workers or max(1, default_workers() // max(1, jobs))

    def one(model: Model) -> Outcome:
        if on_start is not None:
            on_start(model)
        result = outcome(model, check_model(model, tlc, per_run, keep_dir=keep_dir))
        if on_done is not None:
            on_done(result)
        return result

    if jobs <= 1:
        return [one(m) for m in models]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, models))
