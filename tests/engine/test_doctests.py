"""The examples in the engine's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["decide", "faults", "fencing", "limit", "node", "replay", "scheduler", "sim", "threads", "urls", "workflows", "queries"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"impl.engine.{name}")
    failed, _ = doctest.testmod(module)
    assert failed == 0
