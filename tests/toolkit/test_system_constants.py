"""Constants a system file derives for a trace (pure): from the header, fixed, or numbered from
the trace's own size, so that no trace is rejected for being larger than a fixed bound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.traces.system import System, constants_for
from conformance.traces.trace import Trace


def system(**constants: dict[str, Any]) -> System:
    return System(name="q", spec="Q", spec_path=Path("Q.tla"), ops=frozenset({"offer", "reclaim"}),
                  features=frozenset(), constants=constants)


def trace(entries: int, reclaims: int = 0) -> Trace:
    events = [{"op": "offer", "entry": f"{i}-0"} for i in range(entries)] + [{"op": "reclaim", "entry": "0-0"}] * reclaims
    return Trace("t", {"system": "q", "settings": {"vt": 30}}, tuple(events))


@pytest.mark.parametrize(("entries", "size"), [(0, 4), (3, 4), (4, 4), (5, 8), (17, 32)])
def test_numbered_by_distinct_values_doubles_until_they_fit(entries: int, size: int) -> None:
    c = constants_for(system(Entries={"numbered": {"distinct": "entry"}, "at_least": 4}), trace(entries))
    assert c["Entries"] == list(range(1, size + 1))


def test_numbered_by_lines_of_ops() -> None:
    s = system(Workers={"numbered": {"ops": ["offer", "reclaim"]}, "at_least": 2})
    assert constants_for(s, trace(2, reclaims=3))["Workers"] == list(range(1, 9))


def test_header_fixed_and_default_constants() -> None:
    s = system(VT={"from": "settings.vt"}, Slack={"from": "settings.slack", "default": 0}, Max={"value": 9})
    assert constants_for(s, trace(1)) == {"VT": 30, "Slack": 0, "Max": 9}
    with pytest.raises(KeyError, match="the header has no settings.lease"):
        constants_for(system(Lease={"from": "settings.lease"}), trace(1))


def test_constants_are_read_once_per_trace_and_system_object(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sorting a trace out, grouping it and writing its batch each ask for its constants: read
    # once, kept on the trace. A system file read again (another object, other constants) and a
    # trace replaced with another header must not get the kept ones; nor may a caller's edit.
    from dataclasses import replace

    import conformance.traces.system as system_module

    reads = []
    real = system_module._constants_for
    monkeypatch.setattr(system_module, "_constants_for", lambda s, t: reads.append(t.source) or real(s, t))
    s = system(VT={"from": "settings.vt"}, Entries={"numbered": {"distinct": "entry"}, "at_least": 4})
    t = trace(5)
    first = constants_for(s, t)
    first["VT"] = 0
    assert constants_for(s, t) == {"VT": 30, "Entries": list(range(1, 9))} and reads == ["t"]
    other = system(VT={"value": 7})
    assert constants_for(other, t) == {"VT": 7} and reads == ["t", "t"]
    slower = replace(t, header={**t.header, "settings": {"vt": 45}})
    assert constants_for(s, slower)["VT"] == 45
