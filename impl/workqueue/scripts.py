"""The Lua scripts of the work queue and the command layer, loaded by name from the `.lua` files
beside this module, each with `prelude.lua` (shared helpers) in front."""

from __future__ import annotations

from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent

NAMES = (
    "offer", "receive_new", "reclaim", "touch", "ack", "invoke",
    "submit_state", "guard_take", "guard_renew", "guard_release", "put_if_owner",
    "external_call", "cancel", "line",
)


@cache
def source(name: str) -> str:
    """The full text of script `name`: the prelude, then `<name>.lua`."""
    if name not in NAMES:
        raise KeyError(f"no Lua script named {name!r}; known: {', '.join(NAMES)}")
    prelude = (HERE / "prelude.lua").read_text(encoding="utf-8")
    body = (HERE / f"{name}.lua").read_text(encoding="utf-8")
    return prelude + "\n" + body
