"""The checker's self-test: before its verdicts count, a known-good trace must be accepted and a
known-bad one rejected; then every accepted trace is mutated and every mutant must be rejected.

The known traces live in `traces/corpus/<system>/accepted/` and `.../rejected/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces
from conformance.traces.mutate import Excluded, Mutant, fault_mutants, mutants
from conformance.traces.read import read_trace_file
from conformance.traces.system import System, lookup
from conformance.traces.trace import Trace, TraceKind, TraceVerdict


@dataclass(frozen=True)
class CorpusResult:
    """How the known traces fared: problems is empty when each got its known verdict."""

    checked: int
    problems: list[str]


@dataclass(frozen=True)
class MutationResult:
    """How many mutants were made and rejected; the survivors and the exclusions, with why."""

    total: int
    rejected: int
    survivors: list[tuple[Mutant, TraceVerdict]] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)
    by_operator: dict[str, tuple[int, int]] = field(default_factory=dict)


def check_corpus(root: Path, systems: dict[str, System], tlc: Tlc, only: set[str] | None = None, **kwargs: object) -> CorpusResult:
    """Check the known-good and known-bad traces of each system in `only` (default: all).

    Each of those systems must have at least one of each: a checker that has never been seen
    to accept a good trace and reject a bad one proves nothing by its other verdicts.
    """
    names = sorted(systems if only is None else set(systems) & only)
    expected: dict[str, TraceKind] = {}
    items: list[Trace | TraceVerdict] = []
    for name in names:
        for kind in (TraceKind.ACCEPTED, TraceKind.REJECTED):
            for path in sorted((root / "traces" / "corpus" / name / kind.value).glob("*.ndjson")):
                expected[str(path)] = kind
                items.append(read_trace_file(path))
    problems = []
    for name in names:
        for kind in (TraceKind.ACCEPTED, TraceKind.REJECTED):
            if not any(Path(p).parts[-3:-1] == (name, kind.value) for p in expected):
                problems.append(f"{name}: no known-{'good' if kind is TraceKind.ACCEPTED else 'bad'} trace in traces/corpus/{name}/{kind.value}/")
    for v in check_traces(items, systems, tlc, **kwargs):  # type: ignore[arg-type]
        if v.kind is not expected[v.source]:
            problems.append(f"{v.source}: known to be {expected[v.source].value}, but the checker says {v.describe()}")
    return CorpusResult(len(items), problems)


def declared_equivalent(mutant: Mutant, system: System) -> str | None:
    """Why `mutant` is a valid behaviour by construction, when the system file declares it so
    (`mutations.equivalent`: an operator, the ops it may touch and, with `next`, the ops the
    entity's next event must be), else None."""
    for decl in system.mutations.get("equivalent", ()):
        if decl["operator"] != mutant.operator or not set(mutant.ops) & set(decl["ops"]):
            continue
        if decl.get("every_op") and not set(mutant.ops) <= set(decl["ops"]):
            continue
        if "outcomes" in decl and not set(mutant.outcomes) <= set(decl["outcomes"]):
            continue
        if any(_header_value(mutant.trace.header, k) != v for k, v in decl.get("when", {}).items()):
            continue
        if "next" in decl and mutant.next_op not in decl["next"]:
            continue
        if "within" in decl:
            # Only as close to the entity's previous event as the trace's own setting says its
            # times may jitter (a real server's clock slack; 0, so never, in a simulation).
            try:
                limit = lookup(mutant.trace.header, decl["within"])
            except (KeyError, TypeError):
                continue
            if mutant.gap_ms is None or isinstance(limit, bool) or not isinstance(limit, int) or mutant.gap_ms > limit:
                continue
        return str(decl["why"])
    return None


def _header_value(header: dict, dotted: str) -> object:
    """A header field by its dotted name, None where it is absent (`when:` of a declaration)."""
    try:
        return lookup(header, dotted)
    except (KeyError, TypeError):
        return None


def check_mutants(accepted: list[Trace], systems: dict[str, System], tlc: Tlc,
                  excused: dict[str, tuple[int, ...]] | None = None, **kwargs: object) -> MutationResult:
    """Mutate every accepted trace and check that the checker rejects every mutant.

    A mutant the checker accepts is a survivor, unless its system file declares such mutants
    valid behaviours by construction: then it is excluded, and listed with the declared reason
    and its verdict. A declared mutant that is rejected counts as rejected. `excused` names, by
    trace, the fault lines its acceptance needed (their `seq`): where there are any, a mutant
    with every fault line taken out must be rejected (the `fault` operator).
    """
    made: list[Mutant] = []
    excluded: list[Excluded] = []
    for t in accepted:
        ms, ex = mutants(t, systems[t.system])
        made.extend(ms)
        excluded.extend(ex)
        made.extend(fault_mutants(t, (excused or {}).get(t.source, ()), systems[t.system].faults))
    verdicts = check_traces([m.trace for m in made], systems, tlc, **kwargs)  # type: ignore[arg-type]
    return tally(made, verdicts, systems, excluded)


def tally(made: list[Mutant], verdicts: list[TraceVerdict], systems: dict[str, System], excluded: list[Excluded]) -> MutationResult:
    """Count the mutants' verdicts: survivors, rejections per operator, and the accepted ones
    that their system file declares valid behaviours (excluded, with why and the verdict)."""
    excluded = list(excluded)
    survivors = []
    counted = 0
    by_op: dict[str, tuple[int, int]] = {}
    for m, v in zip(made, verdicts, strict=True):
        rejected = v.kind is TraceKind.REJECTED
        # Only an accepted mutant can be a valid behaviour: an inconclusive one stays a survivor.
        why = declared_equivalent(m, systems[m.trace.system]) if v.kind is TraceKind.ACCEPTED else None
        if why is not None:
            system = systems[m.trace.system].name
            excluded.append(Excluded(m.original, m.operator, f"{m.change}: accepted, a valid behaviour "
                                                            f"(traces/systems/{system}.yaml): {why}", declared=True))
            continue
        counted += 1
        if not rejected:
            survivors.append((m, v))
        total, rej = by_op.get(m.operator, (0, 0))
        by_op[m.operator] = (total + 1, rej + rejected)
    return MutationResult(counted, counted - len(survivors), survivors, excluded, by_op)
