"""Replaying a calibration model's counterexample on its implementation: the side effects.

    model file --TLC (or a saved `check --json`)--> counterexample --map.py--> Schedule
        --adapter (impl/<system>/replay.py)--> reproduced | blocked | unmapped | held

A replay runs both ways by default: with the model's gates (the guard off: the bug must show,
`reproduced`) and with its guards switched back on (the same schedule must be `blocked`). The
adapter is found by the model's module (`ADAPTERS`), imported by name: `conformance` never
imports the implementation's internals, and the schedule it hands over is plain data.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance.errors import LeaseproofError
from conformance.models.model import Model
from conformance.output.itf import ItfError, from_itf
from conformance.output.values import to_json
from conformance.replay.map import Schedule

# Per replayable TLA+ module: the map that reads its counterexamples (`schedule_of`), and the
# implementation's adapter (`replay(schedule_json, store=...)`, `NO_GATE`), by module name.
ADAPTERS = {
    "MCEngine": ("conformance.replay.map", "impl.engine.replay"),
    "Engine": ("conformance.replay.map", "impl.engine.replay"),
    "ReachEngine": ("conformance.replay.map", "impl.engine.replay"),  # model-guided workloads (conformance/guided)
    "MCWorkQueue": ("conformance.replay.workqueue_map", "impl.workqueue.replay"),
    "WorkQueue": ("conformance.replay.workqueue_map", "impl.workqueue.replay"),
    "ReachWorkQueue": ("conformance.replay.workqueue_map", "impl.workqueue.replay"),  # conformance/guided
    "MCCommandQueue": ("conformance.replay.command_map", "impl.workqueue.command_replay"),
    "CommandQueue": ("conformance.replay.command_map", "impl.workqueue.command_replay"),
    "ReachCommandQueue": ("conformance.replay.command_map", "impl.workqueue.command_replay"),  # conformance/guided
}


class NotReplayable(LeaseproofError):
    """The model cannot be replayed: no adapter for its module, or no counterexample to replay."""


@dataclass(frozen=True)
class Mode:
    """One way to replay a schedule: its name, the schedule, and the verdict it must give."""

    name: str  # "guard off" (the model's gates) or "guard on"
    schedule: Schedule
    expect: str
    why: str


@dataclass(frozen=True)
class Outcome:
    """One replay's result (the adapter's `Replay`, as JSON) against what it must give."""

    mode: Mode
    result: dict[str, Any]
    table: str

    @property
    def passed(self) -> bool:
        """Whether the replay gave the verdict its mode expects."""
        return self.result["verdict"] == self.mode.expect


def adapter_for(model: Model) -> ModuleType:
    """The implementation's replay adapter for `model`'s module."""
    name = ADAPTERS.get(model.module, (None, None))[1]
    if name is None:
        raise NotReplayable(f"{model.name}: no replay adapter for module {model.module} "
                            f"(replayable: {', '.join(sorted(ADAPTERS))})")
    return importlib.import_module(name)


def plain_states(verdict: dict[str, Any]) -> dict[str, Any]:
    """`verdict` with its counterexample's values untagged (sets as sorted lists, functions with
    other keys as pairs: `values.to_json`), the form the mappers read; a saved run of an earlier
    leaseproof, already untagged, reads the same."""
    cx = verdict.get("counterexample")
    if not isinstance(cx, dict) or not isinstance(cx.get("states"), list):
        return verdict
    try:
        states = [{**s, "variables": {k: to_json(from_itf(v)) for k, v in s["variables"].items()}} for s in cx["states"]]
    except (ItfError, KeyError, TypeError, AttributeError) as exc:
        raise LeaseproofError(f"the counterexample's states are not `check --json` states: {exc}") from None
    return {**verdict, "counterexample": {**cx, "states": states}}


def saved_verdict(path: Path, model: str) -> dict[str, Any]:
    """`model`'s verdict from a saved `leaseproof check --json` output."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LeaseproofError(f"cannot read {path} as the output of `leaseproof check --json`") from exc
    for m in data.get("models", []):
        if m.get("name") == model:
            return plain_states(dict(m["verdict"]))
    raise NotReplayable(f"{path} holds no outcome of model {model!r} "
                        f"(it has: {', '.join(m.get('name', '?') for m in data.get('models', []))})")


def live_verdict(model: Model) -> dict[str, Any]:
    """Check `model` with TLC now; its verdict as `check --json` gives it."""
    from conformance.check.runner import Tlc, check_model
    from conformance.report.json_report import verdict_json

    return plain_states(verdict_json(check_model(model, Tlc.locate())))


def modes(model: Model, verdict: dict[str, Any], adapter: ModuleType, which: str = "both") -> list[Mode]:
    """The replays to run (`which`: both, off, on), each with the verdict it must give."""
    if verdict.get("kind") != "violated" or not verdict.get("counterexample"):
        raise NotReplayable(f"{model.name}: TLC's verdict is {verdict.get('kind')}, with no counterexample to replay "
                            "(only a model that fails has one)")
    constants = {k: c.value for k, c in model.constants.items()}
    mapper = importlib.import_module(ADAPTERS[model.module][0])
    sched = mapper.schedule_of(model.name, verdict, constants)
    no_gate: dict[str, str] = getattr(adapter, "NO_GATE", {})
    off = sched.guards_off
    out: list[Mode] = []
    if which in ("both", "off"):
        if off and all(g in no_gate for g in off):
            out.append(Mode("guard off", sched, "blocked",
                            f"{', '.join(off)} off in the model; the implementation has no such gate and keeps it on"))
        elif off:
            out.append(Mode("guard off", sched, "reproduced", f"{', '.join(off)} off, as in the model"))
        else:
            out.append(Mode("as the model", sched, "reproduced", "no guard is off: a finding of the design"))
    if which in ("both", "on") and off:
        out.append(Mode("guard on", sched.with_guards_on(), "blocked", f"{', '.join(off)} switched back on"))
    if not out:
        raise NotReplayable(f"{model.name} switches no guard off: there is no guard to switch on (replay it as it is)")
    return out


def replay(mode: Mode, adapter: ModuleType, store: str) -> Outcome:
    """Run one replay on the implementation."""
    result = adapter.replay(mode.schedule.to_json(), store=store)
    return Outcome(mode, result.to_json(), result.table())
