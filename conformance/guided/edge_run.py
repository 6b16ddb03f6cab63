"""Edge-guided runs of one system: dump its base model's state graph, find a behaviour for each
projected edge (`edges.py`), replay each on the implementation, validate the traces, and measure
which projected edges the traces show. Side effects: TLC, the stores, files."""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.check.runner import Tlc, run_once
from conformance.errors import LeaseproofError
from conformance.guided.edges import EdgeCoverage, GraphError, StateGraph, edge_paths, parse_dot
from conformance.guided.own import OwnReplayError, load_own_module, run_own
from conformance.guided.projection import ADMITS, PROJECTIONS
from conformance.guided.targets import GUIDED_KEYS
from conformance.models.model import Model, load_model
from conformance.output.verdict import Kind
from conformance.replay.run import ADAPTERS
from conformance.traces.spec_coverage import count_steps, outcomes_table
from conformance.traces.system import load_systems


class EdgeError(LeaseproofError):
    """The system's state graph cannot be had (no projection for it, or its model did not pass)."""


@dataclass
class EdgeRun:
    """One projected edge: the behaviour that takes it, how its replay went, its traces."""

    pair: tuple[str, str]
    steps: int = 0
    replay: str = "-"
    reason: str = ""
    traces: list[Path] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    declared: str | None = None  # why the code differs here, from the system's `edges: known:`

    @property
    def difference(self) -> str | None:
        """Where the code did not follow the model along this edge (None: it did)."""
        if self.replay == "blocked":
            return f"the model can, the code cannot: {self.reason}"
        if self.replay in ("unmapped", "error"):
            return f"{self.replay}: {self.reason}"
        return None

    @property
    def finding(self) -> str | None:
        """A rejected trace always; a difference unless declared; a declared one the code no
        longer shows (the declaration is stale)."""
        if self.rejected:
            return "trace rejected: " + "; ".join(f"{Path(k).name}: {v}" for k, v in self.rejected.items())
        if self.declared is None:
            return self.difference
        if self.difference is None:
            return f"declared known ({self.declared}), but the code follows the model here: drop the entry"
        return None

    def line(self) -> str:
        a, b = self.pair
        if self.finding is None and self.declared is not None:
            return f"known     edge {a} -> {b} ({self.steps} steps): {self.declared} [{self.difference}]"
        return f"FINDING   edge {a} -> {b} ({self.steps} steps): {self.finding}"


def known_differences(system: str, base: dict[str, Any]) -> dict[str, str]:
    """The base model's `edges: known:`: an edge (`A -> B`, as the output names it) where the
    code is known to differ from the model, and why."""
    known = (base.get("edges") or {}).get("known") or {}
    if not isinstance(known, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                             for k, v in known.items()):
        raise EdgeError(f"guided/{system}.yaml: edges: known must map an edge (`A -> B`) to why the code differs "
                        f"there, not {known!r:.200}")
    return known


def _graph_model(root: Path, system: str, base: dict[str, Any], out: Path) -> Model:
    """The base model, with what its `edges: {constants: ...}` changes for the graph (a smaller
    model where the targets' base model has too many states to dump)."""
    data = {k: v for k, v in base.items() if k not in GUIDED_KEYS}
    edges = base.get("edges") or {}
    if not isinstance(edges, dict) or set(edges) - {"constants", "known"} or not isinstance(edges.get("constants", {}), dict):
        raise EdgeError(f"guided/{system}.yaml: edges must be a mapping with only `constants` (a mapping of "
                        f"constant -> value) and `known` (edge -> why), not {edges!r:.200}")
    unknown = sorted(set(edges.get("constants", {})) - set(data.get("constants") or {}))
    if unknown:
        raise EdgeError(f"guided/{system}.yaml: edges: constants names what the base model does not: {', '.join(unknown)}")
    data["constants"] = {**(data.get("constants") or {}), **edges.get("constants", {})}
    data |= {"name": f"graph_{system}", "expect": {"verdict": "ok"},
             "why": "the base model's state graph, dumped for the edge-guided runs"}
    path = out / "models" / f"graph_{system}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_model(path, (root / "tla",))


def state_graph(root: Path, system: str, base: dict[str, Any], out: Path, tlc: Tlc) -> tuple[StateGraph, Model]:
    """The base model's state graph (TLC's `-dump dot`, written under `out`) and the model."""
    model = _graph_model(root, system, base, out)
    dot = (out / f"graph_{system}.dot").resolve()
    verdict, _ = run_once(model, tlc, 1, extra=("-dump", "dot", str(dot)))
    if verdict.kind is not Kind.OK:
        raise EdgeError(f"the base model guided/{system}.yaml ended {verdict.summary()} when its graph was dumped: "
                        "no state graph")
    try:
        with dot.open(encoding="utf-8") as f:
            return parse_dot(f), model
    except (OSError, GraphError) as exc:
        raise EdgeError(f"cannot read the state graph {dot}: {exc}") from None


def run_edges(root: Path, system: str, base: dict[str, Any], out: Path, *, store: str, tlc: Tlc,
              validate: Callable[[list[Path]], dict[Path, str]] | None,
              accepted: list[Path]) -> tuple[EdgeCoverage, list[EdgeRun]]:
    """Replay a behaviour for each projected edge of `system`'s base model; the coverage counts
    the pairs that the accepted traces of these runs, and `accepted` (the targets' accepted
    traces), show. `validate` is a trace validator (paths -> {path: why not accepted}), or None
    to take every trace as accepted."""
    own = load_own_module(root, base["replay"]) if "replay" in base else None
    if own is None and system not in PROJECTIONS:
        raise EdgeError(f"no edge projection for {system!r} (systems with one: {', '.join(sorted(PROJECTIONS))})")
    if own is not None and not callable(getattr(own, "project", None)):
        raise EdgeError(f"guided/{system}.yaml's replay file defines no project(before, after) (docs/your-own-system.md)")
    sysm = load_systems(root)[system]
    table = outcomes_table(sysm.spec_path.read_text(encoding="utf-8"), f"{sysm.spec}.tla") or {}
    known = known_differences(system, base)
    graph, model = state_graph(root, system, base, out, tlc)
    constants = {k: c.value for k, c in model.constants.items()}
    if own is not None:
        user_project = own.project
        paths = edge_paths(graph, lambda p, q: tuple((str(e), str(s)) for e, s in user_project(p, q)))
        mapper = adapter = None
        impl_error: type[Exception] = OwnReplayError
    else:
        paths = edge_paths(graph, PROJECTIONS[system](constants), ADMITS.get(system))
        mapper_name, adapter_name = ADAPTERS[model.module]
        mapper, adapter = importlib.import_module(mapper_name), importlib.import_module(adapter_name)
        impl_error = importlib.import_module("impl.errors").ImplError
    stray = sorted(set(known) - {" -> ".join(p) for p in paths})
    if stray:
        raise EdgeError(f"guided/{system}.yaml: edges: known names edges the graph does not have: {'; '.join(stray)}")
    runs = []
    for i, pair in enumerate(sorted(paths), 1):
        run = EdgeRun(pair, declared=known.get(" -> ".join(pair)))
        states = [{"index": n, "action": "Next", "variables": graph.states[s]} for n, s in enumerate(paths[pair], 1)]
        verdict = {"kind": "violated", "property": "Edge", "counterexample": {"states": states}}
        trace_dir = out / "edges" / f"{i:03d}"
        try:
            if own is not None:
                run.steps = len(states) - 1
                result: Any = run_own(own.replay, verdict, constants, trace_dir)
            else:
                assert mapper is not None and adapter is not None
                sched = mapper.schedule_of(f"edge_{i:03d}", verdict, constants)
                run.steps = len(sched.steps)
                result = adapter.replay(sched.to_json(), store=store, trace_dir=trace_dir)
            run.replay, run.reason = result.verdict, result.reason
        except (LeaseproofError, impl_error) as exc:
            run.replay, run.reason = "error", f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a user's replay failing is that edge's error, shown
            if own is None:
                raise
            run.replay, run.reason = "error", f"the replay raised {type(exc).__name__}: {exc}"
        run.traces = sorted(trace_dir.glob("*.ndjson"))
        runs.append(run)
    mine = [p for r in runs for p in r.traces]
    verdicts = validate(mine) if validate is not None and mine else {}
    for r in runs:
        r.rejected = {str(p): verdicts[p] for p in r.traces if p in verdicts}
    seen: Counter[str] = Counter()
    shown: Counter[tuple[str, str]] = Counter()
    for p in [*mine, *accepted]:
        if p in verdicts:
            continue  # only what an accepted trace shows counts
        events = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        count_steps(events, table, sysm.entity, seen, shown)
    return EdgeCoverage(model.name, set(paths), set(shown), len(graph.states), len(graph.edges)), runs
