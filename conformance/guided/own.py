"""A user's own replay for model-guided workloads: a Python file the base model names.

A base model (`guided/<system>.yaml`) of a system leaseproof does not ship names the file that
drives the user's code along a behaviour (`replay: joblease_guided.py`, relative to the
project). The file defines

    def replay(states, *, constants, trace_dir): ...

`states` is TLC's behaviour as data (one dict per state: `action`, the name of the action that
led to it, None for the first, and `variables`, each a JSON value: sets as sorted lists,
records as dicts, model values as their names); `constants` the model's; `trace_dir` where the
run must write its traces (`*.ndjson`). It returns when the code took every step, and raises
`Blocked` (the code cannot take a step the model takes: say which and why) or `Unmapped` (an
action it has no step for). Any other exception is the replay's error, reported with the target.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from conformance.errors import LeaseproofError


class Blocked(Exception):
    """The code cannot take a step the model takes (the message: the step and why)."""


class Unmapped(Exception):
    """The behaviour has an action the replay has no step of the code for (the message: which)."""


class OwnReplayError(LeaseproofError):
    """The base model's `replay:` file cannot be loaded, or defines no `replay` function."""


@dataclass
class OwnResult:
    """How a user's replay ended, as the built-in adapters' `Replay` says it."""

    verdict: str  # held, blocked, unmapped
    reason: str = ""


OwnReplay = Callable[..., Any]


def load_own_replay(root: Path, name: object) -> OwnReplay:
    """The `replay` function of the file `name` (relative to `root`, inside it), imported with
    `root` on the import path so that it can import the project's modules."""
    return load_own_module(root, name).replay  # type: ignore[no-any-return]


def load_own_module(root: Path, name: object) -> ModuleType:
    """The replay file `name` as a module (see `load_own_replay`); it defines `replay`, and for
    `leaseproof guided --edges` also `project(before, after)`: what a trace shows of the step
    between two states, a list of (entity, "op/outcome"), empty for a hidden step."""
    if not isinstance(name, str) or not name.endswith(".py"):
        raise OwnReplayError(f"replay: {name!r} is not a Python file name (e.g. replay: my_guided.py)")
    path = (root / name).resolve()
    if not path.is_relative_to(root.resolve()):
        raise OwnReplayError(f"replay: {name!r} is outside the project {root}")
    if not path.is_file():
        raise OwnReplayError(f"replay: no file {path}")
    spec = importlib.util.spec_from_file_location(f"leaseproof_own_replay_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise OwnReplayError(f"replay: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    added = str(root.resolve()) not in sys.path
    if added:
        sys.path.insert(0, str(root.resolve()))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: any error is theirs to see
        raise OwnReplayError(f"replay: importing {path} failed: {type(exc).__name__}: {exc}") from None
    finally:
        if added:
            sys.path.remove(str(root.resolve()))
    if not callable(getattr(module, "replay", None)):
        raise OwnReplayError(f"replay: {path} defines no function replay(states, *, constants, trace_dir)")
    return module


def run_own(fn: OwnReplay, verdict: dict[str, Any], constants: dict[str, Any], trace_dir: Path) -> OwnResult:
    """Run the user's replay on the counterexample of `verdict` (untagged states)."""
    states = [{"action": s.get("action"), "variables": s.get("variables", {})}
              for s in verdict["counterexample"]["states"]]
    trace_dir.mkdir(parents=True, exist_ok=True)
    try:
        fn(states, constants=constants, trace_dir=trace_dir)
    except Blocked as exc:
        return OwnResult("blocked", str(exc))
    except Unmapped as exc:
        return OwnResult("unmapped", str(exc))
    return OwnResult("held", f"the behaviour ran to its end ({len(states) - 1} steps)")
