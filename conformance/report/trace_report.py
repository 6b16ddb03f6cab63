"""Trace verdicts in words: the summary line, the list of what did not pass, and JSON.

A trace is untrusted input: its file name, its ops and the values it logged reach these lines,
so each line comes out through `safe_text.visible` (an ESC or a U+202E shown, not obeyed by the
terminal). JSON needs nothing of the kind: `json.dump` escapes them itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from conformance.output.safe_text import visible
from conformance.traces.coverage import Coverage
from conformance.traces.selftest import MutationResult
from conformance.traces.trace import TraceKind, TraceVerdict


def summary_line(verdicts: list[TraceVerdict]) -> str:
    """E.g. `111 of 111 in-scope runs accepted, 122 skipped` (other verdicts added when present)."""
    n = Counter(v.kind for v in verdicts)
    in_scope = n[TraceKind.ACCEPTED] + n[TraceKind.REJECTED] + n[TraceKind.INCONCLUSIVE]
    parts = [f"{n[TraceKind.ACCEPTED]} of {in_scope} in-scope runs accepted", f"{n[TraceKind.SKIPPED]} skipped"]
    for kind in (TraceKind.REJECTED, TraceKind.MALFORMED, TraceKind.INCONCLUSIVE):
        if n[kind]:
            parts.append(f"{n[kind]} {kind.value}")
    return ", ".join(parts)


def verdict_line(v: TraceVerdict) -> str:
    """`REJECTED     out/t.ndjson: rejected at event 4 (...)`: a trace's verdict as the terminal lists it."""
    return visible(f"{v.kind.value.upper():12} {v.source}: {v.describe()}")


def mutation_lines(result: MutationResult) -> list[str]:
    """`N of N mutants rejected`, per operator, then every survivor and exclusion with why."""
    lines = [f"{result.rejected} of {result.total} mutants rejected"]
    declared = sum(e.declared for e in result.excluded)
    if declared:
        lines[0] += f"; {declared} more accepted and excluded as valid behaviours the system files declare (listed)"
    for op, (total, rejected) in sorted(result.by_operator.items()):
        lines.append(f"  {op}: {rejected} of {total}")
    for m, v in result.survivors:
        lines.append(f"  SURVIVOR [{m.operator}] {m.original}: {m.change} -> {v.describe()}")
    for e in result.excluded:
        lines.append(f"  excluded [{e.operator}] {e.original}: {e.why}")
    return [visible(line) for line in lines]


def coverage_lines(cov: Coverage) -> list[str]:
    """The actions exercised, with counts, and the required behaviours never seen."""
    seen = ", ".join(f"{op}/{out} {n}" for (op, out), n in sorted(cov.seen.items()))
    lines = [f"{cov.system}: exercised {seen or 'nothing'}"]
    for name, n in cov.required.items():
        lines.append(f"  {'ok' if n else 'MISSING'}: {name} ({n} seen)")
    return [visible(line) for line in lines]


def source_line(cov: Coverage) -> str:
    """One line per trace source and system: `coverage engine-sim (engine, 160 accepted): ok, 7 of 7
    required behaviours seen` or `...: MISSING rerun, fetch (5 of 7 seen)`."""
    met = len(cov.required) - len(cov.missing)
    head = f"coverage {cov.source} ({cov.system}, {cov.traces} accepted):"
    if not cov.missing:
        return visible(f"{head} ok, {met} of {len(cov.required)} required behaviours seen")
    return visible(f"{head} MISSING {', '.join(cov.missing)} ({met} of {len(cov.required)} seen)")


def verdict_json(v: TraceVerdict) -> dict[str, Any]:
    """One trace verdict as JSON."""
    return {
        "trace": v.source, "verdict": v.kind.value, "reason": v.reason, "line": v.line, "op": v.op, "node": v.node,
        "explained": v.explained, "diffs": [{"field": d.field, "spec": d.expected, "trace": d.logged} for d in v.diffs],
        "excused_by": [{"line": x.line, "fault": x.op, "node": x.node} for x in v.excused],
    }
