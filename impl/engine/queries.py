"""Named SQL queries, loaded from the `.sql` files beside this module.

Each query sits under a `-- name: <name>` header (procrastinate's layout). `queries.sql` holds
the queries both dialects share; `sqlite.sql` and `mysql.sql` hold each dialect's schema and
override the names whose syntax differs. Parameters are written `:name` and converted to the
driver's style; `{p}` is the table prefix, so tests can keep their tables apart.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from impl.engine.errors import EngineBug

_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_PREFIX = re.compile(r"^[A-Za-z0-9_]*$")
DIALECTS = ("sqlite", "mysql")


def parse(text: str) -> dict[str, str]:
    """The queries of one `.sql` file by name, comments and blank lines stripped."""
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        lines = [ln for ln in body.splitlines() if ln.strip() and not ln.strip().startswith("--")]
        queries[name] = "\n".join(lines).strip()
    return queries


@cache
def _load(filename: str) -> dict[str, str]:
    text = resources.files("impl.engine").joinpath("sql").joinpath(filename).read_text(encoding="utf-8")
    return parse(text)


def queries(dialect: str, prefix: str = "") -> dict[str, str]:
    """Every query of `dialect` ("sqlite" or "mysql"), with the table prefix filled in and the
    parameters in the driver's style (`?`-free named style for sqlite3, `%(name)s` for PyMySQL).
    """
    if dialect not in DIALECTS:
        raise EngineBug(f"unknown SQL dialect {dialect!r}; expected one of {DIALECTS}")
    if not _PREFIX.match(prefix):
        raise EngineBug(f"table prefix {prefix!r} must be letters, digits and underscores")
    merged = {**_load("queries.sql"), **_load(f"{dialect}.sql")}
    out = {}
    for name, sql in merged.items():
        sql = sql.replace("{p}", prefix)
        if dialect == "mysql":
            sql = _PARAM.sub(r"%(\1)s", sql)
        out[name] = sql
    return out


def schema_names(dialect: str) -> list[str]:
    """The names of the schema statements of `dialect`, in the order to run them."""
    return [n for n in _load(f"{dialect}.sql") if n.startswith("create_")]


DROP_NAMES = ("drop_trace", "drop_wf_lock", "drop_task_fences", "drop_instances", "drop_tasks")
