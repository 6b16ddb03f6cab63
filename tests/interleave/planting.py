"""Plant a bug in a function or method for the length of a block: its source with one line
changed, compiled in its own module (as `leaseproof mutate` edits a file, but in-process)."""

from __future__ import annotations

import contextlib
import inspect
import textwrap
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def planted(owner: Any, name: str, old: str, new: str) -> Iterator[None]:
    """`owner.name` replaced, inside the block, by its source with `old` (once) made `new`."""
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    func = original.fget if isinstance(original, property) else original
    source = textwrap.dedent(inspect.getsource(func))
    if source.count(old) != 1:
        raise AssertionError(f"cannot plant the bug: {old!r} occurs {source.count(old)} times in {name}")
    namespace: dict[str, Any] = {}
    exec(compile(source.replace(old, new), f"<planted {name}>", "exec"), vars(inspect.getmodule(func)), namespace)
    made = namespace[func.__name__]
    if isinstance(original, property) and not isinstance(made, property):
        made = property(made)
    setattr(owner, name, made)
    try:
        yield
    finally:
        setattr(owner, name, original)
