"""Reading an NDJSON trace file and checking that it is a whole, well-formed trace. Pure but
for `read_trace_file`, which reads the file.

Every problem makes the trace `malformed`, with the file line and the field: not JSON (NaN
and Infinity included), against the schema, no header first, a gap in `seq`, no end line
(truncated), a count that disagrees, no events at all, JSON nested too deeply, a line too long,
not a regular file. A malformed trace is never checked, so never accepted. A file too large for
the `Limits` is `inconclusive`: not read whole, and never a pass.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs

from conformance.traces.trace import Trace, TraceKind, TraceVerdict

SCHEMA_NAME = "trace-line.schema.json"


def default_schema_dir() -> Path:
    """The project's traces/schema/ (beside the conformance package in a checkout)."""
    return Path(__file__).resolve().parents[2] / "traces" / "schema"


@dataclass(frozen=True)
class _Validators:
    """One schema, twice: jsonschema-rs (compiled, fast) says which lines are valid, and where it
    says a line is not, jsonschema (the reference implementation) decides, and names the field."""

    fast: Any
    exact: jsonschema.Draft202012Validator


@cache
def _validator(schema_path: Path, kind: str | None = None) -> _Validators:
    """Validators for the schema at `schema_path`; for the line schema, for one `kind` of line
    (so that an error names the field, instead of "not valid under any of the given schemas")."""
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    if kind is not None:
        schema = {k: v for k, v in schema.items() if k != "oneOf"} | {"$ref": f"#/$defs/{kind}"}
    return _Validators(jsonschema_rs.Draft202012Validator(schema), jsonschema.Draft202012Validator(schema))


def _fast_valid(validators: _Validators, value: Any) -> bool:
    """Does jsonschema-rs call `value` valid? False where it cannot take the value at all (an
    integer past 64 bits, say): then jsonschema decides."""
    try:
        return bool(validators.fast.is_valid(value))
    except Exception:  # noqa: BLE001 - any failure of the fast path leaves the line to jsonschema
        return False


def _first_error(validators: _Validators, value: Any) -> str | None:
    # Most lines are valid: the compiled validator says so in microseconds (jsonschema took about
    # 400 us a line, as long as TLC's whole check of a batched line).
    if _fast_valid(validators, value):
        return None
    validator = validators.exact
    if validator.is_valid(value):
        return None
    errors = sorted(validator.iter_errors(value), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return None
    best = jsonschema.exceptions.best_match(errors)
    where = ".".join(str(p) for p in best.absolute_path)
    return f"field {where}: {best.message}" if where else best.message


@dataclass(frozen=True)
class Limits:
    """How much one trace file may claim of the checker (a trace is input we do not control).

    A file past `max_bytes` or with more than `max_events` events is `inconclusive` (too large
    to check within these bounds, said so, never read whole); a line past `max_line_bytes` or
    JSON nested deeper than `max_depth` is `malformed`.
    """

    max_bytes: int = 64 * 2**20
    max_line_bytes: int = 4 * 2**20
    max_events: int = 50_000
    max_depth: int = 32


DEFAULT_LIMITS = Limits()


class _Bad(Exception):
    """A reason a trace gets a verdict before TLC (internal to this module)."""

    def __init__(self, kind: TraceKind, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent: the integer it is when it is integral (`1.0`,
    `2e3`), else the float (which no TLA+ value encodes: the trace is then malformed)."""
    value = float(text)
    if value.is_integer() and abs(value) < 2**62:
        return int(Decimal(text))
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth(value: Any, limit: int) -> int:
    """How deeply `value` nests (0 for a scalar), counting no further than `limit` + 1."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    inner = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(v, limit - 1) for v in inner), default=0)


def _decode(raw: str, number: int, limits: Limits) -> dict[str, Any]:
    try:
        value = json.loads(raw, parse_float=_number, parse_constant=_no_constant)
    except RecursionError:
        raise _Bad(TraceKind.MALFORMED, f"line {number}: JSON nested deeper than {limits.max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError, NaN and Infinity
        where = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise _Bad(TraceKind.MALFORMED, f"line {number}: not JSON ({msg}{where})") from None
    if _depth(value, limits.max_depth) > limits.max_depth:
        raise _Bad(TraceKind.MALFORMED, f"line {number}: JSON nested deeper than {limits.max_depth} levels")
    return value  # type: ignore[no-any-return]


class _Reader:
    """Checks the lines of one trace as they come, so that a huge file is never held whole."""

    def __init__(self, source: str, schema_dir: Path, limits: Limits) -> None:
        self.source, self.schema_dir, self.limits = source, schema_dir, limits
        self.header: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []
        self.end: dict[str, Any] | None = None
        self.event_schema: Path | None = None
        self.lines = 0

    def line(self, number: int, raw: str) -> None:
        self.lines = number
        if not raw.strip():
            raise _Bad(TraceKind.MALFORMED, f"line {number}: blank line inside the trace")
        value = _decode(raw, number, self.limits)
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind not in ("header", "event", "end"):
            raise _Bad(TraceKind.MALFORMED, f"line {number}: field kind: must be header, event or end, not {kind!r}")
        problem = _first_error(_validator(self.schema_dir / SCHEMA_NAME, kind), value)
        if problem:
            raise _Bad(TraceKind.MALFORMED, f"line {number}: {problem}")
        if self.header is None:
            if kind != "header":
                raise _Bad(TraceKind.MALFORMED, "line 1: the first line must be the header")
            self.header = value
            schema = self.schema_dir / f"{value['system']}-event.schema.json"
            self.event_schema = schema if schema.is_file() else None
            return
        if self.end is not None:
            raise _Bad(TraceKind.MALFORMED, f"line {number}: a line after the end line")
        if kind == "header":
            raise _Bad(TraceKind.MALFORMED, f"line {number}: a second header")
        if kind == "end":
            self.end = value
            return
        if value["seq"] != len(self.events) + 1:
            raise _Bad(TraceKind.MALFORMED, f"line {number}: seq {value['seq']} where {len(self.events) + 1} was due (a lost or reordered event)")
        if value["node"] not in self.header["nodes"]:
            raise _Bad(TraceKind.MALFORMED, f"line {number}: field node: {value['node']!r} is not one of the header's nodes {self.header['nodes']}")
        if self.event_schema is not None:
            problem = _first_error(_validator(self.event_schema), value)
            if problem:
                raise _Bad(TraceKind.MALFORMED, f"line {number}: {problem}")
        if len(self.events) >= self.limits.max_events:
            raise _Bad(TraceKind.INCONCLUSIVE, f"more than {self.limits.max_events:,} events: past the event cap "
                                               f"(--max-events), so not checked")
        self.events.append(value)

    def done(self) -> Trace:
        if self.header is None:
            raise _Bad(TraceKind.MALFORMED, "empty file: no header, no events")
        if self.end is None:
            raise _Bad(TraceKind.MALFORMED, f"truncated: no end line after {len(self.events)} events")
        if self.end["count"] != len(self.events):
            raise _Bad(TraceKind.MALFORMED, f"the end line counts {self.end['count']} events, the trace has {len(self.events)}")
        if not self.events:
            raise _Bad(TraceKind.MALFORMED, "empty trace: a header and an end line, no events")
        return Trace(self.source, self.header, tuple(self.events))


def _lines(text: str) -> list[str]:
    """NDJSON lines: split on `\n` only (a JSON string may hold U+2028 or a form feed)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse_trace(text: str, source: str, schema_dir: Path | None = None, limits: Limits = DEFAULT_LIMITS) -> Trace | TraceVerdict:
    """The trace in `text`, or a `malformed` (or, past `limits`, `inconclusive`) verdict that says
    where and why."""
    reader = _Reader(source, schema_dir or default_schema_dir(), limits)
    try:
        if not text.strip():
            raise _Bad(TraceKind.MALFORMED, "empty file: no header, no events")
        for number, raw in enumerate(_lines(text), start=1):
            reader.line(number, raw)
        return reader.done()
    except _Bad as bad:
        return TraceVerdict(source, bad.kind, reason=bad.reason)


def _not_regular(source: str, mode: int) -> TraceVerdict:
    what = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a directory" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    return TraceVerdict(source, TraceKind.MALFORMED, reason=f"not a regular file ({what}): not read")


def read_trace_file(path: Path, schema_dir: Path | None = None, limits: Limits = DEFAULT_LIMITS) -> Trace | TraceVerdict:
    """Read and check the trace file at `path`, a line at a time and within `limits`.

    Only a regular file is read: a FIFO, a device or a directory is reported without being
    opened (and the file is opened non-blocking and looked at again, so that one swapped in
    meanwhile cannot hang the checker). Missing and unreadable files are malformed too.
    """
    source = str(path)
    try:
        info = os.stat(path)  # before opening: opening a device can act on it
    except FileNotFoundError:
        return TraceVerdict(source, TraceKind.MALFORMED, reason="no such file")
    except OSError as exc:
        return TraceVerdict(source, TraceKind.MALFORMED, reason=f"unreadable: {exc.strerror or exc}")
    if not stat.S_ISREG(info.st_mode):
        return _not_regular(source, info.st_mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return TraceVerdict(source, TraceKind.MALFORMED, reason="no such file")
    except OSError as exc:
        return TraceVerdict(source, TraceKind.MALFORMED, reason=f"unreadable: {exc.strerror or exc}")
    info = os.fstat(fd)  # the file opened may not be the one looked at: look again
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return _not_regular(source, info.st_mode)
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limits.max_bytes:
            return TraceVerdict(source, TraceKind.INCONCLUSIVE,
                                reason=f"{info.st_size:,} bytes: past the size cap of {limits.max_bytes:,} (--max-bytes), so not checked")
        reader = _Reader(source, schema_dir or default_schema_dir(), limits)
        try:
            number = 0
            while True:
                raw = f.readline(limits.max_line_bytes + 1)
                if not raw:
                    break
                number += 1
                if len(raw) > limits.max_line_bytes:
                    raise _Bad(TraceKind.MALFORMED, f"line {number}: longer than {limits.max_line_bytes:,} bytes")
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _Bad(TraceKind.MALFORMED, f"line {number}: unreadable: not UTF-8 ({exc.reason} at byte {exc.start})") from None
                reader.line(number, line.removesuffix("\n"))
            return reader.done()
        except _Bad as bad:
            return TraceVerdict(source, bad.kind, reason=bad.reason)
        except OSError as exc:
            return TraceVerdict(source, TraceKind.MALFORMED, reason=f"unreadable: {exc.strerror or exc}")


def trace_files(paths: list[Path]) -> list[Path]:
    """The trace files named: files as given, directories searched for *.ndjson (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(p.rglob("*.ndjson")))
        else:
            out.append(p)
    return out
