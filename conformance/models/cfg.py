"""TLC's configuration language as TLC 2.15 reads it: a tokenizer and a parser (pure).

A user's existing `.cfg` is run verbatim; leaseproof reads it only to know what it asks for
(the behaviour spec, the constants, the properties), so that a model file can check its
expectation against it, name a violated temporal property, and refuse a constant the module
neither declares nor defines. The YAML form of a model file renders into the same structures
(`render.py`), so both forms mean one thing.

What TLC 2.15 reads (tried on its jar; `models/README.md` has the YAML for each):

    SPECIFICATION Spec            INIT Init   NEXT Next       (neither: an ASSUME-only spec)
    CONSTANT(S) N = 3   Name = "x"   Flag = TRUE   Nodes = {n1, n2}   Quorums = {{n1, n2}, {n2}}
                Leader = n1   Nil = Nil   Op <- MCOp   Send <- MCSend   Op <- [Mod] Def
                K = [Mod] 7
    INVARIANT(S) / PROPERTY / PROPERTIES / CONSTRAINT(S) / ACTION_CONSTRAINT(S)  Name Name ...
    SYMMETRY Name    VIEW Name
    \\* a line comment   (* a block comment, nested *)

It has no negative numbers (`N = -1` misparses), no `Op(_, _) <- Def` on the left (an operator
constant is overridden by name, `Send <- MCSend`), and no CHECK_DEADLOCK, POSTCONDITION or
ALIAS (later TLCs): `CHECK_DEADLOCK FALSE` is translated to TLC 2.15's `-deadlock` flag (a
note says so), the other two are refused with the reason.

>>> parse_cfg('INIT Init NEXT Next CONSTANTS Nodes = {n1, n2} INVARIANT TypeOK').constants[0].value
CfgSet(items=(ModelValueName(name='n1'), ModelValueName(name='n2')))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from conformance.errors import ModelFileError

# An identifier as TLA+ has it: letters, digits and underscores, at least one letter.
IDENT = r"[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*"
_IDENT = re.compile(IDENT)  # whole (fullmatch): `$` would let a final line feed through
_TOKEN = re.compile(rf'\s+|\\\*[^\n]*|"(?:\\.|[^"\\\n])*"|<-|[{{}}\[\](),=]|{IDENT}|\d+|\S')

LIST_KEYWORDS = {
    "INVARIANT": "invariants", "INVARIANTS": "invariants",
    "PROPERTY": "properties", "PROPERTIES": "properties",
    "CONSTRAINT": "constraints", "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "action_constraints", "ACTION_CONSTRAINTS": "action_constraints",
}
ONE_NAME_KEYWORDS = {"SPECIFICATION": "specification", "INIT": "init", "NEXT": "next", "SYMMETRY": "symmetry",
                     "VIEW": "view"}
CONSTANT_KEYWORDS = {"CONSTANT", "CONSTANTS"}
LATER_KEYWORDS = {"POSTCONDITION": "a POSTCONDITION", "POSTCONDITIONS": "a POSTCONDITION", "ALIAS": "an ALIAS"}
KEYWORDS = set(LIST_KEYWORDS) | set(ONE_NAME_KEYWORDS) | CONSTANT_KEYWORDS | set(LATER_KEYWORDS) | {"CHECK_DEADLOCK"}
MAX_CFG_CHARS = 1_000_000  # a cfg is input: bound what it may claim
MAX_DEPTH = 16


@dataclass(frozen=True)
class ModelValueName:
    """A model value in a cfg: a bare name (`n1`), equal only to itself."""

    name: str


@dataclass(frozen=True)
class CfgString:
    """A TLA+ string in a cfg (`"x"`), its escapes kept as written."""

    literal: str  # with its quotes, as TLC reads it


@dataclass(frozen=True)
class CfgSet:
    """A set of cfg values: `{n1, n2}`, `{{n1}, {n2}}`, `{1, "a", TRUE}`."""

    items: tuple[CfgValue, ...]


CfgValue = Union[int, bool, CfgString, ModelValueName, CfgSet]


@dataclass(frozen=True)
class Assignment:
    """`Name = value`, or `Name = [Mod] value` (the constant of module Mod)."""

    name: str
    value: CfgValue
    module: str | None = None


@dataclass(frozen=True)
class Override:
    """`Name <- Def`, or `Name <- [Mod] Def`: Name (a constant, an operator constant or a
    defined operator) is replaced by the definition Def of the module TLC checks."""

    name: str
    definition: str
    module: str | None = None


@dataclass
class CfgFile:
    """What a cfg asks TLC for."""

    specification: str | None = None
    init: str | None = None
    next: str | None = None
    constants: list[Assignment | Override] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    action_constraints: list[str] = field(default_factory=list)
    symmetry: str | None = None
    view: str | None = None
    check_deadlock: bool | None = None  # only where the cfg says CHECK_DEADLOCK (a later TLC's keyword)


@dataclass(frozen=True)
class Token:
    """One token and where it stands in the text (for messages and for cutting sections out)."""

    text: str
    start: int
    end: int
    line: int


def tokens(text: str) -> list[Token]:
    """The cfg's tokens, comments and blanks left out; `ModelFileError` on an unclosed comment."""
    if len(text) > MAX_CFG_CHARS:
        raise ModelFileError(f"the cfg has {len(text):,} characters, over the bound of {MAX_CFG_CHARS:,}")
    out: list[Token] = []
    pos, line = 0, 1
    while pos < len(text):
        if text.startswith("(*", pos):
            end = _block_comment_end(text, pos, line)
            line += text.count("\n", pos, end)
            pos = end
            continue
        m = _TOKEN.match(text, pos)
        assert m is not None  # `\S` matches any other character
        piece = m.group(0)
        if not piece.isspace() and not piece.startswith("\\*"):
            out.append(Token(piece, pos, m.end(), line))
        line += piece.count("\n")
        pos = m.end()
    return out


def _block_comment_end(text: str, pos: int, line: int) -> int:
    depth, i = 0, pos
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*)", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise ModelFileError(f"line {line}: a comment `(*` is never closed")


class _Parser:
    def __init__(self, toks: list[Token]) -> None:
        self.toks, self.i = toks, 0

    def peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, what: str) -> Token:
        tok = self.peek()
        if tok is None:
            raise ModelFileError(f"the cfg ends where {what} was due")
        self.i += 1
        return tok

    def name(self, what: str) -> str:
        tok = self.take(what)
        if not _IDENT.fullmatch(tok.text) or tok.text in KEYWORDS:
            raise ModelFileError(f"line {tok.line}: expected {what}, found {tok.text!r}")
        return tok.text

    def expect(self, text: str, what: str) -> Token:
        tok = self.take(what)
        if tok.text != text:
            raise ModelFileError(f"line {tok.line}: expected {what}, found {tok.text!r}")
        return tok

    def at_name(self) -> bool:
        tok = self.peek()
        return tok is not None and bool(_IDENT.fullmatch(tok.text)) and tok.text not in KEYWORDS

    def value(self, depth: int = 0) -> CfgValue:
        if depth > MAX_DEPTH:
            raise ModelFileError(f"a cfg value nested deeper than {MAX_DEPTH} sets")
        tok = self.take("a value")
        if tok.text == "{":
            items: list[CfgValue] = []
            if self.peek() is not None and self.peek().text == "}":  # type: ignore[union-attr]
                self.i += 1
                return CfgSet(())
            while True:
                items.append(self.value(depth + 1))
                sep = self.take("`,` or `}`")
                if sep.text == "}":
                    return CfgSet(tuple(items))
                if sep.text != ",":
                    raise ModelFileError(f"line {sep.line}: expected `,` or `}}` in a set, found {sep.text!r}")
        if tok.text.startswith('"'):
            return CfgString(tok.text)
        if tok.text.isdigit():
            return int(tok.text)
        if tok.text in ("TRUE", "FALSE"):
            return tok.text == "TRUE"
        if tok.text == "-":
            raise ModelFileError(f"line {tok.line}: TLC 2.15's cfg has no negative numbers; define the value in the "
                                 "spec and override it (`N <- MCN`)")
        if _IDENT.fullmatch(tok.text) and tok.text not in KEYWORDS:
            return ModelValueName(tok.text)
        raise ModelFileError(f"line {tok.line}: expected a value, found {tok.text!r}")

    def module_scope(self) -> str | None:
        tok = self.peek()
        if tok is None or tok.text != "[":
            return None
        self.i += 1
        mod = self.name("a module name in `[Mod]`")
        self.expect("]", "`]`")
        return mod

    def constant(self) -> Assignment | Override:
        name = self.name("a constant's name")
        tok = self.take("`=` or `<-`")
        if tok.text == "(":
            raise ModelFileError(f"line {tok.line}: TLC 2.15 reads no parameters on the left of a cfg assignment: "
                                 f"override the operator constant by name (`{name} <- Def`)")
        if tok.text == "<-":
            module = self.module_scope()
            return Override(name, self.name("a definition's name after `<-`"), module)
        if tok.text == "=":
            module = self.module_scope()
            return Assignment(name, self.value(), module)
        raise ModelFileError(f"line {tok.line}: expected `=` or `<-` after {name}, found {tok.text!r}")


def parse_cfg(text: str) -> CfgFile:
    """Parse a cfg; `ModelFileError` (naming the line) where TLC 2.15 would not read it."""
    p = _Parser(tokens(text))
    cfg = CfgFile()
    while (tok := p.peek()) is not None:
        p.i += 1
        kw = tok.text
        if kw in CONSTANT_KEYWORDS:
            while p.at_name():
                cfg.constants.append(p.constant())
        elif kw in LIST_KEYWORDS:
            names = getattr(cfg, LIST_KEYWORDS[kw])
            if not p.at_name():
                raise ModelFileError(f"line {tok.line}: {kw} names nothing")
            while p.at_name():
                names.append(p.name(f"a name after {kw}"))
        elif kw in ONE_NAME_KEYWORDS:
            setattr(cfg, ONE_NAME_KEYWORDS[kw], p.name(f"a name after {kw}"))
        elif kw == "CHECK_DEADLOCK":
            flag = p.take("TRUE or FALSE after CHECK_DEADLOCK")
            if flag.text not in ("TRUE", "FALSE"):
                raise ModelFileError(f"line {flag.line}: CHECK_DEADLOCK takes TRUE or FALSE, found {flag.text!r}")
            cfg.check_deadlock = flag.text == "TRUE"
        elif kw in LATER_KEYWORDS:
            raise ModelFileError(f"line {tok.line}: {LATER_KEYWORDS[kw]} ({kw}) needs a later TLC than 2.15, which "
                                 "cannot be installed here; check it as an invariant or property instead")
        else:
            raise ModelFileError(f"line {tok.line}: {kw!r} is not a cfg keyword TLC 2.15 reads")
    if (cfg.init is None) != (cfg.next is None):
        raise ModelFileError("the cfg gives " + ("INIT without NEXT" if cfg.init else "NEXT without INIT"))
    if cfg.specification and cfg.init:
        raise ModelFileError("the cfg gives both SPECIFICATION and INIT/NEXT")
    return cfg


def without_sections(text: str, keywords: set[str]) -> str:
    """`text` with every section led by one of `keywords` cut out (the keyword and what follows
    it up to the next keyword), the rest verbatim: a user's cfg with its PROPERTY lines, or its
    CHECK_DEADLOCK, taken away."""
    toks = tokens(text)
    cuts: list[tuple[int, int]] = []
    i = 0
    while i < len(toks):
        if toks[i].text in keywords:
            j = i + 1
            while j < len(toks) and toks[j].text not in KEYWORDS:
                j += 1
            end = toks[j].start if j < len(toks) else len(text)
            cuts.append((toks[i].start, end))
            i = j
        else:
            i += 1
    out, pos = [], 0
    for start, end in cuts:
        out.append(text[pos:start])
        out.append("\n" * text.count("\n", start, end))  # keep line numbers for TLC's messages
        pos = end
    out.append(text[pos:])
    return "".join(out)


def format_cfg_value(v: CfgValue) -> str:
    """A cfg value as TLC reads it."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, CfgString):
        return v.literal
    if isinstance(v, ModelValueName):
        return v.name
    return "{" + ", ".join(format_cfg_value(x) for x in v.items) + "}"


def model_values(v: CfgValue) -> set[str]:
    """The model values a cfg value names (for `Name = Name`: which names stand for themselves)."""
    if isinstance(v, ModelValueName):
        return {v.name}
    if isinstance(v, CfgSet):
        return set().union(*(model_values(x) for x in v.items)) if v.items else set()
    return set()
