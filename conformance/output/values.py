"""TLA+ values as TLC prints them, parsed into plain, hashable Python values.

| TLA+ as printed            | Python                                   |
|----------------------------|------------------------------------------|
| `3`, `-4`                  | `int`                                    |
| `"a\\"b"`                  | `str` (escapes decoded)                  |
| `TRUE`, `FALSE`            | `bool`                                   |
| `n1` (a model value)       | `ModelValue("n1")` (a `str` subclass)     |
| `{1, 2}`, `1..3`           | `frozenset`                              |
| `<<1, 2>>`, `<< >>`        | `tuple`                                  |
| `[a |-> 1]`                | `FrozenDict({"a": 1})`                   |
| `(n1 :> 1 @@ n2 :> 2)`     | `FrozenDict({ModelValue("n1"): 1, ...})` |

`format_value` prints a Python value back the way TLC does, so that the two round-trip.

>>> parse_value('[st |-> "RUNNING", q |-> {n1}]')["st"]
'RUNNING'
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from lark import Lark, Transformer, v_args
from lark.exceptions import LarkError

from conformance.errors import ValueSyntaxError


class ModelValue(str):
    """A TLC model value, such as `n1`: equal only to itself, printed bare."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ModelValue({str.__repr__(self)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelValue) and str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("ModelValue", str(self)))


class FrozenDict(dict):  # type: ignore[type-arg]
    """A record or function: a `dict` that can be a set element or a key, and is not changed."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a parsed TLA+ value is immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]


_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f"}


def _unescape(body: str) -> str:
    out: list[str] = []
    chars = iter(body)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
        else:
            out.append(ch)
    return "".join(out)


@v_args(inline=True)
class _ToPython(Transformer):  # type: ignore[type-arg]
    def integer(self, tok: Any) -> int:
        return int(tok)

    def string(self, tok: Any) -> str:
        return _unescape(str(tok)[1:-1])

    def true(self) -> bool:
        return True

    def false(self) -> bool:
        return False

    def model_value(self, tok: Any) -> ModelValue:
        return ModelValue(str(tok))

    def interval(self, lo: int, hi: int) -> frozenset[int]:
        return frozenset(range(lo, hi + 1))

    def set(self, *items: Any) -> frozenset[Any]:
        return frozenset(i for i in items if i is not None)

    def sequence(self, *items: Any) -> tuple[Any, ...]:
        return tuple(i for i in items if i is not None)

    def field(self, name: Any, value: Any) -> tuple[str, Any]:
        return str(name), value

    def record(self, *fields: tuple[str, Any]) -> FrozenDict:
        return FrozenDict(fields)

    def mapping(self, key: Any, value: Any) -> tuple[Any, Any]:
        return key, value

    def function(self, *pairs: tuple[Any, Any]) -> FrozenDict:
        return FrozenDict(pairs)


@cache
def _parser() -> Lark:
    grammar = resources.files("conformance.output").joinpath("tla_value.lark").read_text()
    return Lark(grammar, start="value", parser="lalr", transformer=_ToPython())


def parse_value(text: str) -> Any:
    """Parse one TLA+ value printed by TLC into a Python value (see the module's table).

    Raises `ValueSyntaxError` naming the position when `text` is not a value TLC prints.
    """
    try:
        return _parser().parse(text)
    except LarkError as exc:
        raise ValueSyntaxError(f"cannot parse TLA+ value {text[:80]!r}: {exc}") from exc


def _format_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r").replace("\f", "\\f") + '"'


def _sort_key(v: Any) -> tuple[int, str]:
    return (0, f"{v:020d}") if isinstance(v, int) and not isinstance(v, bool) else (1, format_value(v))


def format_value(v: Any) -> str:
    """Print a Python value as TLA+ (as TLC would, up to the order of set elements)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, ModelValue):
        return str(v)
    if isinstance(v, str):
        return _format_string(v)
    if isinstance(v, (frozenset, set)):
        return "{" + ", ".join(format_value(x) for x in sorted(v, key=_sort_key)) + "}"
    if isinstance(v, (tuple, list)):
        return "<<" + ", ".join(format_value(x) for x in v) + ">>"
    if isinstance(v, dict):
        if not v:
            return "<< >>"
        if all(isinstance(k, str) and not isinstance(k, ModelValue) and k.isidentifier() for k in v):
            return "[" + ", ".join(f"{k} |-> {format_value(x)}" for k, x in v.items()) + "]"
        return "(" + " @@ ".join(f"{format_value(k)} :> {format_value(x)}" for k, x in v.items()) + ")"
    raise TypeError(f"no TLA+ form for {type(v).__name__}")


def to_json(v: Any) -> Any:
    """A JSON-friendly form: sets become sorted lists, functions with non-string keys lists of pairs."""
    if isinstance(v, (bool, int)) or v is None:
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (frozenset, set)):
        return sorted((to_json(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
    if isinstance(v, (tuple, list)):
        return [to_json(x) for x in v]
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {str(k): to_json(x) for k, x in v.items()}
        return [[to_json(k), to_json(x)] for k, x in v.items()]
    raise TypeError(f"no JSON form for {type(v).__name__}")
