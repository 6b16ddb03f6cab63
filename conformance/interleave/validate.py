"""Every explored schedule's traces, checked against the trace specs in batches (one TLC run
per batch of traces, as `leaseproof traces check` does)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import read_trace_file
from conformance.traces.system import load_systems
from conformance.traces.trace import TraceKind


def trace_validator(root: Path) -> Callable[[list[Path]], dict[Path, str]]:
    """A function from trace files to the verdict of each one not accepted (a rejection, a
    skip, a malformed or inconclusive trace: each fails its schedule), with `root`'s systems."""
    systems = load_systems(root)
    tlc = Tlc.locate()

    def check(paths: list[Path]) -> dict[Path, str]:
        items = [read_trace_file(p) for p in paths]
        verdicts = check_traces(items, systems, tlc)
        return {p: v.describe() for p, v in zip(paths, verdicts) if v.kind is not TraceKind.ACCEPTED}
    return check
