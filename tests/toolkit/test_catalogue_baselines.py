"""Every check of every mutant catalogue passes on the unmutated source, as `leaseproof mutate`
runs it: else the check kills nothing, and `scripts/mutate.sh` (nightly) fails at its baseline.

`leaseproof mutate` first runs each check on an unmutated scratch copy of the project (its
baseline, `conformance/mutate/run.py`). The engine's `stateful` check once failed there under
its own profile (`mutate_wide`: a trace TraceEngine could not explain, issue 35) while the
default run, on the default profile's fewer examples, passed. So here, in the default run:

- a check that runs under a profile or command of its own (`stateful`, `traces`) runs in full,
  by `conformance.mutate.run.baseline`, the code `leaseproof mutate` runs, on a scratch copy;
- a check that is plain pytest under the default profile (`tests`) runs only tests this default
  run runs anyway: that is asserted by collecting both (its `-x` only stops at the first
  failure; `-n 0` runs the same tests in one process), instead of running them twice.

A check added to a catalogue is covered at once: it runs in full unless it is such a subset.
Measured on the shared 2-core machine, three runs each (the spread is the other load): engine
`stateful` 15 to 43 s, `traces` 5 to 12 s; workqueue `stateful` 15 to 51 s, `traces` 7 to 29 s
(50 to 120 s in all, shared by the default run's two processes); each `tests` check would take
~55 s, its two collections here 4 to 6 s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.mutate.catalogue import Check, load_catalogues
from conformance.mutate.run import Scratch, baseline

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = load_catalogues(ROOT)
# Flags that change how a pytest run reports, not what it selects.
REPORTING = {"-q", "-x"}


def default_pytest_args(check: Check) -> list[str] | None:
    """The pytest arguments of a check that is plain `{python} -m pytest` (no environment of
    its own, so the default Hypothesis profile), reporting flags left out; else None."""
    if list(check.run[:3]) != ["{python}", "-m", "pytest"]:
        return None
    return [a for a in check.run[3:] if a not in REPORTING]


def collected(args: list[str]) -> set[str]:
    """The test ids a pytest run with `args` selects (collected only, in one process)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line.strip() for line in proc.stdout.splitlines() if "::" in line}


# A check run in full runs the stateful machines or the trace check: TLC (and Redis, the queue's).
# The model-guided check runs every target (a TLC search and a replay each: 2 to 5 minutes a
# system) and is left to `-m slow`: its quick command's baseline runs in the default run
# (test_mutate_quick: `leaseproof mutate --quick` runs each check's baseline first), and so do
# the targets of the stale paths (test_guided.py).
SLOW = {"guided"}
CHECKS = [pytest.param(system, name, id=f"{system}-{name}",
                       marks=([pytest.mark.tlc] if default_pytest_args(cat.checks[name]) is None else [])
                       + ([pytest.mark.slow] if name in SLOW else []))
          for system, cat in sorted(CATALOGUES.items()) for name in cat.checks]


@pytest.mark.parametrize(("system", "name"), CHECKS)
def test_each_check_passes_on_the_unmutated_source(system: str, name: str, tmp_path: Path) -> None:
    cat = CATALOGUES[system]
    args = default_pytest_args(cat.checks[name])
    if args is not None:
        ids = collected(args)
        assert ids, f"{system}'s {name} check selects no test"
        files = sorted({i.split("::", 1)[0] for i in ids})
        # The default run's selection over the same files: addopts' -m 'not slow'.
        beyond = ids - collected(files)
        assert beyond == set(), f"{system}'s {name} check runs tests the default run does not: {sorted(beyond)[:10]}"
        return
    assert baseline(cat, [name], Scratch(ROOT, tmp_path)) == {}
