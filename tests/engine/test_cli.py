"""`leaseproof engine run`: node processes sharing a store, traces, and the summary."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conformance.cli import main
from impl.engine.schema import trace_line_schema


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["engine", "run", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def check_traces(trace_dir: Path, expected: int) -> None:
    validator = jsonschema.Draft202012Validator(trace_line_schema())
    files = sorted(trace_dir.glob("*.ndjson"))
    assert len(files) == expected
    for f in files:
        for line in f.read_text().splitlines():
            validator.validate(json.loads(line))


def test_a_bad_store_url_is_one_line_and_exit_2(capsys, tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "--store", "postgres://x/y", "--workflows", "1")
    assert code == 2
    assert err.strip().startswith("leaseproof: error: store URL 'postgres://x/y' is not sqlite:///PATH")
    assert len(err.strip().splitlines()) == 1


def test_an_unknown_gate_is_refused(capsys, tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "--store", f"sqlite:///{tmp_path}/e.db", "--gate-off", "NOPE")
    assert code == 2 and "unknown gate(s) ['NOPE']" in err


def _small(capsys, store: str, trace_dir: Path, n: int = 12) -> str:
    code, out, err = run_cli(
        capsys, "--nodes", "2", "--workflows", str(n), "--store", store, "--trace-dir", str(trace_dir),
        "--lease-ms", "1000", "--spread-ms", "500", "--deadline", "60",
    )
    assert code == 0, out + err
    assert f"workflows completed: {n}/{n}" in out
    assert "overlapping runs seen: 0" in out
    check_traces(trace_dir, n)
    return out


def test_two_processes_on_sqlite(capsys, tmp_path: Path) -> None:
    _small(capsys, f"sqlite:///{tmp_path}/e.db", tmp_path / "traces")


@pytest.mark.mysql
def test_two_processes_on_mariadb(capsys, tmp_path: Path, mysql_url: str, key_prefix: str) -> None:
    prefix = key_prefix.replace("-", "_") + "_"
    try:
        _small(capsys, f"{mysql_url}?prefix={prefix}", tmp_path / "traces")
    finally:
        from impl.engine.urls import open_backend

        b = open_backend(mysql_url, prefix, create=False)
        b.drop_schema()
        b.close()


@pytest.mark.slow
def test_200_workflows_on_sqlite(capsys, tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "--workflows", "200", "--store", f"sqlite:///{tmp_path}/e.db",
                             "--trace-dir", str(tmp_path / "t"))
    assert code == 0, out + err
    assert "workflows completed: 200/200" in out and "overlapping runs seen: 0" in out
    check_traces(tmp_path / "t", 200)


@pytest.mark.slow
@pytest.mark.mysql
def test_200_workflows_on_mariadb(capsys, tmp_path: Path, mysql_url: str, key_prefix: str) -> None:
    prefix = key_prefix.replace("-", "_") + "_"
    try:
        code, out, err = run_cli(capsys, "--workflows", "200", "--store", f"{mysql_url}?prefix={prefix}",
                                 "--trace-dir", str(tmp_path / "t"))
        assert code == 0, out + err
        assert "workflows completed: 200/200" in out and "overlapping runs seen: 0" in out
        check_traces(tmp_path / "t", 200)
    finally:
        from impl.engine.urls import open_backend

        b = open_backend(mysql_url, prefix, create=False)
        b.drop_schema()
        b.close()


def test_with_the_fix_off_the_processes_overlap_runs(capsys, tmp_path: Path) -> None:
    # In-memory signals during long handlers: the seed's bug, in production mode.
    code, out, _ = run_cli(
        capsys, "--workflows", "16", "--store", f"sqlite:///{tmp_path}/e.db", "--lease-ms", "600",
        "--spread-ms", "300", "--long-fraction", "1.0", "--deadline", "60",
        "--gate-off", "HONOUR_CHECK", "--gate-off", "FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER",
    )
    assert code == 1
    overlaps = int(out.split("overlapping runs seen: ")[1].split()[0])
    assert overlaps > 0


def test_engine_sim_writes_the_same_traces_for_the_same_seeds(capsys, tmp_path: Path) -> None:
    for d in ("a", "b"):
        assert main(["engine", "sim", "--seeds", "3", "--trace-dir", str(tmp_path / d)]) == 0
    capsys.readouterr()
    a = {p.name: p.read_bytes() for p in (tmp_path / "a").glob("*.ndjson")}
    b = {p.name: p.read_bytes() for p in (tmp_path / "b").glob("*.ndjson")}
    assert len(a) == 24 and a == b
    check_traces(tmp_path / "a", 24)


def test_engine_sim_on_sqlite_writes_the_twins_traces(capsys, tmp_path: Path) -> None:
    # A connection per node to one file, fresh tables per seed (a second run over the same file
    # starts empty): the twin is faithful, so the traces are the twin's, byte for byte.
    store = f"sqlite:///{tmp_path}/sim.db"
    for d, url in (("twin", "memory://"), ("sqlite", store), ("again", store)):
        assert main(["engine", "sim", "--seeds", "2", "--first-seed", "3", "--store", url,
                     "--trace-dir", str(tmp_path / d)]) == 0
    capsys.readouterr()
    runs = [{p.name: p.read_bytes() for p in (tmp_path / d).glob("*.ndjson")} for d in ("twin", "sqlite", "again")]
    assert len(runs[0]) == 16 and runs[0] == runs[1] == runs[2]


@pytest.mark.parametrize("args", [["--max-steps", "0"], ["--max-steps", "x"], ["--store", "bogus://x"]])
def test_engine_sim_refuses_a_bad_budget_or_store(capsys, args: list[str]) -> None:
    # A usage error (argparse exits) or a typed error the CLI prints: exit status 2 either way.
    try:
        code = main(["engine", "sim", "--seeds", "1", *args])
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert "--max-steps" in err or "is not sqlite:///PATH" in err


def test_engine_sim_with_the_paths_options_runs_fails_and_recovers_and_writes_the_same_traces(capsys, tmp_path: Path) -> None:
    # The options mutants/engine.yaml's traces check adds: failing handlers, the poll grid,
    # copies held queued, stranded starts. Exit 0: a dead-lettered flaky workflow is finished.
    args = ["engine", "sim", "--seeds", "2", "--first-seed", "201", "--fail-fraction", "0.5", "--grid-ms", "50",
            "--take-stall-fraction", "0.5", "--stranded-fraction", "0.25", "--stale-fraction", "1.0", "--pause-rate", "0"]
    for d in ("a", "b"):
        assert main([*args, "--trace-dir", str(tmp_path / d)]) == 0
    capsys.readouterr()
    a = {p.name: p.read_bytes() for p in (tmp_path / "a").glob("*.ndjson")}
    b = {p.name: p.read_bytes() for p in (tmp_path / "b").glob("*.ndjson")}
    assert len(a) == 16 and a == b
    check_traces(tmp_path / "a", 16)
    text = b"".join(a.values())
    assert b'"op": "mark_failed"' in text and b'"op": "reschedule_retry", "outcome": "rescheduled"' in text


@pytest.mark.parametrize("args", [["--fail-fraction", "1.5"], ["--fail-fraction", "x"], ["--grid-ms", "-1"],
                                  ["--take-stall-fraction", "-0.1"], ["--stranded-fraction", "2"]])
def test_engine_sim_refuses_a_bad_fraction_or_grid(capsys, args: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["engine", "sim", "--seeds", "1", *args])
    assert exc.value.code == 2
    assert args[0] in capsys.readouterr().err


def test_engine_sim_fails_with_the_fix_off(capsys) -> None:
    code = main(["engine", "sim", "--seeds", "3", "--gate-off", "HONOUR_CHECK",
                 "--gate-off", "FORCE_SIGNAL_WORKFLOW_EXEC_IN_SCHEDULER"])
    assert code == 1


def test_engine_mutants_prints_every_mutant(capsys, tmp_path: Path) -> None:
    assert main(["engine", "mutants", "--trace-dir", str(tmp_path), "--seeds", "1", "--workflows", "4"]) == 0
    out = capsys.readouterr().out
    from impl.engine.mutants import MUTANTS

    assert all(m.name in out for m in MUTANTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(m.name for m in MUTANTS)
