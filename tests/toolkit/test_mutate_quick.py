"""The quick subset of the real catalogues (`leaseproof mutate --quick`): in each system, each
check still kills the mutants named for it, in a scratch copy of this project. The whole matrix
is scripts/mutate.sh's (nightly)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.mutate.catalogue import load_catalogues

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.tlc
@pytest.mark.parametrize("system", sorted(load_catalogues(ROOT)))
def test_each_check_kills_its_quick_mutants(system: str) -> None:
    cat = load_catalogues(ROOT)[system].quick()
    # The subset names a mutant for every check, so that each check proves it can fail.
    assert {c for m in cat.mutants for c in m.quick} == set(cat.checks)
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "mutate", "--root", str(ROOT), "--quick",
                           "--system", system, "--json", "--jobs", "2"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    cells = {(m["mutant"], k): c["verdict"] for m in doc["mutants"] for k, c in m["cells"].items()}
    assert cells == {(m.name, c): "killed" for m in cat.mutants for c in m.quick}
