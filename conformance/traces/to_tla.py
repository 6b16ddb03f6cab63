"""Traces as TLA+ text: a trace is untrusted input, so every value is rendered, never pasted.

Pure. JSON objects become records (or, where a key is not a plain identifier, the equal function
from strings: `e.op` reads both),
arrays sequences, strings escaped TLA+ strings, null the model value `Nil`. A string's
characters outside printable ASCII, and "@", become `\\uXXXX` after its backslashes are
doubled, so the encoding stays one-to-one, nothing in a string can end it early, and no string
can print TLC's `-tool` marker `@!@!@` (which would open or close a message in its output).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from conformance.errors import LeaseproofError
from conformance.traces.trace import Trace

# TLC's integers are 32-bit; -2^31 has no literal (TLC reads "-2147483648" as the negation of a
# number too big for it, and stops).
TLC_INT_MIN, TLC_INT_MAX = -(2**31 - 1), 2**31 - 1
# A record field is a key that is surely a TLA+ identifier and no keyword: it starts with a
# lower-case letter (every TLA+ keyword, and the WF_/SF_ prefixes, are upper-case), and the
# whole key matches (`fullmatch`: "op\n" is no identifier). Any other key (`_1`, `WF_x`,
# `CASE`, "a b") becomes a string key of a function, which `e.key` reads just the same.
_FIELD = re.compile(r"[a-z][A-Za-z0-9_]*")
# How deeply a value may nest before it is refused (the reader bounds lines more tightly).
MAX_DEPTH = 64


class TraceEncodeError(LeaseproofError):
    """A trace value has no TLA+ form (a decimal, an integer past 32 bits); the message says where."""


# Printable ASCII but for '"', '@' and a backslash: such a string is its own literal's body.
_PLAIN = re.compile(r'[ !#-?A-\[\]-~]*')


def tla_string(s: str) -> str:
    """`s` as a TLA+ string literal that denotes exactly one value per input string."""
    if _PLAIN.fullmatch(s):
        return '"' + s + '"'
    out = ['"']
    for ch in s.replace("\\", "\\\\"):
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif " " <= ch <= "~" and ch != "@":
            # "@" never reaches TLC's output, where "@!@!@" opens and closes its -tool messages.
            out.append(ch)
        else:
            out.append("\\\\u%04x" % ord(ch) if ord(ch) <= 0xFFFF else "\\\\U%08x" % ord(ch))
    out.append('"')
    return "".join(out)


def tla_value(v: Any, where: str = "value", depth: int = 0) -> str:
    """A JSON value as TLA+ text; `where` names it in errors."""
    return _tla(v, where, depth)


# Where a nested value is, as its parent's place and its own key or index: put into words only
# for an error (formatting it for every value was a third of the time spent on a trace).
_Where = str | tuple[Any, str, Any]


def _where_text(where: _Where) -> str:
    parts: list[str] = []
    while isinstance(where, tuple):
        where, how, key = where
        parts.append(f"[{key}]" if how == "[" else f".{key!r}" if how == "'" else f".{key}")
    return where + "".join(reversed(parts))


def _tla(v: Any, where: _Where, depth: int) -> str:
    if depth > MAX_DEPTH:
        raise TraceEncodeError(f"{_where_text(where)}: nested deeper than {MAX_DEPTH} levels")
    # Exact types first, the common ones first (a str subclass, say, takes the slower way below).
    kind = type(v)
    if kind is str:
        return tla_string(v)
    if kind is int:
        if not TLC_INT_MIN <= v <= TLC_INT_MAX:
            raise TraceEncodeError(f"{_where_text(where)}: {v} does not fit TLC's 32-bit integers")
        return str(v)
    if kind is dict:
        if not v:
            return "<< >>"
        if all(_is_field(k) for k in v):
            return "[" + ", ".join(f"{k} |-> {_tla(x, (where, '.', k), depth + 1)}" for k, x in v.items()) + "]"
        return "(" + " @@ ".join(f"{tla_string(k)} :> {_tla(x, (where, chr(39), k), depth + 1)}" for k, x in v.items()) + ")"
    if v is None:
        return "Nil"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return _tla(int(v), where, depth)
    if isinstance(v, float):
        if v.is_integer():
            return _tla(int(v), where, depth)
        raise TraceEncodeError(f"{_where_text(where)}: {v} is not an integer, and TLA+ as TLC checks it has no decimals")
    if isinstance(v, str):
        return tla_string(str(v))
    if isinstance(v, list):
        return "<<" + ", ".join(_tla(x, (where, "[", i), depth + 1) for i, x in enumerate(v)) + ">>"
    if isinstance(v, dict):
        return _tla(dict(v), where, depth)
    raise TraceEncodeError(f"{_where_text(where)}: a {type(v).__name__} has no TLA+ form")


@lru_cache(maxsize=4096)
def _is_field(key: str) -> bool:
    """Is `key` written as a record field (see _FIELD)? The same few keys come again and again."""
    return isinstance(key, str) and _FIELD.fullmatch(key) is not None


def _shift(event: dict[str, Any], path: str, epoch: int) -> None:
    """Make the time at `path` relative to `epoch`, in `event` (a copy), copying each object on
    the way (the rest is shared with the line as read, never written)."""
    parts = path.split(".")
    node: Any = event
    for p in parts[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(p), dict):
            return
        node[p] = dict(node[p])
        node = node[p]
    last = parts[-1]
    if isinstance(node, dict) and isinstance(node.get(last), int) and not isinstance(node.get(last), bool):
        node[last] = node[last] - epoch


def spec_event(event: dict[str, Any], time_fields: tuple[str, ...], epoch: int) -> dict[str, Any]:
    """The record a trace spec sees: the line without `kind` and `seq`, times made relative to
    `epoch`. The line itself is left as it is."""
    out = {k: v for k, v in event.items() if k not in ("kind", "seq")}
    for path in time_fields:
        _shift(out, path, epoch)
    return out


def trace_literal(events: tuple[dict[str, Any], ...], time_fields: tuple[str, ...], label: str = "trace") -> str:
    """One trace as a TLA+ sequence of event records."""
    epoch = min((e["now"] for e in events if isinstance(e.get("now"), int)), default=0)
    return "<<" + ",\n   ".join(
        tla_value(spec_event(e, time_fields, epoch), f"{label} event {e.get('seq', i + 1)}") for i, e in enumerate(events)
    ) + ">>"


def literal_of(trace: Trace, time_fields: tuple[str, ...]) -> str:
    """`trace_literal` of a trace, made once per trace and time fields (kept on the trace)."""
    key = tuple(time_fields)
    text = trace.literals.get(key)
    if text is None:
        text = trace.literals[key] = trace_literal(trace.events, key, label=trace.source)
    return text
