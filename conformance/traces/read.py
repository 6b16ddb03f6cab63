"""Reading an NDJSON trace file and checking that it is a whole, well-formed trace. Pure but
for `read_trace_file`, which reads the file.

Every problem makes the trace `malformed`, with the file line and the field: not JSON, against
the schema, no header first, a gap in `seq`, no end line (truncated), a count that disagrees,
no events at all. A malformed trace is never checked, so never accepted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from conformance.traces.trace import Trace, TraceKind, TraceVerdict

SCHEMA_NAME = "trace-line.schema.json"


def default_schema_dir() -> Path:
    """The project's traces/schema/ (beside the conformance package in a checkout)."""
    return Path(__file__).resolve().parents[2] / "traces" / "schema"


@cache
def _validator(schema_path: Path, kind: str | None = None) -> jsonschema.Draft202012Validator:
    """A validator for the schema at `schema_path`; for the line schema, for one `kind` of line
    (so that an error names the field, instead of "not valid under any of the given schemas")."""
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    if kind is not None:
        schema = {k: v for k, v in schema.items() if k != "oneOf"} | {"$ref": f"#/$defs/{kind}"}
    return jsonschema.Draft202012Validator(schema)


def _first_error(validator: jsonschema.Draft202012Validator, value: Any) -> str | None:
    # Most lines are valid: is_valid stops at the first failure and builds no error objects.
    if validator.is_valid(value):
        return None
    errors = sorted(validator.iter_errors(value), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return None
    best = jsonschema.exceptions.best_match(errors)
    where = ".".join(str(p) for p in best.absolute_path)
    return f"field {where}: {best.message}" if where else best.message


def parse_trace(text: str, source: str, schema_dir: Path | None = None) -> Trace | TraceVerdict:
    """The trace in `text`, or a `malformed` verdict that says where and why."""
    schema_dir = schema_dir or default_schema_dir()

    def malformed(reason: str) -> TraceVerdict:
        return TraceVerdict(source, TraceKind.MALFORMED, reason=reason)

    lines = text.splitlines()
    if not any(ln.strip() for ln in lines):
        return malformed("empty file: no header, no events")
    parsed: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            return malformed(f"line {number}: blank line inside the trace")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            return malformed(f"line {number}: not JSON ({exc.msg} at column {exc.colno})")
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind not in ("header", "event", "end"):
            return malformed(f"line {number}: field kind: must be header, event or end, not {kind!r}")
        problem = _first_error(_validator(schema_dir / SCHEMA_NAME, kind), value)
        if problem:
            return malformed(f"line {number}: {problem}")
        parsed.append(value)

    if parsed[0]["kind"] != "header":
        return malformed("line 1: the first line must be the header")
    header = parsed[0]
    event_schema = schema_dir / f"{header['system']}-event.schema.json"
    events: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
    for number, value in enumerate(parsed[1:], start=2):
        if end is not None:
            return malformed(f"line {number}: a line after the end line")
        if value["kind"] == "header":
            return malformed(f"line {number}: a second header")
        if value["kind"] == "end":
            end = value
            continue
        if value["seq"] != len(events) + 1:
            return malformed(f"line {number}: seq {value['seq']} where {len(events) + 1} was due (a lost or reordered event)")
        if value["node"] not in header["nodes"]:
            return malformed(f"line {number}: field node: {value['node']!r} is not one of the header's nodes {header['nodes']}")
        if event_schema.is_file():
            problem = _first_error(_validator(event_schema), value)
            if problem:
                return malformed(f"line {number}: {problem}")
        events.append(value)
    if end is None:
        return malformed(f"truncated: no end line after {len(events)} events")
    if end["count"] != len(events):
        return malformed(f"the end line counts {end['count']} events, the trace has {len(events)}")
    if not events:
        return malformed("empty trace: a header and an end line, no events")
    return Trace(source, header, tuple(events))


def read_trace_file(path: Path, schema_dir: Path | None = None,
                    read: Callable[[Path], str] = lambda p: p.read_text(encoding="utf-8")) -> Trace | TraceVerdict:
    """Read and check the trace file at `path` (missing or unreadable files are malformed too)."""
    try:
        text = read(path)
    except FileNotFoundError:
        return TraceVerdict(str(path), TraceKind.MALFORMED, reason="no such file")
    except (OSError, UnicodeDecodeError) as exc:
        return TraceVerdict(str(path), TraceKind.MALFORMED, reason=f"unreadable: {exc}")
    return parse_trace(text, str(path), schema_dir)


def trace_files(paths: list[Path]) -> list[Path]:
    """The trace files named: files as given, directories searched for *.ndjson (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(p.rglob("*.ndjson")))
        else:
            out.append(p)
    return out
