"""Engine fixtures: one store per test, on the in-memory twin, SQLite and MariaDB.

`backend` is parametrized: the same behaviour test runs against every store. MariaDB tests are
marked `mysql` and get their own table prefix, dropped afterwards, so tests never share state.

With `LEASEPROOF_TRACE_DIR` set, every test's stores are exported as traces there
(`recording.py`; `scripts/record_traces.sh` sets it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from impl.engine.backend import Backend, MemoryBackend
from impl.engine.urls import open_backend
from . import recording

STORES = ["memory", "sqlite", pytest.param("mysql", marks=pytest.mark.mysql)]
SQL_STORES = ["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)]


def _open(kind: str, request: pytest.FixtureRequest, tmp_path, key_prefix: str) -> Backend:
    if kind == "memory":
        return MemoryBackend()
    if kind == "sqlite":
        return open_backend(f"sqlite:///{tmp_path}/engine.db")
    url = request.getfixturevalue("mysql_url")
    return open_backend(url, key_prefix.replace("-", "_") + "_")


@pytest.fixture(autouse=True)
def record_traces(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Export the test's traces into `LEASEPROOF_TRACE_DIR`, when it is set (else nothing)."""
    recording.start(request.node.nodeid, monkeypatch)
    yield
    recording.stop()


def _flush(b: Backend) -> None:
    # Before the store is dropped: its events are the test's traces.
    rec = recording.active()
    if rec is not None:
        rec.flush(b)


def _fresh(request: pytest.FixtureRequest, tmp_path, key_prefix: str) -> Iterator[Backend]:
    """An empty store of the kind `request.param` names; its events kept, then it is dropped."""
    b = _open(request.param, request, tmp_path, key_prefix)
    yield b
    _flush(b)
    b.drop_schema()
    b.close()


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest, tmp_path, key_prefix: str) -> Iterator[Backend]:
    """A fresh, empty store of each kind."""
    yield from _fresh(request, tmp_path, key_prefix)


@pytest.fixture(params=SQL_STORES)
def sql_backend(request: pytest.FixtureRequest, tmp_path, key_prefix: str) -> Iterator[Backend]:
    """A fresh, empty SQL store: SQLite and MariaDB."""
    yield from _fresh(request, tmp_path, key_prefix)
