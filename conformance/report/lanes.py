"""The swimlanes of a model's counterexample: which lanes (its nodes), what the actions are called
(our specs' replay maps name them; any other spec keeps TLC's labels), and what the marked step
says broke there.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from conformance.check.compare import Outcome
from conformance.models.model import Model
from conformance.output.counterexample import Counterexample
from conformance.output.verdict import Kind, PropertyKind, Verdict
from conformance.report.swimlane import Swimlane, counterexample_swimlane

log = logging.getLogger(__name__)


# The names specs give the set of their actors, in the order they are looked for: the engine's
# Nodes, the queue's ConsumerIds, the command layer's WorkerIds, and the usual others.
NODE_CONSTANTS = ("Nodes", "Consumers", "ConsumerIds", "WorkerIds", "Workers", "Processes", "Procs", "Servers", "Clients", "Replicas")


def nodes_of(model: Model) -> tuple[str, ...]:
    """The node lanes of a model: the members of its first constant named as in NODE_CONSTANTS
    that is a set of model values; none (a store lane only) when it has no such constant."""
    for name in NODE_CONSTANTS:
        c = model.constants.get(name)
        if c is not None and c.kind == "model_values":
            return tuple(str(n) for n in c.value)
    return ()


def _namer(model: Model, verdict: Verdict) -> Any:
    """A namer for the spec's actions where a replay map reads this module (our engine, queue
    and command specs); None for any other spec, whose TLC labels are used as they are."""
    from conformance.replay.run import ADAPTERS, plain_states
    from conformance.report.json_report import verdict_json

    if model.module not in ADAPTERS:
        return None

    def name(cx: Counterexample) -> dict[int, str] | None:
        try:
            mapper = importlib.import_module(ADAPTERS[model.module][0])
            constants = {k: c.value for k, c in model.constants.items()}
            sched = mapper.schedule_of(model.name, plain_states(verdict_json(verdict)), constants)
        except Exception:  # naming is a nicety: a transition no map explains keeps TLC's label
            log.debug("no action names for %s", model.name, exc_info=True)
            return None
        out = {}
        for s in sched.steps:
            args = ", ".join(str(a) for a in (s.node, s.wf, s.slot) if a)
            out[s.state] = f"{s.action}({args})" if args else s.action
        return out

    return name


def broken_note(v: Verdict) -> str:
    """What the marked step says: which property broke there, and how."""
    prop = v.property or (v.property_kind.value if v.property_kind else "a property")
    cx = v.counterexample
    if v.kind is Kind.DEADLOCK:
        return "deadlock: no action is enabled in this state"
    if v.property_kind is PropertyKind.TEMPORAL and cx is not None:
        if cx.back_to is not None:
            return f"{prop} broken: from here the behaviour loops back to state {cx.back_to} forever"
        if cx.stutters:
            return f"{prop} broken: the behaviour stutters here forever"
    if v.property_kind is PropertyKind.ACTION:
        return f"{prop} broken by this step"
    return f"{prop} broken here"


def model_swimlane(o: Outcome, full: bool = False) -> Swimlane | None:
    """The swimlanes of an outcome's counterexample (None when it has none); `full` lists the
    unchanged variables too."""
    v = o.verdict
    if v.counterexample is None:
        return None
    return counterexample_swimlane(v.counterexample, nodes_of(o.model), title=f"{o.model.name}: {v.summary()}",
                                   note=broken_note(v), namer=_namer(o.model, v), full=full)
