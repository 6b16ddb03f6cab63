"""Reading traces: every way a file can fail to be a whole trace is `malformed`, with where."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.traces.read import Limits, parse_trace, read_trace_file
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


# -- untrusted input: a trace is written by code we do not control -----------------------------

def test_only_regular_files_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    fifo = tmp_path / "pipe.ndjson"
    os.mkfifo(fifo)  # no writer: opening it for a blocking read would hang the checker
    v = read_trace_file(fifo)
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.MALFORMED
    assert v.reason == "not a regular file (a FIFO): not read"
    dev = read_trace_file(Path("/dev/zero"))  # endless: never read
    assert isinstance(dev, TraceVerdict) and dev.reason == "not a regular file (a device): not read"
    d = read_trace_file(tmp_path)
    assert isinstance(d, TraceVerdict) and d.kind is TraceKind.MALFORMED and "directory" in (d.reason or "")
    assert opened == []  # reported, never opened (opening a device can act on it)


def test_lines_split_on_newline_only() -> None:
    # U+2028, U+2029, a form feed and a lone CR are legal inside JSON strings; str.splitlines
    # would cut the line there.
    odd = "a\u2028b\u2029c\x0cd\x1ce\x85f"
    t = parse_trace(text(HEADER, event(1, outcome=odd), {"kind": "end", "count": 1}), "t")
    assert isinstance(t, Trace) and t.events[0]["outcome"] == odd


def test_integral_floats_are_the_integers_they_are() -> None:
    t = parse_trace(text(HEADER, {**event(1), "seq": 1.0, "now": 2e3}, {"kind": "end", "count": 1.0}), "t")
    assert isinstance(t, Trace)
    assert t.events[0]["seq"] == 1 and type(t.events[0]["now"]) is int and t.events[0]["now"] == 2000


@pytest.mark.parametrize(("raw", "says"), [
    ('{"kind": "header", "x": NaN}', "line 1: not JSON (NaN is not a JSON number)"),
    ('{"kind": "header", "x": -Infinity}', "line 1: not JSON (-Infinity is not a JSON number)"),
    ("[" * 100_000 + "]" * 100_000, "line 1: JSON nested deeper than 32 levels"),
    ('{"kind": "header", "a": ' + "[" * 40 + "]" * 40 + "}", "line 1: JSON nested deeper than 32 levels"),
])
def test_hostile_json_is_malformed_not_a_crash(raw: str, says: str) -> None:
    v = parse_trace(raw + "\n", "t")
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.MALFORMED and v.reason == says


def test_a_huge_trace_gets_a_verdict_without_being_read_whole(tmp_path: Path) -> None:
    # Past the event cap: inconclusive, naming the cap; reading stops there.
    big = tmp_path / "big.ndjson"
    with big.open("w") as f:
        f.write(json.dumps(HEADER) + "\n")
        for i in range(1, 2_001):
            f.write(json.dumps(event(i)) + "\n")
        f.write(json.dumps({"kind": "end", "count": 2000}) + "\n")
    small = Limits(max_events=100)
    v = read_trace_file(big, limits=small)
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.INCONCLUSIVE
    assert v.reason == "more than 100 events: past the event cap (--max-events), so not checked"
    assert isinstance(read_trace_file(big), Trace)
    # Past the size cap: not opened for reading at all.
    v = read_trace_file(big, limits=Limits(max_bytes=1000))
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.INCONCLUSIVE and "past the size cap of 1,000" in (v.reason or "")
    # One line past the line cap: malformed, read no further than the cap.
    long = tmp_path / "long.ndjson"
    long.write_text(json.dumps({**HEADER, "run": "x" * 5000}) + "\n")
    v = read_trace_file(long, limits=Limits(max_line_bytes=1000))
    assert isinstance(v, TraceVerdict) and v.reason == "line 1: longer than 1,000 bytes"


def test_bad_utf8_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "t.ndjson"
    f.write_bytes(json.dumps(HEADER).encode() + b"\n" + b'{"kind": "event", "outcome": "\xff"}\n')
    v = read_trace_file(f)
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.MALFORMED and (v.reason or "").startswith("line 2: unreadable: not UTF-8")


def test_a_50_mb_trace_gets_a_clear_verdict(tmp_path: Path) -> None:
    # Default limits: the reader stops at the event cap instead of holding 50 MB of events.
    big = tmp_path / "big.ndjson"
    pad = "p" * 200
    with big.open("w") as f:
        f.write(json.dumps(HEADER) + "\n")
        for i in range(1, 200_001):
            f.write(json.dumps(event(i, outcome=pad)) + "\n")
        f.write(json.dumps({"kind": "end", "count": 200_000}) + "\n")
    assert big.stat().st_size > 50 * 10**6
    v = read_trace_file(big)
    assert isinstance(v, TraceVerdict) and v.kind is TraceKind.INCONCLUSIVE
    assert v.reason == "more than 50,000 events: past the event cap (--max-events), so not checked"
