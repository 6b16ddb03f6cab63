"""Each cfg feature TLC 2.15 reads, checked three ways with the same verdict and state count:
raw TLC on the user's cfg, `leaseproof check` on a model file reusing that cfg (`cfg:`), and on
one giving the same model in YAML (tests/fixtures/cfgproject: a spec folder per feature)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from conformance.output.messages import parse_messages
from conformance.output.verdict import Verdict, verdict_from_output
from conformance.tlc.locate import find_jar, find_java

pytestmark = pytest.mark.tlc

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "fixtures" / "cfgproject"
FEATURES: dict[str, Any] = json.loads((PROJECT / "features.json").read_text())


def raw_tlc(feature: str) -> Verdict:
    """TLC itself on the feature's cfg, in a copy of its folder: no leaseproof in between."""
    facts = FEATURES[feature]
    src = PROJECT / facts["cfg"]
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "spec"
        shutil.copytree(src.parent, run)
        lib = [f"-DTLA-Library={d}" for d in sorted(p for p in run.iterdir() if p.is_dir())]
        cmd = [str(find_java()), *lib, f"-Djava.io.tmpdir={tmp}", "-cp", str(find_jar()), "tlc2.TLC", "-tool",
               "-workers", "1", "-metadir", str(Path(tmp) / "states"), *([] if facts["deadlock"] else ["-deadlock"]),
               "-config", src.name, src.with_suffix(".tla").name]
        proc = subprocess.run(cmd, cwd=run, capture_output=True, text=True, timeout=300)
    return verdict_from_output(parse_messages(proc.stdout), exit_code=proc.returncode, seconds=0.0,
                               behaviours=feature != "assume_only")


@cache
def raw_verdicts() -> dict[str, Verdict]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(FEATURES, pool.map(raw_tlc, FEATURES)))


@cache
def leaseproof_rows() -> dict[str, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "check", "--root", str(PROJECT), "--json"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {m["name"]: m for m in json.loads(proc.stdout)["models"]}


def test_there_are_at_least_fifteen_features_each_in_both_forms() -> None:
    assert len(FEATURES) >= 15
    for feature in FEATURES:
        assert (PROJECT / "models" / f"{feature}_cfg.yaml").is_file() and (PROJECT / "models" / f"{feature}_yaml.yaml").is_file()


def test_both_forms_give_raw_tlcs_verdict_and_state_count() -> None:
    # One test for all the features: each xdist worker running one of them would run them all.
    raw, rows = raw_verdicts(), leaseproof_rows()
    wrong: list[str] = []
    for feature in sorted(FEATURES):
        r = raw[feature]
        for form in ("cfg", "yaml"):
            row = rows[f"{feature}_{form}"]
            got = row["verdict"]
            said = f"{feature} ({form}): leaseproof {got['kind']} {got['property']} {got['distinct_states']} states, " \
                   f"raw TLC {r.summary()} {r.stats.distinct_states} states"
            temporal = r.property_kind is not None and r.property_kind.value == "temporal"
            if row["result"] != "PASS":
                wrong.append(f"{feature} ({form}): {row['mismatches']}")
            elif got["kind"] != r.kind.value or got["distinct_states"] != r.stats.distinct_states:
                wrong.append(said)
            elif r.property_kind is not None and not temporal and got["property"] != r.property:
                # TLC names a violated invariant itself; a temporal one leaseproof names by re-checking.
                wrong.append(said)
            elif r.counterexample is not None and not temporal and len(got["counterexample"]["states"]) != len(r.counterexample):
                wrong.append(f"{said}: counterexamples of {len(got['counterexample']['states'])} and {len(r.counterexample)} states")
    assert wrong == []
