"""Opening a store from its URL: `sqlite:///PATH`, `mysql://USER[:PASS]@HOST[:PORT]/DB`, `memory://`.

A `prefix=NAME` query parameter puts the engine's tables under a name prefix, so several runs
(or tests) can share one database without sharing state.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlparse

from impl.engine.backend import Backend, MemoryBackend
from impl.errors import BadStoreUrl

_PREFIX = re.compile(r"^[A-Za-z0-9_]*$")


def open_backend(url: str, prefix: str | None = None, *, create: bool = True) -> Backend:
    """The backend for `url`, with its tables created unless `create` is false.

    >>> open_backend("memory://").url
    'memory://'
    """
    parsed = urlparse(url)
    params = parse_qs(parsed.query)
    prefix = prefix if prefix is not None else params.get("prefix", [""])[0]
    if not _PREFIX.match(prefix):
        raise BadStoreUrl(f"table prefix {prefix!r} in {url!r} must be letters, digits and underscores")
    backend: Backend
    if parsed.scheme == "memory":
        backend = MemoryBackend()
    elif parsed.scheme == "sqlite":
        # As in SQLAlchemy: what follows "sqlite:///" is the path, so sqlite:///e.db is relative
        # to the working directory and sqlite:////tmp/e.db is absolute.
        if not url.startswith("sqlite:///"):
            raise BadStoreUrl(f"{url!r}: write sqlite:///PATH (three slashes), e.g. sqlite:////tmp/engine.db")
        path = unquote(url[len("sqlite:///"):].split("?", 1)[0])
        if not path:
            raise BadStoreUrl(f"{url!r} names no file; write sqlite:///PATH, e.g. sqlite:///tmp/engine.db")
        from impl.engine.sqlbackend import SqliteBackend

        backend = SqliteBackend(path, prefix)
    elif parsed.scheme in ("mysql", "mariadb"):
        database = parsed.path.lstrip("/")
        if not parsed.hostname or not database:
            raise BadStoreUrl(f"{url!r} needs a host and a database: mysql://USER@HOST:PORT/DATABASE")
        from impl.engine.sqlbackend import MysqlBackend

        backend = MysqlBackend(
            host=parsed.hostname,
            port=parsed.port or 3306,
            user=unquote(parsed.username or "root"),
            password=unquote(parsed.password or ""),
            database=database,
            prefix=prefix,
            url=url,
        )
    else:
        raise BadStoreUrl(
            f"store URL {url!r} is not sqlite:///PATH, mysql://USER@HOST:PORT/DB or memory://"
        )
    if create:
        backend.create_schema()
    return backend


def node_backends(url: str, nodes: tuple[str, ...], prefix: str | None = None) -> dict[str, Backend]:
    """One backend per node over the same store, as separate processes would have: the first
    creates the tables, the others connect to them (`memory://` gives every node the one twin)."""
    if url.startswith("memory"):
        shared = open_backend(url, prefix)
        return {n: shared for n in nodes}
    first = open_backend(url, prefix)
    return {nodes[0]: first, **{n: open_backend(url, prefix, create=False) for n in nodes[1:]}}
