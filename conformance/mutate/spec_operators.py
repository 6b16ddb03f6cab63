"""Mutation operators for a TLA+ module (pure): small edits that each stand for a bug class.

Each operator reads the module's top-level definitions (`Name(args) ==` at column 0, the body
running to the next line at column 0) and makes one edit inside one of them:

- `drop_guard`: one conjunct of an action's top-level list that reads no primed variable (a
  precondition, or a check the action makes) is removed;
- `drop_change`: one conjunct `x' = e` of an action's top-level list becomes `UNCHANGED x`;
- `flip_compare`: one comparison `<`, `<=`, `>`, `>=` in an action, or in a predicate an
  action uses, becomes its neighbour (`<` and `<=`, `>` and `>=`: the boundary moved by one);
- `drop_fairness`: one `WF_`/`SF_` conjunct of a definition that holds fairness conditions is
  removed.

An action is a definition whose body primes a variable or calls an action; a temporal formula
(`[][...]_vars`, an action property) is a property, left alone as invariants are. The edit is a
`find`/`replace` pair whose `find` starts at the definition's header, so that it occurs once in
the module however often the edited line recurs elsewhere. Our specs' layout (bulleted `/\\` lists, one conjunct
per line or indented continuation lines) is what this reads; a module laid out otherwise
yields fewer mutants, never a wrong edit: every mutant is applied and model-checked, and one
that does not parse is an error cell, not a kill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPERATORS = ("drop_guard", "drop_change", "flip_compare", "drop_fairness")
CLASSES = {
    "drop_guard": "a guard conjunct dropped from an action",
    "drop_change": "a variable's change dropped from an action",
    "flip_compare": "a comparison's boundary moved by one",
    "drop_fairness": "a fairness condition removed",
}
MAX_GENERATED = 400  # a module is input: bound what one yields

_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*==", re.M)
_PRIMED = re.compile(r"[A-Za-z0-9_\]\)]'")
_CHANGE = re.compile(r"^/\\\s+([A-Za-z][A-Za-z0-9_]*)'\s*=\s")
_COMPARE = re.compile(r"(?<=\s)(<=|>=|<|>)(?=\s)")
_FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


@dataclass(frozen=True)
class Edit:
    """One generated edit: its name, operator, the definition it is in, and the text pair."""

    name: str
    operator: str
    definition: str
    find: str
    replace: str
    what: str  # the edited line, as a reader would look for it


@dataclass(frozen=True)
class _Def:
    name: str
    start: int  # offset of the header
    body: int  # offset just past `==`
    end: int  # offset of the next column-0 line (or the module's end)


def _code(line: str) -> str:
    """A line without its `\\*` comment (what the operators read)."""
    cut = line.find("\\*")
    return line if cut < 0 else line[:cut]


def definitions(text: str) -> list[_Def]:
    """The module's top-level definitions, in order."""
    heads = [m for m in _HEADER.finditer(text)]
    out = []
    for i, m in enumerate(heads):
        nxt = re.compile(r"^\S", re.M).search(text, m.end())
        end = nxt.start() if nxt else len(text)
        if i + 1 < len(heads):
            end = min(end, heads[i + 1].start())
        out.append(_Def(m.group(1), m.start(), m.end(), end))
    return out


def _lines(text: str, d: _Def) -> list[tuple[int, str]]:
    """The body's lines, each with its offset: the header line's rest after `==` first (where a
    one-line or `Name == /\\ ...` definition starts its body), then the lines after it."""
    out, pos = [], d.body
    for line in text[d.body:d.end].splitlines(keepends=True):
        out.append((pos, line))
        pos += len(line)
    return out


def _column(text: str, pos: int, line: str) -> int:
    """The column of `line`'s first character that is not a space (`line` starts at `pos`)."""
    return pos + len(line) - len(line.lstrip()) - (text.rfind("\n", 0, pos) + 1)


def _conjuncts(text: str, d: _Def) -> list[tuple[int, int, str]]:
    """The top-level conjuncts of a definition's bulleted `/\\` list: (start, end, text), each
    the `/\\` line and the lines indented past it (a conjunct on the header line starts at its
    `/\\`)."""
    lines = [(pos, ln) for pos, ln in _lines(text, d) if _code(ln).strip()]
    bullets = [_column(text, pos, ln) for pos, ln in lines if ln.lstrip().startswith("/\\")]
    if not bullets:
        return []
    level = min(bullets)
    out: list[tuple[int, int, str]] = []
    for pos, ln in lines:
        indent = _column(text, pos, ln)
        bullet = ln.lstrip().startswith("/\\")
        if not out and not (indent == level and bullet):
            continue  # before the list: a LET's definitions
        if indent == level and bullet:
            start = pos + len(ln) - len(ln.lstrip()) if pos == d.body else pos
            out.append((start, pos + len(ln), ln[start - pos:]))
        elif indent > level and out:
            start, _, body = out[-1]
            out[-1] = (start, pos + len(ln), body + ln)
        elif indent <= level:
            break  # the list ended (an IN, a closing line): the rest is not this list's
    return out


def _body(text: str, d: _Def) -> str:
    return "".join(_code(ln) for _, ln in _lines(text, d))


def _temporal(text: str, d: _Def) -> bool:
    """Whether d's body is a temporal formula (`[][...]_vars`, an action property such as
    TimerOnTime): it primes variables, but it is a property the models check, not a step."""
    return "".join(_code(ln) for ln in text[d.body:d.end].splitlines(keepends=True)).lstrip().startswith("[]")


def _actions(text: str, defs: list[_Def]) -> set[str]:
    """The definitions that prime a variable, or call one that does (Drop == ... /\\ Reset);
    an action property is none (`_temporal`)."""
    found = {d.name for d in defs if _PRIMED.search(_body(text, d)) and not _temporal(text, d)}
    while True:
        more = {d.name for d in defs if d.name not in found
                and any(re.search(rf"\b{re.escape(a)}\b", _body(text, d)) for a in found)}
        if not more:
            return found
        found |= more


def _edit(text: str, d: _Def, start: int, end: int, new: str) -> tuple[str, str]:
    """The find/replace pair replacing text[start:end] by `new`, anchored at d's header."""
    return text[d.start:end], text[d.start:start] + new


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name.lower())[:40]


def generate(text: str, operators: tuple[str, ...] = OPERATORS, only: set[str] | None = None) -> list[Edit]:
    """Every edit the operators make in `text` (definitions named in `only`, when given)."""
    out: list[Edit] = []
    defs = definitions(text)
    # A conjunct that calls an action (EndAttempt(w), Stall(w)) is a change, not a guard.
    actions = _actions(text, defs)
    calls = re.compile(r"\b(" + "|".join(map(re.escape, sorted(actions))) + r")\b") if actions else None
    # The predicates the actions use (HeldAt(t) == ... t < expires): their comparisons are the
    # actions' too. A property or invariant no action names is left alone.
    used = "".join(_code(ln) for d in defs if d.name in actions for _, ln in _lines(text, d))
    helpers = {d.name for d in defs if d.name not in actions and re.search(rf"\b{re.escape(d.name)}\b", used)}
    for d in defs:
        if only is not None and d.name not in only:
            continue
        counter: dict[str, int] = {}

        def add(op: str, find: str, replace: str, what: str) -> None:
            counter[op] = counter.get(op, 0) + 1
            out.append(Edit(f"{op}_{_slug(d.name)}_{counter[op]}", op, d.name, find, replace, what.strip()))

        conjuncts = _conjuncts(text, d)
        action = d.name in actions
        if action and "drop_guard" in operators and len(conjuncts) > 1:
            for start, end, body in conjuncts:
                code = "".join(_code(ln) for ln in body.splitlines(keepends=True))
                if not _PRIMED.search(code) and "UNCHANGED" not in code and not (calls and calls.search(code)):
                    add("drop_guard", *_edit(text, d, start, end, ""), body.splitlines()[0])
        if action and "drop_change" in operators:
            for start, end, body in conjuncts:
                m = _CHANGE.match(body.lstrip())
                if m and "UNCHANGED" not in body:
                    indent = body[:len(body) - len(body.lstrip())]
                    add("drop_change", *_edit(text, d, start, end, f"{indent}/\\ UNCHANGED {m.group(1)}\n"),
                        body.splitlines()[0])
        if (action or d.name in helpers) and "flip_compare" in operators:
            for pos, ln in _lines(text, d):
                code = _code(ln)
                for m in _COMPARE.finditer(code):
                    new = ln[:m.start()] + _FLIP[m.group(1)] + ln[m.end():]
                    add("flip_compare", *_edit(text, d, pos, pos + len(ln), new), ln)
        if "drop_fairness" in operators:
            lines = _lines(text, d)
            for i, (pos, ln) in enumerate(lines):
                stripped = _code(ln).lstrip()
                if stripped.startswith("/\\") and re.match(r"/\\\s+[WS]F_", stripped):
                    # The conjunct with its continuation lines (indented past its `/\`), so that
                    # a condition written over two lines goes whole.
                    end, col = pos + len(ln), _column(text, pos, ln)
                    for npos, nxt in lines[i + 1:]:
                        if not _code(nxt).strip() or _column(text, npos, nxt) <= col:
                            break
                        end = npos + len(nxt)
                    add("drop_fairness", *_edit(text, d, pos, end, ""), ln)
        if len(out) > MAX_GENERATED:
            raise ValueError(f"the operators make over {MAX_GENERATED} mutants of this module: name the actions "
                             "to mutate (operators.actions)")
    return out
