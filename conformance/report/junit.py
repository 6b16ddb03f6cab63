"""Outcomes as JUnit XML, for CI systems that draw test reports: one test case per model.

Every document is well-formed whatever its names and messages hold: XML 1.0 has no way to
write most C0 characters (not even `&#0;`), and a CI server drops a report it cannot parse
whole. So each attribute and text goes through `safe_text.visible` as the tree is serialised
(`_serialise`, the one way out of this module): `\x1b`, `\x00`, `\u202e` are written out.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping

from conformance.check.compare import Outcome, actual_label
from conformance.output.safe_text import visible
from conformance.output.verdict import Kind
from conformance.traces.trace import TraceKind, TraceVerdict


def _serialise(suite: ET.Element) -> str:
    """The document, every attribute value and text escaped (line feeds kept in texts: a
    failure's body lists a line per field), indented."""
    for node in suite.iter():
        node.attrib = {k: visible(v) for k, v in node.attrib.items()}
        if node.text is not None:
            node.text = visible(node.text, lines=True)
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def junit_xml(outcomes: list[Outcome], suite_name: str = "leaseproof.models") -> str:
    """A `<testsuite>` document: a failure per mismatch, an error for TLC errors and timeouts."""
    failures = sum(1 for o in outcomes if not o.passed and o.verdict.kind not in (Kind.ERROR, Kind.TIMEOUT))
    errors = sum(1 for o in outcomes if not o.passed and o.verdict.kind in (Kind.ERROR, Kind.TIMEOUT))
    suite = ET.Element("testsuite", {
        "name": suite_name, "tests": str(len(outcomes)), "failures": str(failures), "errors": str(errors),
        "time": f"{sum(o.verdict.stats.seconds for o in outcomes):.3f}",
    })
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"models.{o.model.path.parent.name}", "name": o.model.name, "time": f"{o.verdict.stats.seconds:.3f}",
        })
        if not o.passed:
            tag = "error" if o.verdict.kind in (Kind.ERROR, Kind.TIMEOUT) else "failure"
            node = ET.SubElement(case, tag, {"message": "; ".join(o.mismatches), "type": actual_label(o.verdict)})
            node.text = o.verdict.message or o.verdict.summary()
        out = ET.SubElement(case, "system-out")
        out.text = f"expected {o.model.expect.describe()}; actual {o.verdict.summary()}; distinct states {o.verdict.stats.distinct_states}"
    return _serialise(suite)


def traces_junit_xml(verdicts: list[TraceVerdict], failing_skips: list[TraceVerdict] = (),  # type: ignore[assignment]
                     suite_name: str = "leaseproof.traces", skip_notes: Mapping[str, str] | None = None) -> str:
    """A `<testsuite>` document, one test case per trace: a rejection is a failure (its message
    the line and why), a malformed or inconclusive trace an error, a skip skipped with its reason
    (a failure where the command did not allow it: `failing_skips`). `skip_notes` adds to a
    skip's message, by its source, which features made it and whether they were allowed."""
    failing = {v.source for v in failing_skips}
    notes = skip_notes or {}
    errors = sum(v.kind in (TraceKind.MALFORMED, TraceKind.INCONCLUSIVE) for v in verdicts)
    failures = sum(v.kind is TraceKind.REJECTED or v.source in failing for v in verdicts)
    skipped = sum(v.kind is TraceKind.SKIPPED and v.source not in failing for v in verdicts)
    suite = ET.Element("testsuite", {"name": suite_name, "tests": str(len(verdicts)), "failures": str(failures),
                                     "errors": str(errors), "skipped": str(skipped)})
    for v in verdicts:
        path = v.source.replace("\\", "/")
        folder, _, name = path.rpartition("/")
        case = ET.SubElement(suite, "testcase", {"classname": folder.replace("/", ".").strip(".") or "traces", "name": name})
        message = v.describe() + (f" [{notes[v.source]}]" if v.kind is TraceKind.SKIPPED and v.source in notes else "")
        if v.kind is TraceKind.REJECTED or v.source in failing:
            node = ET.SubElement(case, "failure", {"message": message, "type": v.kind.value})
            # The message says it in one line; the body lists each field that disagrees.
            node.text = "\n".join(d.describe() for d in v.diffs) or message
        elif v.kind in (TraceKind.MALFORMED, TraceKind.INCONCLUSIVE):
            ET.SubElement(case, "error", {"message": v.describe(), "type": v.kind.value})
        elif v.kind is TraceKind.SKIPPED:
            ET.SubElement(case, "skipped", {"message": message})
    return _serialise(suite)
