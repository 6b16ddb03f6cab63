"""What a trace's header may say: every setting and gate a system file declares (its `header:`
section), with its type and bounds.

A header is input leaseproof does not control, and its settings change how strict the check is:
a renamed `drained` would fall back to its default (false: the trace need not end drained), a
`clock_slack_ms` of 50 switches an idle-time check off, `drained: 0` stops TLC on an
evaluation error after the batch was built. So every setting and gate a header carries must be
declared, and have the declared type and lie within the declared bounds; anything else makes the
trace malformed before TLC runs, naming the field, the value and the declaration:

>>> fields = parse_fields({"settings.lease_ms": {"type": "integer", "min": 1}})
>>> problems(fields, {"settings": {"lease_ms": 0}, "gates": {}}, "engine")
'header field settings.lease_ms: 0 is below its bound 1 (traces/systems/engine.yaml header: settings.lease_ms is an integer, at least 1)'

JSON booleans are not integers here (Python's `True` is an `int`): `heartbeat_ms: true` is
malformed. The reader has already made integral floats (`1.0`) the integers they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The header objects whose members a system file declares; the rest of a header is the line
# schema's business (traces/schema/trace-line.schema.json).
PARTS = ("settings", "gates")

# At most this many problems are listed in one reason (a header may carry thousands of settings).
MAX_LISTED = 5

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Admit:
    """A known-bad corpus trace (`traces/corpus/<system>/<trace>`) that a field set to its `bound`
    (`min` or `max`) lets through, and why that is no hole."""

    bound: str
    trace: str
    why: str


@dataclass(frozen=True)
class Field:
    """One declared header field: its type (`integer`, `boolean`, `string`), and for an integer
    its bounds, for a string the values it may take (`enum`, empty: any)."""

    type: str
    min: int | None = None
    max: int | None = None
    enum: tuple[str, ...] = ()
    admits: tuple[Admit, ...] = ()

    def describe(self) -> str:
        """The declaration in words: `an integer, 1 to 100`."""
        if self.type == "boolean":
            return "a boolean"
        if self.type == "string":
            return f"one of {', '.join(map(_shown, self.enum))}" if self.enum else "a string"
        if self.min is not None and self.max is not None:
            return f"an integer, {self.min} to {self.max}"
        if self.min is not None:
            return f"an integer, at least {self.min}"
        if self.max is not None:
            return f"an integer, at most {self.max}"
        return "an integer"

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value` for this field, or None."""
        if self.type == "boolean":
            return None if isinstance(value, bool) else f"{_shown(value)} is not a boolean"
        if self.type == "string":
            if not isinstance(value, str):
                return f"{_shown(value)} is not a string"
            return None if not self.enum or value in self.enum else f"{_shown(value)} is not one of {', '.join(map(_shown, self.enum))}"
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{_shown(value)} is not an integer"
        if self.min is not None and value < self.min:
            return f"{value} is below its bound {self.min}"
        if self.max is not None and value > self.max:
            return f"{value} is past its bound {self.max}"
        return None


def parse_fields(raw: Mapping[str, Mapping[str, Any]]) -> dict[str, Field]:
    """The `header:` section of a system file (already valid against its schema) as fields,
    by dotted name (`settings.lease_ms`, `gates.*`). A `min` above the `max` is a ValueError."""
    out: dict[str, Field] = {}
    for name, d in raw.items():
        f = Field(type=d["type"], min=d.get("min"), max=d.get("max"), enum=tuple(d.get("enum", ())),
                  admits=tuple(Admit(a["bound"], a["trace"], a["why"]) for a in d.get("admits", ())))
        if f.min is not None and f.max is not None and f.min > f.max:
            raise ValueError(f"{name}: min {f.min} is above max {f.max}")
        for a in f.admits:
            if getattr(f, a.bound) is None:
                raise ValueError(f"{name}: admits {a.trace} at its {a.bound}, which it does not declare")
        out[name] = f
    return out


def declaration(fields: Mapping[str, Field], part: str, name: str) -> Field | None:
    """The declaration of `part.name`: its own, else the part's wildcard (`gates.*`), else None."""
    return fields.get(f"{part}.{name}") or fields.get(f"{part}.*")


def problems(fields: Mapping[str, Field], header: Mapping[str, Any], system: str) -> str | None:
    """Every setting and gate of `header` that `fields` does not declare, or whose value is of
    another type or past a bound, in one reason (the first `MAX_LISTED`), or None. `system`
    names the system file in the reason."""
    where = f"traces/systems/{system}.yaml header"
    found: list[str] = []
    for part in PARTS:
        values = header.get(part, {})
        if not isinstance(values, Mapping):
            found.append(f"header field {part}: {_shown(values)} is not an object")
            continue
        for name in sorted(values):
            f = declaration(fields, part, name)
            if f is None:
                known = sorted(n.split(".", 1)[1] for n in fields if n.startswith(f"{part}."))
                found.append(f"header field {_field(part, name)}: not declared in {where} "
                             f"(declared {part}: {', '.join(known) or 'none'})")
                continue
            why = f.problem(values[name])
            if why:
                found.append(f"header field {_field(part, name)}: {why} ({where}: {part}.{name} is {f.describe()})")
    if not found:
        return None
    more = len(found) - MAX_LISTED
    return "; ".join(found[:MAX_LISTED]) + (f"; and {more} more" if more > 0 else "")


def _field(part: str, name: str) -> str:
    """`settings.lease_ms`, or `settings["odd name"]` (escaped) when the name is not an identifier."""
    return f"{part}.{name}" if _IDENTIFIER.fullmatch(name) else f"{part}[{_shown(name)}]"


def _shown(value: Any, limit: int = 60) -> str:
    """`value` as JSON (true, not True; strings quoted and escaped), cut at `limit` characters."""
    text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    return text if len(text) <= limit else text[:limit] + "..."
