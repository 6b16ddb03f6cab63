"""Outcomes as JUnit XML, for CI systems that draw test reports: one test case per model."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.check.compare import Outcome, actual_label
from conformance.output.verdict import Kind


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
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
