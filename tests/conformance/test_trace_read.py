"""Reading traces: every way a file can fail to be a whole trace is `malformed`, with where."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.traces.read import parse_trace, read_trace_file
from conformance.traces.trace import Trace, TraceKind, TraceVerdict

HEADER = {"kind": "header", "format": 1, "system": "counter", "gates": {}, "settings": {"limit": 5}, "nodes": ["n1", "n2"]}


def event(seq: int, **changes: Any) -> dict[str, Any]:
    return {"kind": "event", "seq": seq, "node": "n1", "op": "step", "now": seq, "outcome": "stepped", "state": {"x": seq}, **changes}


def text(*lines: Any) -> str:
    return "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines)


GOOD = text(HEADER, event(1), event(2), {"kind": "end", "count": 2})


def reason(t: str) -> str:
    v = parse_trace(t, "t.ndjson")
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.MALFORMED, v
    return v.reason or ""


def test_a_good_trace() -> None:
    t = parse_trace(GOOD, "t.ndjson")
    assert isinstance(t, Trace)
    assert t.system == "counter" and [e["seq"] for e in t.events] == [1, 2]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("", "empty file"),
        ("\n\n", "empty file"),
        (text(HEADER, {"kind": "end", "count": 0}), "empty trace: a header and an end line, no events"),
        (text(HEADER, event(1), event(2)), "truncated: no end line after 2 events"),
        (text(HEADER, event(1), event(2), {"kind": "end", "count": 3}), "the end line counts 3 events, the trace has 2"),
        (text(HEADER, event(1), event(3), {"kind": "end", "count": 2}), "line 3: seq 3 where 2 was due"),
        (text(event(1), {"kind": "end", "count": 1}), "line 1: the first line must be the header"),
        (text(HEADER, "{not json", {"kind": "end", "count": 0}), "line 2: not JSON"),
        (text(HEADER, event(1, op="Fetch!"), {"kind": "end", "count": 1}), "line 2: field op: 'Fetch!' does not match"),
        (text(HEADER, event(1, now=-5), {"kind": "end", "count": 1}), "line 2: field now: -5 is less than the minimum"),
        (text(HEADER, event(1, node="n9"), {"kind": "end", "count": 1}), "line 2: field node: 'n9' is not one of the header's nodes"),
        (text(HEADER, event(1), {"kind": "end", "count": 1}, event(2)), "line 4: a line after the end line"),
        (text(HEADER, HEADER, {"kind": "end", "count": 0}), "line 2: a second header"),
        (text({**HEADER, "format": 2}, event(1), {"kind": "end", "count": 1}), "line 1: field format: 1 was expected"),
        (text(HEADER, event(1)) + "\n" + text({"kind": "end", "count": 1}), "line 3: blank line"),
    ],
)
def test_malformed(content: str, says: str) -> None:
    assert says in reason(content)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    missing = read_trace_file(tmp_path / "nope.ndjson")
    assert isinstance(missing, TraceVerdict) and missing.reason == "no such file"
    binary = tmp_path / "bin.ndjson"
    binary.write_bytes(b"\xff\xfe\x00")
    v = read_trace_file(binary)
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.MALFORMED and "unreadable" in (v.reason or "")


def test_a_reader_that_goes_away_stops_the_cli_quietly(tmp_path: Path) -> None:
    # `leaseproof traces lint DIR | head -1`: the pipe closes under the CLI's later lines.
    trace = next((Path(__file__).resolve().parents[2] / "traces" / "corpus" / "workqueue" / "accepted").glob("*.ndjson"))
    for i in range(2000):
        (tmp_path / f"t{i}.ndjson").write_bytes(trace.read_bytes())
    cli = subprocess.Popen([sys.executable, "-m", "conformance.cli", "traces", "lint", str(tmp_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert cli.stdout is not None and cli.stderr is not None
    assert cli.stdout.readline().startswith(b"ok ")
    cli.stdout.close()
    err = cli.stderr.read().decode()
    assert cli.wait() == 141, err
    assert "Traceback" not in err and "Broken pipe" not in err, err
