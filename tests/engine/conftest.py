"""Engine fixtures: one store per test, on the in-memory twin, SQLite and MariaDB.

`backend` is parametrized: the same behaviour test runs against every store. MariaDB tests are
marked `mysql` and get their own table prefix, dropped afterwards, so tests never share state.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from impl.engine.backend import Backend, MemoryBackend
from impl.engine.urls import open_backend

STORES = ["memory", "sqlite", pytest.param("mysql", marks=pytest.mark.mysql)]
SQL_STORES = ["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)]


def _open(kind: str, request: pytest.FixtureRequest, tmp_path, key_prefix: str) -> Backend:
    if kind == "memory":
        return MemoryBackend()
    if kind == "sqlite":
        return open_backend(f"sqlite:///{tmp_path}/engine.db")
    url = request.getfixturevalue("mysql_url")
    return open_backend(url, key_prefix.replace("-", "_") + "_")


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest, tmp_path, key_prefix: str) -> Iterator[Backend]:
    """A fresh, empty store of each kind."""
    b = _open(request.param, request, tmp_path, key_prefix)
    yield b
    b.drop_schema()
    b.close()


@pytest.fixture(params=SQL_STORES)
def sql_backend(request: pytest.FixtureRequest, tmp_path, key_prefix: str) -> Iterator[Backend]:
    """A fresh, empty SQL store: SQLite and MariaDB."""
    b = _open(request.param, request, tmp_path, key_prefix)
    yield b
    b.drop_schema()
    b.close()
