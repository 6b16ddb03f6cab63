"""No bound of a system file lets a known-bad trace through.

Each bounded integer a system file declares (`header:`), set to its min and to its max in every
trace of `traces/corpus/<system>/rejected`, must leave that trace rejected (or malformed), unless
the field's `admits:` names the trace at that bound, with why. A bound is a claim a header may make
that the checker takes on trust: one at which a known bug passes is a hole. Every `admits:` must
still be needed (the trace let through), so that no stale excuse stays behind.

One `check_traces` call per system: a few hundred traces, a few seconds of TLC.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.read import read_trace_file
from conformance.traces.system import System, load_systems
from conformance.traces.trace import Trace, TraceKind

pytestmark = pytest.mark.tlc

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "fixtures" / "project"
SYSTEMS = [(ROOT, "engine"), (ROOT, "workqueue"), (ROOT, "command"),
           (PROJECT, "counter"), (PROJECT, "counterloose"), (PROJECT, "joblease")]


def edges(system: System) -> Iterator[tuple[str, str, int]]:
    """(field, "min" or "max", the bound) for every bound of every integer field declared by
    name (a wildcard declares no field to set)."""
    for name, f in sorted(system.header.items()):
        if f.type != "integer" or name.endswith(".*"):
            continue
        for bound in ("min", "max"):
            value = getattr(f, bound)
            if value is not None:
                yield name, bound, value


def at_edge(t: Trace, field: str, value: int, source: str) -> Trace:
    """`t` with the header's `field` (settings.x, gates.x) set to `value`."""
    part, member = field.split(".", 1)
    return Trace(source, {**t.header, part: {**t.header.get(part, {}), member: value}}, t.events)


@pytest.mark.parametrize(("root", "name"), SYSTEMS, ids=[n for _, n in SYSTEMS])
def test_no_bound_lets_a_known_bad_trace_through(root: Path, name: str) -> None:
    system = load_systems(root)[name]
    corpus = root / "traces" / "corpus" / name
    known_bad = sorted(corpus.joinpath("rejected").glob("*.ndjson"))
    assert known_bad, f"no known-bad traces under {corpus}/rejected"
    items: list[Trace] = []
    where: dict[str, tuple[str, str, str]] = {}
    for path in known_bad:
        t = read_trace_file(path)
        assert isinstance(t, Trace), t
        rel = path.relative_to(corpus).as_posix()
        for field, bound, value in edges(system):
            source = f"{rel}#{field}={value}"
            where[source] = (field, bound, rel)
            items.append(at_edge(t, field, value, source))
    assert items, f"{name}: no bounded field to walk"
    verdicts = check_traces(items, {name: system}, Tlc.locate())
    through = {where[v.source]: v for v in verdicts if v.kind not in (TraceKind.REJECTED, TraceKind.MALFORMED)}
    declared = {(field, a.bound, a.trace) for field, f in system.header.items() for a in f.admits}
    holes = [f"{field} at its {bound} lets {trace} through: {through[(field, bound, trace)].describe()}"
             for field, bound, trace in sorted(set(through) - declared)]
    stale = [f"{field} admits {trace} at its {bound}, but it is rejected there: drop the admits"
             for field, bound, trace in sorted(declared - set(through))]
    assert not holes and not stale, "\n".join([f"traces/systems/{name}.yaml header:", *holes, *stale])
