"""A property's TLA+ definition as written: the `Name == ...` block of the module that defines it,
shown beside its counterexample so that the reader sees what broke without opening the spec.

The block starts at a line beginning `Name ==` (or `Name(args) ==`) and runs until the next
line that starts at column 0 (the next definition, a comment, the module's end), trailing blank
lines dropped. The module is searched first, then its `EXTENDS` and `INSTANCE`s found beside
it, then every other module in its folder (a wrapper `MCX.tla` defines few properties itself).
"""

from __future__ import annotations

import re
from pathlib import Path

_EXTENDS = re.compile(r"^\s*EXTENDS\s+([\w\s,]+)", re.MULTILINE)
_INSTANCE = re.compile(r"\bINSTANCE\s+(\w+)")


def definition_in(text: str, name: str) -> str | None:
    """The `name == ...` block of a module's text, or None when the module does not define it.

    >>> definition_in("A == 1\\nInv == /\\\\ x > 0\\n       /\\\\ y > 0\\nB == 2\\n", "Inv")
    'Inv == /\\\\ x > 0\\n       /\\\\ y > 0'
    """
    head = re.compile(rf"^{re.escape(name)}\s*(\([^)]*\))?\s*==", re.MULTILINE)
    m = head.search(text)
    if not m:
        return None
    lines = text[m.start():].splitlines()
    block = [lines[0]]
    for line in lines[1:]:
        if line[:1].strip() or line.startswith("===="):  # column 0: the next definition or the end
            break
        block.append(line)
    while block and not block[-1].strip():
        block.pop()
    return "\n".join(block)


def _related(module: Path) -> list[Path]:
    text = module.read_text(encoding="utf-8", errors="replace")
    names = [n.strip() for m in _EXTENDS.finditer(text) for n in m.group(1).split(",")]
    names += _INSTANCE.findall(text)
    return [module.with_name(f"{n}.tla") for n in names if n]


def property_definition(name: str | None, module: Path) -> tuple[str, str] | None:
    """(the module's file name, the definition) of property `name`, as seen from `module`; None
    when no module there defines it (a property given as an expression, a standard module's)."""
    if not name or not module.is_file():
        return None
    candidates = [module] + _related(module) + sorted(module.parent.glob("*.tla"))
    for path in dict.fromkeys(candidates):  # each once, in that order
        if not path.is_file():
            continue
        found = definition_in(path.read_text(encoding="utf-8", errors="replace"), name)
        if found:
            return path.name, found
    return None
