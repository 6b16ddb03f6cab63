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
