"""Which constants a TLA+ module declares, its EXTENDS included.

TLC 2.15 silently ignores a cfg assignment to a name the spec does not declare, so a misspelt
gate (`HonorCheck` for `HonourCheck`) would leave the real gate at its other value and the model
would check something else than its file says. The loader refuses such a model; this module
finds the declared names. It reads declarations only (`CONSTANT`/`CONSTANTS` lists, comments
removed), which is all it needs: SANY still parses the whole spec when TLC runs.
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


def _clean(text: str) -> str:
    return _STRING.sub('""', _LINE_COMMENT.sub("", _COMMENT_LINE.sub("", _BLOCK_COMMENT.sub(" ", text))))


def declared_constants(module_path: Path, _seen: set[Path] | None = None) -> set[str]:
    """Constants declared by the module at `module_path` and the modules it EXTENDS beside it."""
    seen = set() if _seen is None else _seen
    if module_path in seen or not module_path.is_file():
        return set()
    seen.add(module_path)
    text = _clean(module_path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for decl in _DECL.finditer(text):
        pos = decl.end()
        while (item := _ITEM.match(text, pos)) is not None:
            names.add(item.group(1))
            pos = item.end()
            if not item.group(2):  # no comma: the list ends here
                break
    for ext in _EXTENDS.finditer(text):
        for module in (n.strip() for n in ext.group(1).split(",")):
            if module:
                names |= declared_constants(module_path.parent / f"{module}.tla", seen)
    return names
