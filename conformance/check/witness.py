"""Which calibration proves that each property can fail. Pure.

A property is *claimed* for a module when some model of that module expects `ok` while checking
it: the suite says it holds. A claim means something only if the property has been seen to
fail: some model of the same module expects it violated, and did violate it (its outcome
passed). Such a model *witnesses* the property. A claimed property with no witness is
*unwitnessed*: it may be true by construction, or too weak to see the bug it is for.

    claimed:    MCEngine NoOverlappingRuns  (inmem_overlap expects ok)
    witnessed:  MCEngine NoOverlappingRuns  by inmem_overlap_unguarded (violated it, as expected)

A run of part of the suite (`--quick`, a folder, named models) may leave a claim's calibrations
out. Those are listed as `not_run`: the claim is not proven in this run, but the suite has a
calibration for it, so `--strict` does not count it against a partial run.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.check.compare import Outcome
from conformance.models.model import Model


@dataclass(frozen=True)
class Witness:
    """One claimed property of one module, and the calibrations that proved it can fail."""

    module: str
    property: str
    claimed_by: tuple[str, ...]
    witnesses: tuple[str, ...]
    # Calibrations that expect it violated but did not give their expected verdict this run.
    failed_witnesses: tuple[str, ...] = ()
    # Calibrations of the suite that expect it violated but were not part of this run.
    not_run: tuple[str, ...] = ()

    @property
    def witnessed(self) -> bool:
        """True when some calibration violated the property as its model file expects."""
        return bool(self.witnesses)

    @property
    def missing(self) -> bool:
        """True when nothing proves the claim: no calibration violated it in this run, and none
        that could was left out of the run (or one ran and did not fail)."""
        return not self.witnesses and (bool(self.failed_witnesses) or not self.not_run)


def witnesses(outcomes: list[Outcome], suite: list[Model] | None = None) -> list[Witness]:
    """Every claimed property of the models in `outcomes`, by module then property, with the
    calibrations among `outcomes` that witness it (only models that ran count), and those of
    `suite` (every model file, when the run was a part of it) that did not run."""
    claimed: dict[tuple[str, str], list[str]] = {}
    by: dict[tuple[str, str], list[str]] = {}
    failed: dict[tuple[str, str], list[str]] = {}
    for o in outcomes:
        m = o.model
        if m.expect.verdict == "ok":
            for prop in (*m.invariants, *m.properties):
                claimed.setdefault((m.module, prop), []).append(m.name)
        elif m.expect.verdict == "violated" and m.expect.property is not None:
            (by if o.passed else failed).setdefault((m.module, m.expect.property), []).append(m.name)
    ran = {o.model.name for o in outcomes}
    left_out: dict[tuple[str, str], list[str]] = {}
    for m in suite or []:
        if m.name not in ran and m.expect.verdict == "violated" and m.expect.property is not None:
            left_out.setdefault((m.module, m.expect.property), []).append(m.name)
    return [Witness(module, prop, tuple(names), tuple(by.get((module, prop), ())), tuple(failed.get((module, prop), ())),
                    tuple(left_out.get((module, prop), ())))
            for (module, prop), names in sorted(claimed.items())]


def unwitnessed(ws: list[Witness]) -> list[Witness]:
    """The claimed properties that nothing proves able to fail: no calibration of this run
    violated them, and the suite has none left out of the run (see `Witness.missing`)."""
    return [w for w in ws if w.missing]
