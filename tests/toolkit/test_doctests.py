"""The examples in the toolkit's docstrings run (the modules whose docstrings have them)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["conformance.traces.spec_coverage", "conformance.guided.targets"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    failed, tried = doctest.testmod(importlib.import_module(name))
    assert tried > 0 and failed == 0
