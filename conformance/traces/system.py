"""How the traces of one system are checked: its trace spec, the ops and features it covers,
what a header may say (`conformance.traces.header`), how a header gives the spec's constants,
where mutation operators apply, what coverage needs.

Read from `traces/systems/<system>.yaml` (format: `traces/README.md`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from conformance.errors import LeaseproofError
from conformance.traces.header import PARTS, Field, declaration, parse_fields, problems
from conformance.traces.trace import Trace


class SystemFileError(LeaseproofError):
    """A traces/systems/*.yaml file is missing, unreadable or invalid (the message says where)."""


@dataclass(frozen=True)
class System:
    """A loaded system file."""

    name: str
    spec: str
    spec_path: Path
    ops: frozenset[str]
    features: frozenset[str]
    constants: dict[str, dict[str, Any]]
    time_fields: tuple[str, ...] = ()
    timeout: float = 300.0
    entity: str | None = None
    mutations: dict[str, Any] = field(default_factory=dict)
    coverage: dict[str, dict[str, Any]] = field(default_factory=dict)
    faults: frozenset[str] = frozenset()
    out_of_scope: dict[str, str] = field(default_factory=dict)
    header: dict[str, Field] = field(default_factory=dict)
    # op/outcome -> why: outcomes of the trace spec's Outcomes table the designed code cannot
    # reach (spec coverage does not require them: conformance/traces/spec_coverage.py)
    unreachable: dict[str, str] = field(default_factory=dict)


@cache
def _schema() -> dict[str, Any]:
    return json.loads(resources.files("conformance.traces").joinpath("system.schema.json").read_text())


def load_system(path: Path, tla_dir: Path) -> System:
    """Read and check one system file; its spec must exist in `tla_dir`."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SystemFileError(f"{path}: cannot read the system file: {exc}") from None
    if isinstance(data, dict) and "bounds" in data:
        raise SystemFileError(
            f"{path}: field bounds: replaced by `header:`, which declares every header setting and gate with its type "
            f"and bounds (settings.clock_slack_ms: {{type: integer, min: 0, max: 2}}; docs/your-own-system.md)")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(_schema()).iter_errors(data))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
        raise SystemFileError(f"{path}: field {where}: {error.message}")
    mutations = data.get("mutations", {})
    named = [("mutations.node_free_ops", op) for op in mutations.get("node_free_ops", ())]
    named += [(f"mutations.equivalent.{i}.{key}", op) for i, d in enumerate(mutations.get("equivalent", ()))
              for key in ("ops", "next") for op in d.get(key, ())]
    for name, need in data.get("coverage", {}).items():
        named.append((f"coverage.{name}.op", need["op"]))
        named += [(f"coverage.{name}.held_by_other", op) for op in need.get("held_by_other", {})]
    named += [("faults", op) for op in data.get("faults", ())]
    for where, op in named:
        if op not in data["ops"]:
            raise SystemFileError(f"{path}: field {where}: {op!r} is not one of the system's ops ({', '.join(data['ops'])})")
    try:
        header = parse_fields(data.get("header", {}))
    except ValueError as exc:
        raise SystemFileError(f"{path}: field header.{exc}") from None
    # A constant read from an undeclared setting could never be given: every header carrying it
    # is malformed, and every header without it too (or falls back to the default, unchecked).
    for name, how in data["constants"].items():
        part, _, member = str(how.get("from", "")).partition(".")
        if part in PARTS and declaration(header, part, member) is None:
            raise SystemFileError(f"{path}: field constants.{name}: from {how['from']}, which `header:` does not declare "
                                  f"(add {how['from']}: {{type: ...}} there)")
    spec_path = tla_dir / f"{data['spec']}.tla"
    if not spec_path.is_file():
        raise SystemFileError(f"{path}: field spec: no {spec_path}")
    return System(
        name=data["system"], spec=data["spec"], spec_path=spec_path, ops=frozenset(data["ops"]),
        features=frozenset(data.get("features", ())), constants=data["constants"],
        time_fields=tuple(data.get("time_fields", ())), timeout=float(data.get("timeout", 300)),
        mutations=mutations, coverage=data.get("coverage", {}), entity=data.get("entity"),
        faults=frozenset(data.get("faults", ())), out_of_scope=dict(data.get("out_of_scope", {})),
        header=header, unreachable=dict(data.get("unreachable", {})),
    )


def load_systems(root: Path) -> dict[str, System]:
    """Every system file under `root/traces/systems`, by system name."""
    systems: dict[str, System] = {}
    for path in sorted((root / "traces" / "systems").glob("*.yaml")):
        s = load_system(path, root / "tla")
        systems[s.name] = s
    return systems


def lookup(data: Any, dotted: str) -> Any:
    """`data["a"]["b"]` for "a.b"; KeyError when a part is missing."""
    for part in dotted.split("."):
        data = data[part]
    return data


def out_of_scope(system: System, trace: Trace) -> str | None:
    """Why `trace` is outside what `system`'s spec models (a feature its system file declares
    out of scope, with the declared reason), or None when it is in scope."""
    declared = sorted(set(trace.header.get("features", ())) & set(system.out_of_scope))
    if declared:
        return "; ".join(f"uses {f}, which the {system.spec} spec does not model: {system.out_of_scope[f]}" for f in declared)
    return None


def unknown(system: System, trace: Trace) -> str | None:
    """What `trace`'s header claims that `system` does not know, or None: a feature neither
    modelled nor declared out of scope, a fault kind it cannot count, a setting or gate its
    `header:` does not declare, or one of another type or past its bound. Any of these makes the
    trace malformed, even beside a feature declared out of scope: a renamed feature or setting
    must never silence a check."""
    known_features = system.features | set(system.out_of_scope)
    odd = sorted(set(trace.header.get("features", ())) - known_features)
    if odd:
        return (f"header field features: {', '.join(map(repr, odd))} unknown to the {system.name} system file "
                f"(modelled: {', '.join(sorted(system.features)) or 'none'}; out of scope: {', '.join(sorted(system.out_of_scope)) or 'none'})")
    odd = sorted(set(trace.header.get("faults", {})) - system.faults)
    if odd:
        return (f"header field faults: {', '.join(map(repr, odd))} not a fault kind of the {system.name} system "
                f"({', '.join(sorted(system.faults)) or 'none'})")
    return problems(system.header, trace.header, system.name)


def fault_lines(system: System, trace: Trace) -> list[dict[str, Any]]:
    """The trace's fault lines: events whose op is one of the system's fault kinds (`faults:`),
    each logged where the fault happened, by the node it hit."""
    return [e for e in trace.events if e.get("op") in system.faults]


def fault_claims(system: System, trace: Trace) -> str | None:
    """Why the header's `faults` counts disagree with the trace's fault lines, or None. A count
    buys nothing (the trace specs excuse a hidden step only where a fault line says so), so a
    header may leave them out; one that states them must state what the trace shows: a count
    that disagrees is a recorder that lost lines, or a header edited by hand."""
    claimed = trace.header.get("faults")
    if claimed is None:
        return None
    shown: dict[str, int] = {}
    for e in fault_lines(system, trace):
        shown[e["op"]] = shown.get(e["op"], 0) + 1
    stated = {k: v for k, v in claimed.items() if v}
    if stated == shown:
        return None
    kinds = sorted(set(stated) | set(shown))
    what = ", ".join(f"{k} {stated.get(k, 0)} (lines: {shown.get(k, 0)})" for k in kinds if stated.get(k, 0) != shown.get(k, 0))
    return f"header field faults: the counts disagree with the trace's fault lines: {what}"


def unknown_op(system: System, trace: Trace) -> str | None:
    """The first event whose op the spec has no action for, or None. Malformed for an in-scope
    trace (a feature declared out of scope may bring ops of its own: that trace is skipped)."""
    for e in trace.events:
        if e["op"] not in system.ops:
            return f"event {e['seq']}: field op: {e['op']!r} is not an op of the {system.name} system ({', '.join(sorted(system.ops))})"
    return None


def numbered(how: dict[str, Any], trace: Trace) -> list[int]:
    """1..N for a `numbered` constant: room for every entity of the trace that the spec numbers
    (distinct values of an event field, or lines of some ops): `at_least`, doubled until they
    fit, so that traces of like size share a TLC run."""
    what = how["numbered"]
    if "distinct" in what:
        need = len({e[what["distinct"]] for e in trace.events if e.get(what["distinct"]) is not None})
    else:
        need = sum(e["op"] in what["ops"] for e in trace.events)
    n = max(int(how.get("at_least", 1)), 1)
    while n < need:
        n *= 2
    return list(range(1, n + 1))


def per_trace(system: System) -> frozenset[str]:
    """The constants given one value per trace of a batch (`per_trace: true`): a sequence the
    spec indexes with its trace number, left out of the key that groups traces into batches."""
    return frozenset(n for n, how in system.constants.items() if how.get("per_trace"))


def constants_for(system: System, trace: Trace) -> dict[str, Any]:
    """The spec's constants for `trace`, from its header or its size (traces are grouped by
    these). Read once per trace and system object (kept on the trace: sorting a trace out,
    grouping it and writing its batch took five readings, a third of the time before the first
    TLC run); each call gets its own dict."""
    cached = trace.constants.get(system.name)
    if cached is not None and cached[0] is system:
        return dict(cached[1])
    out = _constants_for(system, trace)
    trace.constants[system.name] = (system, out)
    return dict(out)


def _constants_for(system: System, trace: Trace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, how in system.constants.items():
        if "value" in how:
            out[name] = how["value"]
            continue
        if "numbered" in how:
            out[name] = numbered(how, trace)
            continue
        try:
            out[name] = lookup(trace.header, how["from"])
        except (KeyError, TypeError):
            if "default" not in how:
                raise KeyError(f"the header has no {how['from']} (needed for the constant {name})") from None
            out[name] = how["default"]
    return out
