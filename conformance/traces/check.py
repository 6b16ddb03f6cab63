"""Checking trace files: read them, sort out the ones that cannot or need not be checked, and
check the rest in batches. Returns one verdict per file, in the order given."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from conformance.check.runner import Tlc, default_workers
from conformance.errors import JavaNotFound, LeaseproofError
from conformance.output.verdict import Verdict
from conformance.traces.batch import TRACE_HEAP_MB, Batch, check_batch, constant_text, group
from conformance.traces.read import read_trace_file
from conformance.traces.system import System, constants_for, fault_claims, fault_lines, out_of_scope, unknown, unknown_op
from conformance.traces.to_tla import TraceEncodeError, literal_of
from conformance.traces.trace import Trace, TraceKind, TraceVerdict

DEFAULT_BATCH = 400

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sorted:
    """Traces ready to check, by system, and the verdicts already decided without TLC."""

    ready: dict[str, list[Trace]]
    decided: dict[str, TraceVerdict]


def triage(items: list[Trace | TraceVerdict], systems: dict[str, System], no_faults: bool = False) -> Sorted:
    """Pure: which traces go to TLC, and which are malformed, skipped or (with `no_faults`, for a
    run that injects none) rejected at their first fault line (with why)."""
    ready: dict[str, list[Trace]] = {}
    decided: dict[str, TraceVerdict] = {}
    for item in items:
        if isinstance(item, TraceVerdict):
            decided[item.source] = item
            continue
        system = systems.get(item.system)
        if system is None:
            known = ", ".join(sorted(systems)) or "none"
            decided[item.source] = TraceVerdict(item.source, TraceKind.MALFORMED,
                                                reason=f"header field system: no system file for {item.system!r} (known: {known})")
            continue
        # Header claims first: a feature declared out of scope excuses no unknown claim.
        why = unknown(system, item)
        if why:
            decided[item.source] = TraceVerdict(item.source, TraceKind.MALFORMED, reason=why)
            continue
        why = out_of_scope(system, item)
        if why:
            decided[item.source] = TraceVerdict(item.source, TraceKind.SKIPPED, reason=why)
            continue
        why = unknown_op(system, item) or fault_claims(system, item)
        if why:
            decided[item.source] = TraceVerdict(item.source, TraceKind.MALFORMED, reason=why)
            continue
        faults = fault_lines(system, item) if no_faults else []
        if faults:
            first = faults[0]
            decided[item.source] = TraceVerdict(
                item.source, TraceKind.REJECTED, line=int(first["seq"]), op=str(first["op"]), node=str(first["node"]),
                explained=int(first["seq"]) - 1,
                reason=f"a fault line ({first['op']}, {first.get('outcome')}), and --no-faults says this run injects none")
            continue
        try:
            for name, value in constants_for(system, item).items():
                constant_text(name, value)  # a float or NaN setting has no TLA+ form: malformed
            literal_of(item, system.time_fields)
        except KeyError as exc:
            decided[item.source] = TraceVerdict(item.source, TraceKind.MALFORMED, reason=str(exc.args[0]))
            continue
        except TraceEncodeError as exc:
            decided[item.source] = TraceVerdict(item.source, TraceKind.MALFORMED, reason=str(exc))
            continue
        ready.setdefault(system.name, []).append(item)
    return Sorted(ready, decided)


def check_traces(
    items: list[Trace | TraceVerdict],
    systems: dict[str, System],
    tlc: Tlc,
    batch_size: int = DEFAULT_BATCH,
    workers: int | None = None,
    keep_dir: Path | None = None,
    on_run: Callable[[Batch, Verdict], None] | None = None,
    jobs: int | None = None,
    heap_mb: int = TRACE_HEAP_MB,
    on_plan: Callable[[int], None] | None = None,
    on_batch: Callable[[Batch], None] | None = None,
    no_faults: bool = False,
) -> list[TraceVerdict]:
    """A verdict for every item (a read trace, or the verdict its reading already gave).

    Up to `jobs` TLC runs at once (default: `default_jobs`), each with `workers` TLC workers
    (default: the cores left to it). For progress, `on_plan` hears how many batches there are
    and `on_batch` each batch whose verdicts are in, as it ends. With `no_faults` (a run that
    injected none), a trace with a fault line is rejected there.
    """
    s = triage(items, systems, no_faults)
    verdicts = dict(s.decided)
    batches = [b for name, traces in s.ready.items() for b in group(traces, systems[name], batch_size)]
    # Longest first (by events), so that the last run to start is a short one: with the longest
    # last, one core idles while it runs alone (longest_first).
    batches = longest_first(batches)
    # Batches are independent TLC runs: run them side by side, each with the cores left to it (one
    # TLC worker when the runs outnumber the cores).
    jobs = max(1, min(jobs or default_jobs(default_workers()), len(batches)))
    per_run = workers or max(1, default_workers() // jobs)
    if on_plan is not None:
        on_plan(len(batches))

    def one(b: Batch) -> list[TraceVerdict]:
        result = _isolated(b, tlc, per_run, keep_dir, on_run, heap_mb)
        if on_batch is not None:
            on_batch(b)
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for result in pool.map(one, batches):
            for v in result:
                verdicts[v.source] = v
    order = [i.source for i in items]
    return [verdicts[src] for src in order]


def default_jobs(cores: int) -> int:
    """TLC runs at once by default: one more than the cores. A few runs of unequal length leave a
    core idle while the last one ends alone (three batches on two cores: the work queue's, then
    the engine's beside the command layer's); one more at once shares both cores to the end. On
    360 recorded traces in three batches, on two cores: 3.1 to 3.3 s of wall time with two at
    once, 3.0 s with three; one trace per run took the same either way (the cores are busy)."""
    return cores + 1


def longest_first(batches: list[Batch]) -> list[Batch]:
    """`batches` in the order to start them: most events first (ties: as given). Runs side by
    side end closest together when each free core takes the longest run left (the classic
    longest-processing-time rule); a trace's events are the best cheap guess of its search."""
    return sorted(batches, key=lambda b: -sum(len(t.events) for t in b.traces))


def _isolated(batch: Batch, tlc: Tlc, workers: int, keep_dir: Path | None,
              on_run: Callable[[Batch, Verdict], None] | None, heap_mb: int) -> list[TraceVerdict]:
    """`check_batch`, but a failure of leaseproof itself on one batch (TLC output it cannot read,
    say) makes that batch's traces inconclusive, saying so, instead of stopping every other
    batch. TLC not starting at all (no Java) still stops the run: nothing could be checked."""
    try:
        return check_batch(batch, tlc, workers, keep_dir, on_run, heap_mb)
    except LeaseproofError as exc:
        if isinstance(exc, JavaNotFound):
            raise
        why = f"leaseproof could not read TLC's run of this batch: {exc}"
    except Exception as exc:  # a bug in leaseproof: reported per trace, with its type, never a pass
        log.exception("checking a batch of %d %s traces failed", len(batch.traces), batch.system.name)
        why = f"a bug in leaseproof while checking this batch ({type(exc).__name__}: {exc}); please report it"
    return [TraceVerdict(t.source, TraceKind.INCONCLUSIVE, reason=why) for t in batch.traces]


def check_files(paths: list[Path], systems: dict[str, System], tlc: Tlc, **kwargs: object) -> list[TraceVerdict]:
    """Read the trace files at `paths` and check them (see `check_traces`)."""
    return check_traces([read_trace_file(p) for p in paths], systems, tlc, **kwargs)  # type: ignore[arg-type]
