"""Every header setting and gate is declared in its system file, typed and bounded: a header
member not declared, of another type, or past a bound is malformed before TLC runs, naming the
field, the value and the declaration (conformance/traces/header.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.check.runner import Tlc
from conformance.traces.check import check_traces, triage
from conformance.traces.header import Field, parse_fields, problems
from conformance.traces.read import parse_trace, read_trace_file
from conformance.traces.system import SystemFileError, constants_for, load_system, load_systems, unknown
from conformance.traces.trace import Trace, TraceKind

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "fixtures" / "project"


@pytest.fixture(scope="module")
def real() -> dict[str, Any]:
    return load_systems(ROOT)


def corpus(system: str, name: str) -> Trace:
    t = read_trace_file(ROOT / "traces" / "corpus" / system / name)
    assert isinstance(t, Trace), t
    return t


def edited(t: Trace, source: str, part: str = "settings", **values: Any) -> Trace:
    """`t` with its header's `part` (settings or gates) changed as given."""
    return Trace(source, {**t.header, part: {**t.header[part], **values}}, t.events)


ACCEPTED = {"engine": "accepted/node-crash-then-fetch.ndjson",
            "workqueue": "accepted/sim-reclaims-ack-failure-rejection.ndjson",
            "command": "accepted/test-two-instances-long-handler.ndjson"}

# The four: each ended inconclusive after a TLC evaluation error, and split its batch.
# `wall_clock` is no setting any more (a real clock buys nothing: faults are lines of the trace),
# so a header that claims it, of any type, is malformed naming it.
NOT_DECLARED = "header field settings.wall_clock: not declared in traces/systems/{}.yaml header (declared settings: "
WRONG_TYPES = [
    ("workqueue", "wall_clock", 1, NOT_DECLARED.format("workqueue")),
    ("command", "wall_clock", 1, NOT_DECLARED.format("command")),
    ("command", "drained", 0, "header field settings.drained: 0 is not a boolean "
                              "(traces/systems/command.yaml header: settings.drained is a boolean)"),
    ("command", "heartbeat_ms", True, "header field settings.heartbeat_ms: true is not an integer "
                                      "(traces/systems/command.yaml header: settings.heartbeat_ms is an integer, 33 to 3600000)"),
    ("engine", "max_retries", -1, "header field settings.max_retries: -1 is below its bound 0 "
                                  "(traces/systems/engine.yaml header: settings.max_retries is an integer, 0 to 100)"),
]


@pytest.mark.parametrize(("system", "name", "value", "reason"), WRONG_TYPES,
                         ids=[f"{s}-{n}={json.dumps(v)}" for s, n, v, _ in WRONG_TYPES])
def test_a_wrong_type_or_a_crossed_bound_is_malformed_naming_the_field(real: dict[str, Any], system: str, name: str,
                                                                       value: Any, reason: str) -> None:
    bad = edited(corpus(system, ACCEPTED[system]), "bad", **{name: value})
    decided = triage([bad, corpus(system, ACCEPTED[system])], real).decided
    assert list(decided) == ["bad"]
    assert decided["bad"].kind is TraceKind.MALFORMED
    assert decided["bad"].reason == reason or (reason.endswith("(declared settings: ") and decided["bad"].reason.startswith(reason))


def test_a_setting_the_system_file_does_not_declare_is_malformed(real: dict[str, Any]) -> None:
    # A renamed `drained` would otherwise fall back to its default, false: the trace need not end
    # drained.
    t = corpus("command", ACCEPTED["command"])
    renamed = Trace("renamed", {**t.header, "settings": {**{k: v for k, v in t.header["settings"].items() if k != "drained"},
                                                        "stream_drained": True}}, t.events)
    why = unknown(real["command"], renamed) or ""
    assert why.startswith("header field settings.stream_drained: not declared in traces/systems/command.yaml header "
                          "(declared settings: clock_slack_ms, concurrency, drained, "), why


def test_a_gate_that_is_not_a_boolean_or_not_declared_is_malformed(real: dict[str, Any]) -> None:
    t = corpus("engine", ACCEPTED["engine"])
    number = edited(t, "number", "gates", HONOUR_CHECK=1)
    assert unknown(real["engine"], number) == ("header field gates.HONOUR_CHECK: 1 is not a boolean "
                                               "(traces/systems/engine.yaml header: gates.HONOUR_CHECK is a boolean)")
    typo = edited(t, "typo", "gates", HONOR_CHECK=True)
    assert (unknown(real["engine"], typo) or "").startswith("header field gates.HONOR_CHECK: not declared")
    # Read from a file, the line schema says it first (gates are {name: bool}).
    line = {"kind": "header", "format": 1, "system": "engine", "gates": {"HONOUR_CHECK": 1}, "settings": {}, "nodes": ["n1"]}
    v = parse_trace(json.dumps(line) + "\n", "t.ndjson")
    assert not isinstance(v, Trace) and v.kind is TraceKind.MALFORMED and "gates.HONOUR_CHECK" in (v.reason or ""), v


def test_a_decimal_is_not_an_integer_but_an_integral_float_is() -> None:
    counter = load_systems(PROJECT)["counter"]

    def read(limit: str) -> Trace:
        text = (f'{{"kind": "header", "format": 1, "system": "counter", "gates": {{}}, "settings": {{"limit": {limit}}}, "nodes": ["n1"]}}\n'
                '{"kind": "event", "seq": 1, "node": "n1", "op": "step", "now": 1, "outcome": "stepped", "state": {"x": 1}}\n'
                '{"kind": "end", "count": 1}\n')
        t = parse_trace(text, f"limit-{limit}")
        assert isinstance(t, Trace), t
        return t

    assert unknown(counter, read("1.5")) == ("header field settings.limit: 1.5 is not an integer "
                                            "(traces/systems/counter.yaml header: settings.limit is an integer, 0 to 100)")
    whole = read("1.0")
    assert unknown(counter, whole) is None and constants_for(counter, whole)["Limit"] == 1


def test_a_hostile_name_or_value_is_escaped_and_cut_short() -> None:
    fields = parse_fields({"settings.mode": {"type": "string", "enum": ["fast", "safe"]}})
    why = problems(fields, {"settings": {"mode": "x\n====" * 40, "we\u2028ird\n": 1}}, "s") or ""
    assert "\n" not in why and "\u2028" not in why
    assert 'header field settings.mode: "x\\n====x\\n====' in why and '... is not one of "fast", "safe" (traces/systems/s.yaml header: settings.mode is one of "fast", "safe")' in why
    assert 'header field settings["we\\u2028ird\\n"]: not declared in traces/systems/s.yaml header (declared settings: mode)' in why


def test_a_wildcard_declares_every_gate_and_a_named_one_takes_precedence() -> None:
    fields = parse_fields({"gates.*": {"type": "boolean"}, "gates.level": {"type": "integer", "min": 0, "max": 3}})
    assert problems(fields, {"gates": {"anything": True, "level": 2}}, "s") is None
    assert problems(fields, {"gates": {"anything": "yes"}}, "s") == (
        'header field gates.anything: "yes" is not a boolean (traces/systems/s.yaml header: gates.anything is a boolean)')
    assert problems(fields, {"settings": {"x": 1}}, "s") == (
        "header field settings.x: not declared in traces/systems/s.yaml header (declared settings: none)")


def test_many_problems_are_listed_up_to_five() -> None:
    why = problems({}, {"settings": {f"s{i}": i for i in range(9)}}, "s") or ""
    assert why.count("not declared") == 5 and why.endswith("; and 4 more")


def test_every_setting_and_gate_the_recorders_write_is_declared(real: dict[str, Any], tmp_path: Path) -> None:
    # The headers the recorders write, with their default settings and a real server's scaled
    # ones: a setting added to impl/ and not to the system file would make every trace malformed.
    from dataclasses import replace

    from impl.engine.export import engine_header
    from impl.engine.model import Gates, Settings
    from impl.engine.run import RunConfig
    from impl.workqueue.sim import SimConfig, for_real_server, seeded

    for settings in (Settings(), RunConfig(store_url="memory://").settings()):
        head = engine_header(Gates(), settings, ["n1"], "r")
        assert problems(real["engine"].header, head, "engine") is None, head
    for system in ("workqueue", "command"):
        sim = seeded(SimConfig(system=system), 0)
        sim.run()
        for view in sorted({"workqueue", system}):
            t = read_trace_file(sim.write_trace(tmp_path / f"{system}-{view}.ndjson", view=view))
            assert isinstance(t, Trace), t
            assert unknown(real[view], t) is None
            scaled = {**t.header["settings"], **for_real_server(replace(SimConfig(), system=system)).settings.as_dict(),
                      "clock_slack_ms": 2}
            assert problems(real[view].header, {**t.header, "settings": scaled}, view) is None, scaled


@pytest.mark.tlc
def test_a_bad_header_leaves_its_batch_whole(real: dict[str, Any]) -> None:
    # Before TLC: the batch of the others is checked in one run, with their own verdicts (a type
    # error used to stop TLC on an evaluation error, and the batch was split and run again).
    good = corpus("command", ACCEPTED["command"])
    known_bad = corpus("command", "rejected/sim-guard-taken-without-nx.ndjson")
    bad = [edited(good, "wall_clock=1", wall_clock=1), edited(good, "drained=0", drained=0),
           edited(good, "heartbeat_ms=true", heartbeat_ms=True)]
    runs: list[int] = []
    verdicts = check_traces([good, bad[0], known_bad, *bad[1:]], real, Tlc.locate(),
                            on_run=lambda b, v: runs.append(len(b.traces)))
    assert [v.kind for v in verdicts] == [TraceKind.ACCEPTED, TraceKind.MALFORMED, TraceKind.REJECTED,
                                          TraceKind.MALFORMED, TraceKind.MALFORMED], [v.describe() for v in verdicts]
    assert runs == [2]


def write_system(tmp_path: Path, **changes: Any) -> Path:
    """The fixture's counter.yaml with `changes` (None: a key removed), in `tmp_path`."""
    data = yaml.safe_load((PROJECT / "traces" / "systems" / "counter.yaml").read_text())
    for k, v in changes.items():
        if v is None:
            data.pop(k)
        else:
            data[k] = v
    path = tmp_path / "counter.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("changes", "says"), [
    ({"bounds": {"settings.limit": {"max": 5}}}, "field bounds: replaced by `header:`"),
    ({"header": {"settings.limit": {"type": "integer", "min": 5, "max": 1}}}, "field header.settings.limit: min 5 is above max 1"),
    ({"header": {"settings.limit": {"type": "integer", "min": 0, "max": "5"}}}, "field header.settings.limit"),
    ({"header": {"settings.limit": {"type": "boolean", "max": 5}}}, "field header.settings.limit"),
    ({"header": {"features.x": {"type": "boolean"}, "settings.limit": {"type": "integer"}}}, "field header"),
    ({"header": {"settings.limit": {"type": "integer", "max": 5, "admits": [
        {"bound": "min", "trace": "rejected/x.ndjson", "why": "a reason long enough"}]}}},
     "field header.settings.limit: admits rejected/x.ndjson at its min, which it does not declare"),
    ({"header": {"settings.other": {"type": "integer"}}},
     "field constants.Limit: from settings.limit, which `header:` does not declare"),
])
def test_a_system_file_with_a_bad_header_section_is_refused_naming_it(tmp_path: Path, changes: dict[str, Any], says: str) -> None:
    with pytest.raises(SystemFileError) as info:
        load_system(write_system(tmp_path, **changes), PROJECT / "tla")
    assert says in str(info.value), str(info.value)


def test_a_system_file_without_a_header_section_declares_nothing(tmp_path: Path) -> None:
    # Loaded (a system whose headers carry no setting or gate needs none), but a trace that
    # carries one is malformed, naming the fix: a system file from before `header:` fails loudly.
    system = load_system(write_system(tmp_path, header=None, constants={"Nodes": {"from": "nodes"}}), PROJECT / "tla")
    bare = Trace("bare", {"system": "counter", "gates": {}, "settings": {}, "nodes": ["n1"]}, ())
    assert system.header == {} and unknown(system, bare) is None
    limited = Trace("limited", {**bare.header, "settings": {"limit": 3}}, ())
    assert unknown(system, limited) == ("header field settings.limit: not declared in traces/systems/counter.yaml header "
                                        "(declared settings: none)")


def test_field_describes_itself() -> None:
    assert [Field("integer", max=3).describe(), Field("integer").describe(), Field("string").describe()] == [
        "an integer, at most 3", "an integer", "a string"]
