"""The HTML report of `check --html DIR` and `traces check --html DIR`: the table of verdicts, and
for every counterexample and rejected trace its swimlanes (SVG, inline) beside the definition of
the property it breaks.

The page loads nothing: its CSS and SVG are inline, with no fonts, scripts or images from
anywhere, so that it reads the same offline, from a CI artefact or a mail attachment.

Gathering (`model_sections`, `trace_sections`) reads the spec files for the definitions and
may name actions with the replay maps; rendering (`models_html`, `traces_html`) is pure;
`write_report` is the one place that writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from conformance.check.compare import Outcome, actual_label
from conformance.report.definition import property_definition
from conformance.report.lanes import model_swimlane
from conformance.report.svg import environment, swimlane_svg
from conformance.report.swimlane import Swimlane, trace_swimlane
from conformance.traces.system import System
from conformance.traces.trace import Trace, TraceKind, TraceVerdict


@dataclass(frozen=True)
class Section:
    """One failing behaviour of the report: an anchor, a heading, what broke, its swimlanes, and
    the definition of what it breaks (module file name, text), if found."""

    anchor: str
    heading: str
    summary: str
    swimlane: Swimlane
    definition: tuple[str, str] | None = None
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableRow:
    """A row of the report's table: the cells, whether it passed, and its section's anchor."""

    cells: tuple[str, ...]
    passed: bool
    anchor: str | None = None


def model_sections(outcomes: list[Outcome]) -> list[Section]:
    """A section for every counterexample of the run (reads the specs for the definitions)."""
    out: list[Section] = []
    for o in outcomes:
        v = o.verdict
        if v.counterexample is None:
            continue
        sl = model_swimlane(o)
        assert sl is not None
        out.append(Section(f"model-{o.model.name}", o.model.name, v.summary(), sl,
                           property_definition(v.property, o.model.module_path),
                           (f"expected {o.model.expect.describe()}; {'PASS' if o.passed else 'FAIL'}", *o.mismatches,
                            f"model file {o.model.path}", o.model.why.strip())))
    return out


def model_rows(outcomes: list[Outcome], sections: list[Section]) -> list[TableRow]:
    """The table's rows: model, expected, actual, distinct states, length, seconds, result."""
    anchors = {s.heading for s in sections}
    rows = []
    for o in outcomes:
        v = o.verdict
        length = str(len(v.counterexample)) if v.counterexample else "-"
        distinct = f"{v.stats.distinct_states:,}" if v.stats.distinct_states is not None else "-"
        rows.append(TableRow((o.model.name, o.model.expect.describe(), actual_label(v), distinct, length,
                              f"{v.stats.seconds:.1f}", "PASS" if o.passed else "FAIL"),
                             o.passed, f"model-{o.model.name}" if o.model.name in anchors else None))
    return rows


def models_html(outcomes: list[Outcome], sections: list[Section], title: str = "leaseproof check") -> str:
    """The report page of `leaseproof check` (pure)."""
    rows = model_rows(outcomes, sections)
    passed = sum(o.passed for o in outcomes)
    return _page(title, ("model", "expected", "actual", "distinct", "length", "seconds", "result"), rows,
                 f"{passed} of {len(outcomes)} models gave their expected verdict", sections)


def trace_sections(items: list[Trace | TraceVerdict], verdicts: list[TraceVerdict],
                   systems: dict[str, System]) -> list[Section]:
    """A section for every rejected trace (reads the trace specs for the definitions)."""
    out: list[Section] = []
    for i, (item, v) in enumerate(zip(items, verdicts)):
        if v.kind is not TraceKind.REJECTED or not isinstance(item, Trace):
            continue
        sl = trace_swimlane(item, v, title=f"{v.source}: {v.describe()}")
        broken = next((d.field for d in v.diffs if d.is_property), None)
        system = systems.get(item.system)
        definition = property_definition(broken, system.spec_path) if system and broken else None
        out.append(Section(f"trace-{i}", v.source, v.describe(), sl, definition,
                           tuple(d.describe() for d in v.diffs)))
    return out


def traces_html(verdicts: list[TraceVerdict], sections: list[Section], summary: str,
                title: str = "leaseproof traces check", coverage: list[dict[str, Any]] | None = None) -> str:
    """The report page of `leaseproof traces check` (pure), with each system's spec coverage
    (`coverage_tables`) after the verdicts."""
    anchors = {s.heading: s.anchor for s in sections}
    rows = [TableRow((v.source, v.kind.value, v.describe()), v.kind in (TraceKind.ACCEPTED, TraceKind.SKIPPED),
                     anchors.get(v.source)) for v in verdicts]
    return _page(title, ("trace", "verdict", "why"), rows, summary, sections, coverage or [])


def coverage_tables(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec coverage JSON (`SpecCoverage.to_json` by system) as the page's tables: one row
    per op/outcome of the spec's table, with its count; never shown: a failing row; declared
    unreachable: the reason."""
    tables = []
    for system, cov in sorted(report.items()):
        if "error" in cov:
            tables.append({"system": system, "heading": f"{system}: {cov['error']}", "rows": []})
            continue
        rows = []
        for key, n in cov["outcomes"].items():
            why = cov["unreachable"].get(key)
            note = f"declared unreachable: {why}" if why is not None else ("never shown" if n == 0 else "")
            rows.append({"key": key, "n": n, "note": note, "passed": n > 0 or why is not None})
        tables.append({"system": system, "rows": rows,
                       "heading": f"{system} ({cov['spec']}): {cov['covered']} of {cov['required']} op outcomes, "
                                  f"{len(cov['pairs'])} distinct pairs of consecutive steps, {cov['traces']} accepted traces"})
    return tables


def _page(title: str, columns: tuple[str, ...], rows: list[TableRow], summary: str, sections: list[Section],
          coverage: list[dict[str, Any]] | None = None) -> str:
    svgs = [Markup(swimlane_svg(s.swimlane, f"svg-{s.anchor}")) for s in sections]  # escaped by its own template
    return environment().get_template("report.html.j2").render(
        title=title, columns=columns, rows=rows, summary=summary, sections=list(zip(sections, svgs)),
        coverage=coverage or [])


def write_report(directory: Path, html: str) -> Path:
    """Write the page as DIR/index.html; its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "index.html"
    path.write_text(html, encoding="utf-8")
    return path
