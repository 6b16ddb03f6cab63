"""LocalTLC (conformance/tlc/java/LocalTLC.java): TLC started with no network listener gives TLC's
own verdicts, and while it runs, the JVM holds no listening socket (the stock main holds one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.check.runner import Tlc, check_model
from conformance.models.model import load_model
from conformance.tlc.classes import clear_cache
from conformance.tlc.command import TlcInvocation, tlc_command
from conformance.tlc.launcher import LOCAL, STOCK, Launcher, launcher

from tests.toolkit.test_cli_check import PROJECT
from tests.toolkit.test_trace_reader import jre_only

pytestmark = pytest.mark.tlc

FOREVER = "---- MODULE Forever ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == x' = x + 1\n====\n"


@pytest.fixture(scope="module")
def tlc() -> Tlc:
    return Tlc.locate()


@pytest.fixture(scope="module")
def local(tlc: Tlc) -> Launcher:
    found = launcher(tlc.java, tlc.jar, {})
    if found.main != LOCAL:
        pytest.skip("no javac beside java or on PATH to compile LocalTLC (apt-get install openjdk-17-jdk-headless)")
    return found


def test_the_main_is_chosen_by_the_environment(tlc: Tlc, local: Launcher) -> None:
    assert (Path(local.classpath[0]) / "LocalTLC.class").is_file()
    assert launcher(tlc.java, tlc.jar, {"LEASEPROOF_TLC_MAIN": "stock"}) == Launcher(STOCK)
    with pytest.raises(ValueError, match="use local"):
        launcher(tlc.java, tlc.jar, {"LEASEPROOF_TLC_MAIN": "fast"})


def test_no_javac_means_the_stock_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tlc: Tlc) -> None:
    java = jre_only(tmp_path, monkeypatch)
    monkeypatch.setenv("LEASEPROOF_CACHE", str(tmp_path / "cache"))
    clear_cache()
    try:
        assert launcher(java, tlc.jar, {}) == Launcher(STOCK)
    finally:
        clear_cache()


@pytest.mark.parametrize("name", ["passing", "invariant", "temporal", "lasso", "deadlock", "evaluation_error"])
def test_local_tlc_gives_the_stock_verdict(tlc: Tlc, local: Launcher, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    model = load_model(PROJECT / "models" / f"{name}.yaml", [PROJECT / "tla"])
    got = check_model(model, tlc, workers=1)
    monkeypatch.setenv("LEASEPROOF_TLC_MAIN", "stock")
    stock = check_model(model, tlc, workers=1)
    assert (got.kind, got.property, got.error_kind, got.stats.distinct_states, got.counterexample, got.exit_code) == \
           (stock.kind, stock.property, stock.error_kind, stock.stats.distinct_states, stock.counterexample, stock.exit_code)


def listening_inodes(pid: int) -> set[str]:
    """The inodes of the TCP sockets in LISTEN state that process `pid` holds (Linux /proc)."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            held.add(target[len("socket:["):-1])
    listening = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if path.exists():
            for row in path.read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    listening.add(fields[9])
    return held & listening


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process's sockets from Linux's /proc")
@pytest.mark.parametrize("stock", [False, True], ids=["local", "stock"])
def test_no_port_is_open_while_tlc_runs(tlc: Tlc, local: Launcher, tmp_path: Path, stock: bool) -> None:
    (tmp_path / "Forever.tla").write_text(FOREVER)
    (tmp_path / "Forever.cfg").write_text("INIT Init\nNEXT Next\n")
    (tmp_path / "tmp").mkdir()
    main = Launcher(STOCK) if stock else local
    cmd = tlc_command(TlcInvocation(java=tlc.java, jar=tlc.jar, module_file="Forever.tla", cfg_file="Forever.cfg",
                                    workers=1, metadir="states", tmpdir=str(tmp_path / "tmp"),
                                    classpath=main.classpath, main_class=main.main))
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        # Its fingerprint set (the RMI object) holds the initial state once TLC says so.
        for line in proc.stdout:
            if "Finished computing initial states" in line:
                break
        else:
            pytest.fail(f"TLC ended before its search began (exit {proc.wait()})")
        held = listening_inodes(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert bool(held) == stock, f"listening sockets held: {held}"
