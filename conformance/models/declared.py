"""Which constants a TLA+ module declares, and which operators it defines, its EXTENDS included.

TLC 2.15 silently ignores a cfg assignment to a name the spec does not declare, so a misspelt
gate (`HonorCheck` for `HonourCheck`) would leave the real gate at its other value and the model
would check something else than its file says. The loader refuses such a model; this module
finds the names a cfg may assign: the declared constants (`CONSTANT`/`CONSTANTS` lists) and the
defined operators (`Name ==`, `Name(a, b) ==`, `f[x \\in S] ==`, at the start of a line), which
TLC also lets a cfg override. It reads declarations and definitions only (comments removed),
which is all it needs: SANY still parses the whole spec when TLC runs.
"""

from __future__ import annotations

import re
from pathlib import Path

_BLOCK_COMMENT = re.compile(r"\(\*.*?\*\)", re.S)
_COMMENT_LINE = re.compile(r"^[ \t]*\\\*.*\n", re.M)  # a whole line of comment: gone, not left blank
_LINE_COMMENT = re.compile(r"\\\*.*$", re.M)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_DECL = re.compile(r"\bCONSTANTS?\b")
# One declared name (with an operator's arity, `B(_, _)`), then a comma if the list goes on.
_ITEM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([_,\s]*\))?\s*(,?)")
_EXTENDS = re.compile(r"\bEXTENDS\b([^\n]*)")
_DEFINITION = re.compile(r"^[ \t]*(?:LOCAL[ \t]+)?([A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*)[ \t]*(?:\([^)\n]*\)|\[[^\]\n]*\])?[ \t]*==",
                         re.M)


def _clean(text: str) -> str:
    return _STRING.sub('""', _LINE_COMMENT.sub("", _COMMENT_LINE.sub("", _BLOCK_COMMENT.sub(" ", text))))


def _extended(text: str) -> list[str]:
    return [n for ext in _EXTENDS.finditer(text) for n in (m.strip() for m in ext.group(1).split(",")) if n]


def defined_operators(module_path: Path, _seen: set[Path] | None = None) -> set[str]:
    """Operators defined by the module at `module_path` and the modules it EXTENDS beside it."""
    seen = set() if _seen is None else _seen
    if module_path in seen or not module_path.is_file():
        return set()
    seen.add(module_path)
    text = _clean(module_path.read_text(encoding="utf-8", errors="replace"))
    names = {m.group(1) for m in _DEFINITION.finditer(text)}
    for module in _extended(text):
        names |= defined_operators(module_path.parent / f"{module}.tla", seen)
    return names


def declared_constants(module_path: Path, _seen: set[Path] | None = None) -> set[str]:
    """Constants declared by the module at `module_path` and the modules it EXTENDS beside it."""
    seen = set() if _seen is None else _seen
    if module_path in seen or not module_path.is_file():
        return set()
    seen.add(module_path)
    text = _clean(module_path.read_text(encoding="utf-8", errors="replace"))
    names: set[str] = set()
    for decl in _DECL.finditer(text):
        pos = decl.end()
        while (item := _ITEM.match(text, pos)) is not None:
            names.add(item.group(1))
            pos = item.end()
            if not item.group(2):  # no comma: the list ends here
                break
    for module in _extended(text):
        names |= declared_constants(module_path.parent / f"{module}.tla", seen)
    return names


# Comments and strings blanked with spaces of the same length (newlines kept), so that offsets
# in the blanked text are offsets in the module's own.
def _blank(text: str) -> str:
    def spaces(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return _LINE_COMMENT.sub(spaces, _BLOCK_COMMENT.sub(spaces, _STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', text)))


_ASSUMPTION = re.compile(r"\b(ASSUME|ASSUMPTION|AXIOM)\b")
# What may begin the unit after an assumption, at the start of a line: another unit's keyword, a
# definition (a name, its parameters, then ==), or a module's separator line.
_UNIT_START = re.compile(r"(?:ASSUME|ASSUMPTION|AXIOM|THEOREM|LEMMA|VARIABLES?|CONSTANTS?|LOCAL|INSTANCE|RECURSIVE|USE|----|====)\b|"
                         r"[A-Za-z0-9_]+[ \t]*(?:\([^)\n]*\)|\[[^\]\n]*\])?[ \t]*==|-{4,}|={4,}")


def assumptions(module_path: Path, _seen: set[Path] | None = None) -> list[str] | None:
    """The text of each ASSUME of the module at `module_path` and of the modules it EXTENDS beside
    it, each as written (from its keyword to the next unit), or None where one cannot be read so
    surely: an assumption not at the start of a line, a named one, or one followed by a line
    that starts no unit at column 0 (which might continue it). Callers that need them all take
    None as "unknown"."""
    seen = set() if _seen is None else _seen
    if module_path in seen or not module_path.is_file():
        return []
    seen.add(module_path)
    text = module_path.read_text(encoding="utf-8", errors="replace")
    blank = _blank(text)
    found: list[str] = []
    for module in _extended(_clean(text)):
        more = assumptions(module_path.parent / f"{module}.tla", seen)
        if more is None:
            return None
        found += more
    for m in _ASSUMPTION.finditer(blank):
        line_start = blank.rfind("\n", 0, m.start()) + 1
        if m.start() != line_start or re.match(r"\s*[A-Za-z0-9_]+\s*==", blank[m.end():]):
            return None  # not at column 0 (a proof's ASSUME ... PROVE?), or named
        end = len(blank)
        for line in re.finditer(r"^\S.*$", blank[m.end():], re.M):
            start = m.end() + line.start()
            if start == line_start:
                continue
            if not _UNIT_START.match(blank, start):
                return None
            end = start
            break
        found.append(text[m.start():end].rstrip())
    return found
