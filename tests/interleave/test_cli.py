"""`leaseproof interleave` from the command line: the exit status, the schedule printed with its
replay command, the bounded space, and one clear line for each bad input (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from tests.interleave.test_scheduler import counter

counter_locked = counter(True)
counter_unlocked = counter(False)
TARGET = "tests.interleave.test_cli"


def test_a_passing_scenario_exits_0(capsys: Any) -> None:
    assert main(["interleave", f"{TARGET}:counter_locked", "--runs", "5", "--no-validate"]) == 0
    assert "5 schedules (random)" in capsys.readouterr().out


def test_a_failure_prints_its_schedule_and_the_command_that_replays_it(capsys: Any, tmp_path: Path) -> None:
    assert main(["interleave", f"{TARGET}:counter_unlocked", "--runs", "30", "--no-validate",
                 "--trace-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAILED schedule" in out and "lost update" in out
    assert "test_scheduler.py" in out  # the code location of the steps
    replay = next(line for line in out.splitlines() if line.startswith("replay: "))
    args = replay.removeprefix("replay: leaseproof ").split()
    assert main([*args, "--no-validate"]) == 1  # the printed command replays the failure
    assert "lost update" in capsys.readouterr().out


def test_an_exhaustive_search_prints_its_space_and_a_saved_schedule_replays(capsys: Any, tmp_path: Path) -> None:
    assert main(["interleave", f"{TARGET}:counter_unlocked", "--strategy", "exhaustive", "--bound", "1",
                 "--runs", "1000", "--no-validate", "--trace-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "preemption bound 1" in out and "Knuth" in out
    saved = next(tmp_path.glob("run-*/schedule.json"))
    assert main(["interleave", f"{TARGET}:counter_unlocked", "--replay", str(saved), "--no-validate",
                 "--trace-dir", str(tmp_path / "again")]) == 1


@pytest.mark.parametrize("args, message", [
    (["no_colon"], "name a scenario as MODULE:NAME"),
    (["no.such.module:x"], "cannot import 'no.such.module'"),
    ([f"{TARGET}:nothing_here"], "has no scenario 'nothing_here'"),
    ([f"{TARGET}:TARGET"], "has no scenario 'TARGET'"),  # not callable
    ([f"{TARGET}:counter_locked", "--runs", "0"], "--runs, --depth and --max-steps are at least 1"),
    ([f"{TARGET}:counter_locked", "--bound", "-1"], "--bound at least 0"),
    ([f"{TARGET}:counter_locked", "--replay", "/nonexistent/schedule.json"], "cannot read the schedule"),
    (["no_colon\x1b[2J"], "\\x1b"),  # a control character in the target is shown escaped
])
def test_a_bad_input_is_one_clear_line_and_exit_2(args: list[str], message: str, capsys: Any) -> None:
    assert main(["interleave", *args, "--no-validate"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "\x1b" not in err
