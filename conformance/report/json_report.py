"""Outcomes as JSON: one object per model, with the counterexample's states as data (values tagged
as ITF has them, `conformance/output/itf.py`, so that a model value, a string, a set and a
sequence stay apart)."""

from __future__ import annotations

from typing import Any

from conformance.check.compare import Outcome, actual_label
from conformance.check.witness import Witness
from conformance.output.counterexample import Counterexample
from conformance.output.itf import to_itf
from conformance.output.verdict import Verdict


def counterexample_json(cx: Counterexample | None) -> dict[str, Any] | None:
    """A counterexample as JSON: states with action, location and variables; how it ends."""
    if cx is None:
        return None
    return {
        "states": [
            {
                "index": s.index,
                "action": s.action,
                "location": str(s.location) if s.location else None,
                "variables": {k: to_itf(v) for k, v in s.variables.items()},
            }
            for s in cx.states
        ],
        "back_to": cx.back_to,
        "back_action": cx.back_action,
        "back_location": str(cx.back_location) if cx.back_location else None,
        "stutters": cx.stutters,
    }


def verdict_json(v: Verdict) -> dict[str, Any]:
    """Every field of a verdict as JSON."""
    return {
        "kind": v.kind.value,
        "property": v.property,
        "property_kind": v.property_kind.value if v.property_kind else None,
        "error_kind": v.error_kind.value if v.error_kind else None,
        "message": v.message,
        "distinct_states": v.stats.distinct_states,
        "states_generated": v.stats.states_generated,
        "depth": v.stats.depth,
        "seconds": round(v.stats.seconds, 3),
        "tlc_version": v.tlc_version,
        "exit_code": v.exit_code,
        "counterexample": counterexample_json(v.counterexample),
    }


def witnesses_json(ws: list[Witness]) -> list[dict[str, Any]]:
    """Per claimed property, the models that claim it and the calibrations that witness it."""
    return [{"module": w.module, "property": w.property, "claimed_by": list(w.claimed_by), "witnesses": list(w.witnesses),
             "failed_witnesses": list(w.failed_witnesses), "not_run": list(w.not_run),
             "witnessed": w.witnessed, "unwitnessed": w.missing} for w in ws]


def outcomes_json(outcomes: list[Outcome], ws: list[Witness] | None = None, passed: bool | None = None) -> dict[str, Any]:
    """The whole run: one entry per model, the property witnesses, and the totals."""
    return {
        "passed": all(o.passed for o in outcomes) if passed is None else passed,
        "witnesses": witnesses_json(ws or []),
        "models": [
            {
                "name": o.model.name,
                "file": str(o.model.path),
                "expected": o.model.expect.describe(),
                "actual": actual_label(o.verdict),
                "result": "PASS" if o.passed else "FAIL",
                "mismatches": list(o.mismatches),
                "workers": o.workers,
                "one_worker_for_temporal": bool(o.model.properties),
                "notes": list(o.model.notes),
                "verdict": verdict_json(o.verdict),
            }
            for o in outcomes
        ],
    }
