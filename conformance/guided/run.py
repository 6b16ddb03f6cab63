"""Run the model-guided workloads of one system: reach each target in TLC, replay its behaviour
on the implementation, write and validate the traces. Side effects: TLC, the stores, files."""

from __future__ import annotations

import importlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.check.runner import Tlc, check_model
from conformance.errors import LeaseproofError
from conformance.guided.own import OwnReplayError, load_own_replay, run_own
from conformance.guided.targets import (REACH_MODULES, Target, missing_properties, outside_model, reach_model,
                                        situations, targets)
from conformance.models.model import load_model
from conformance.replay.run import ADAPTERS, plain_states
from conformance.report.json_report import verdict_json
from conformance.traces.spec_coverage import outcomes_table, unreachable_of
from conformance.traces.system import load_systems


# A target the base model declares outside the model (`outside_model`: no step of it there).
OUTSIDE = "outside the model"


class GuidedError(LeaseproofError):
    """The system has no model-guided workloads (no reach module, base model or Outcomes table)."""


@dataclass
class GuidedResult:
    """One target: whether the model reached it, how the replay on the code went, its traces."""

    target: Target
    model: str = ""  # "reached" (a behaviour of N steps), "not reached", or TLC's other verdict
    steps: int = 0
    replay: str = "-"  # the adapter's verdict: held (every step taken), blocked, unmapped, reproduced
    reason: str = ""
    traces: list[Path] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # trace -> why it was not accepted
    shown: bool = False  # a trace of the replay shows the target's op with its outcome
    seconds: float = 0.0

    @property
    def finding(self) -> str | None:
        """What this target shows wrong, if anything (None: the code took the model's path)."""
        if self.model != "reached":
            return None if self.model in ("not reached", OUTSIDE) else f"the model check ended {self.model}"
        if self.replay == "blocked":
            return f"the model can, the code cannot: {self.reason}"
        if self.replay == "unmapped":
            return f"unmapped: {self.reason}"
        if self.replay != "held":
            return f"replay {self.replay}: {self.reason}"
        if self.rejected:
            return "trace rejected: " + "; ".join(f"{Path(k).name}: {v}" for k, v in self.rejected.items())
        if not self.shown:
            return f"the replay took every step, but no trace shows {self.target.op}/{self.target.outcome}"
        return None

    def line(self) -> str:
        what = self.finding
        status = ("ok" if self.model == "reached" and what is None else "unreached" if self.model == "not reached"
                  else "declared" if self.model == OUTSIDE else "FINDING")
        if self.model == OUTSIDE:
            return f"{status:9} {self.target.name:34} outside the model: {self.reason}"
        tail = f" - {what}" if what else ""
        return (f"{status:9} {self.target.name:34} model {self.model}"
                f"{f' in {self.steps} steps' if self.steps else ''}, replay {self.replay}, "
                f"{len(self.traces)} trace(s) ({self.seconds:.1f} s){tail}")


def base_model(root: Path, system: str) -> dict[str, Any]:
    """The system's base model (`guided/<system>.yaml`) as data, or a GuidedError saying why not."""
    path = root / "guided" / f"{system}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise GuidedError(f"cannot read the base model {path}: {exc}") from None
    if not isinstance(data, dict):
        raise GuidedError(f"{path}: not a model file (a mapping of name, module, constants, ...)")
    return data


def _shows(path: Path, t: Target) -> bool:
    """Whether the trace file at `path` has a line of `t`'s op with its outcome."""
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("op") == t.op and event.get("outcome") == t.outcome:
            return True
    return False


def run_guided(root: Path, system: str, out: Path, *, store: str = "memory://", tlc: Tlc | None = None,
               only: list[str] | None = None, validate: bool = True) -> list[GuidedResult]:
    """Reach, replay and validate every target of `system` (or those named in `only`), writing
    the reach models and the traces under `out`."""
    if not (root / "guided" / f"{system}.yaml").exists():
        raise GuidedError(f"no model-guided workloads for {system!r}: no base model guided/{system}.yaml "
                          f"(leaseproof's own: {', '.join(sorted(REACH_MODULES))}; docs/your-own-system.md)")
    systems = load_systems(root)
    if system not in systems:
        raise GuidedError(f"no system file for {system!r} in {root / 'traces' / 'systems'}")
    sysm = systems[system]
    base = base_model(root, system)
    table = outcomes_table(sysm.spec_path.read_text(encoding="utf-8"), f"{sysm.spec}.tla")
    if table is None:
        raise GuidedError(f"{sysm.spec} declares no Outcomes table: there is nothing to reach")
    wanted = targets(table, unreachable_of(sysm, table, f"the {system} system file"))
    try:
        outside = outside_model(base, table, f"guided/{system}.yaml")
    except ValueError as exc:
        raise GuidedError(str(exc)) from None
    wanted += situations(base)
    if only:
        unknown = sorted(set(only) - {t.name for t in wanted})
        if unknown:
            raise GuidedError(f"no target {unknown}; the targets: {', '.join(t.name for t in wanted)}")
        wanted = [t for t in wanted if t.name in only]
    module = str(base.get("module") or "")
    try:
        module_text = (root / "tla" / f"{module}.tla").read_text(encoding="utf-8")
    except OSError as exc:
        raise GuidedError(f"guided/{system}.yaml: cannot read its module tla/{module}.tla: {exc}") from None
    lacking = missing_properties(module_text, [t for t in wanted if t.name not in outside])
    if lacking:
        raise GuidedError(f"tla/{module}.tla defines no reach property for {', '.join(lacking)}")
    if "replay" in base:  # the user's own replay file
        own, mapper, adapter = load_own_replay(root, base["replay"]), None, None
        impl_error: type[Exception] = OwnReplayError
    elif module in ADAPTERS:
        own = None
        mapper_name, adapter_name = ADAPTERS[module]
        mapper, adapter = importlib.import_module(mapper_name), importlib.import_module(adapter_name)
        # The implementation's errors, by name as the adapter is (conformance never imports impl).
        impl_error = importlib.import_module("impl.errors").ImplError
    else:
        raise GuidedError(f"guided/{system}.yaml names no replay (replay: FILE.py) and leaseproof has no adapter "
                          f"for {module} (docs/your-own-system.md, model-guided workloads)")
    tlc = tlc or Tlc.locate()
    results = []
    for t in wanted:
        began = time.perf_counter()
        r = GuidedResult(t)
        if t.name in outside:  # printed with its reason, never run
            r.model, r.reason = OUTSIDE, outside[t.name]
            results.append(r)
            continue
        path = out / "models" / f"reach_{t.slug.replace('-', '_')}.yaml"  # the model's name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(reach_model(base, t), sort_keys=False), encoding="utf-8")
        model = load_model(path, (root / "tla",))
        verdict = plain_states(verdict_json(check_model(model, tlc)))
        kind = verdict.get("kind")
        if kind == "ok":
            r.model = "not reached"
            r.reason = "no behaviour of the base model takes this step (widen guided/<system>.yaml)"
        elif kind == "violated" and verdict.get("counterexample"):
            r.model = "reached"
            constants: dict[str, Any] = {k: c.value for k, c in model.constants.items()}
            trace_dir = out / "traces" / t.slug
            try:
                if own is not None:
                    r.steps = len(verdict["counterexample"]["states"]) - 1
                    result = run_own(own, verdict, constants, trace_dir)
                else:
                    assert mapper is not None and adapter is not None
                    sched = mapper.schedule_of(model.name, verdict, constants)
                    r.steps = len(sched.steps)
                    result = adapter.replay(sched.to_json(), store=store, trace_dir=trace_dir)
                r.replay, r.reason = result.verdict, result.reason
            except (LeaseproofError, impl_error) as exc:  # one target's error, not the run's
                r.replay, r.reason = "error", f"{type(exc).__name__}: {exc}"
            except Exception as exc:  # a user's replay failing is that target's error, shown
                if own is None:
                    raise
                r.replay, r.reason = "error", f"the replay raised {type(exc).__name__}: {exc}"
            r.traces = sorted(trace_dir.glob("*.ndjson"))
            r.shown = any(_shows(p, t) for p in r.traces)
        else:
            r.model = str(kind)
            r.reason = str(verdict.get("detail") or verdict.get("message") or "")
        r.seconds = time.perf_counter() - began
        results.append(r)
    if validate:
        from conformance.interleave.validate import trace_validator

        paths = [p for r in results for p in r.traces]
        verdicts = trace_validator(root)(paths) if paths else {}
        for r in results:
            r.rejected = {str(p): verdicts[p] for p in r.traces if p in verdicts}
    return results
