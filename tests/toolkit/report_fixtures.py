"""Outcomes of calibration models built from saved TLC output, for the report's tests (no Java
needed): the fixture project's failing models (tests/fixtures/tlc_output), the 23-state ladder
and one real engine calibration, `inmem_overlap_unguarded` (tests/fixtures/report/tlc_output,
recorded with `leaseproof check MODEL --keep tests/fixtures/report/tlc_output`, keeping the
.out and .run.json; re-record after changing Engine.tla or Ladder.tla).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conformance.check.compare import Outcome, outcome
from conformance.models.model import load_model
from conformance.output.messages import parse_messages
from conformance.output.verdict import PropertyKind, Verdict, verdict_from_output

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
PROJECT = FIXTURES / "project"
REPORT = FIXTURES / "report"

# model file, its modules' folder, where its saved output is
CALIBRATIONS = {
    "invariant": (PROJECT / "models" / "invariant.yaml", PROJECT / "tla", FIXTURES / "tlc_output"),
    "lasso": (PROJECT / "models" / "lasso.yaml", PROJECT / "tla", FIXTURES / "tlc_output"),
    "temporal": (PROJECT / "models" / "temporal.yaml", PROJECT / "tla", FIXTURES / "tlc_output"),
    "deadlock": (PROJECT / "models" / "deadlock.yaml", PROJECT / "tla", FIXTURES / "tlc_output"),
    "ladder": (REPORT / "models" / "ladder.yaml", REPORT / "tla", REPORT / "tlc_output"),
    "inmem_overlap_unguarded": (ROOT / "models" / "engine" / "inmem_overlap_unguarded.yaml", ROOT / "tla", REPORT / "tlc_output"),
}


def saved_verdict(folder: Path, name: str) -> Verdict:
    """The verdict of a saved run of TLC (`NAME.out` and `NAME.run.json` in `folder`)."""
    facts = json.loads((folder / f"{name}.run.json").read_text())
    text = (folder / f"{name}.out").read_text()
    return verdict_from_output(parse_messages(text), exit_code=facts["exit_code"], seconds=facts["seconds"],
                               timed_out=facts["timed_out"])


def saved_outcome(name: str) -> Outcome:
    """A calibration model's outcome, from its saved output."""
    path, tla, output = CALIBRATIONS[name]
    model = load_model(path, (tla,))
    v = saved_verdict(output, name)
    if v.property is None and v.property_kind is PropertyKind.TEMPORAL:
        # TLC 2.15 does not name a temporal property; the runner does (check/runner.py), by
        # checking each alone: here the one the model expects stands in for that second run.
        v = dataclasses.replace(v, property=model.expect.property)
    return outcome(model, v)
