"""Shared fixtures: real servers, reached or skipped (failed in CI) with a clear reason; the
project's scripts as modules; and the Hypothesis profiles.

On a user's machine a test that needs MySQL or Redis skips when the server is absent; in CI
(`CI=true`) the same absence fails the test, because CI promises the servers are there.

Profiles: `default` is Hypothesis' own budget (100 examples, up to 50 steps), which the default
run keeps; `nightly` has ten times the examples and twice the steps, and explores at random
(not derandomized), for long runs: `HYPOTHESIS_PROFILE=nightly python3 -m pytest -m slow`.
The engine's stateful tests size their budgets as shares of the loaded profile's
(`tests/engine/test_stateful.py`, `budget`), so the nightly profile scales them too.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import Phase, settings

# Hypothesis' own defaults, named: what every run uses unless HYPOTHESIS_PROFILE says otherwise.
settings.register_profile("default", settings.get_profile("default"))
settings.register_profile("nightly", max_examples=1_000, stateful_step_count=100, derandomize=False, deadline=None)
# `leaseproof mutate` asks a machine only whether it fails on a mutant: the default examples
# (still derandomized: two runs give the same verdicts), without shrinking the failure (which
# can take minutes and changes no verdict). The queue's stateful check runs so (about 60 s a
# surviving mutant for its four machines, two on Redis).
settings.register_profile("mutate", phases=[Phase.explicit, Phase.reuse, Phase.generate])
# Ten times the examples: the engine's stateful check (at 1x its machine killed 18 of 32
# mutants; at 10x three more of the ten survivors tried, at about 40 s a survivor).
settings.register_profile("mutate_wide", settings.get_profile("mutate"), max_examples=1_000)
# The quick subset of `leaseproof mutate` (the default test run's): a quarter of the default.
settings.register_profile("mutate_quick", settings.get_profile("mutate"), max_examples=25)
# The default run also runs each catalogue's checks unmutated under their own profiles (`mutate`,
# `mutate_wide`): tests/toolkit/test_catalogue_baselines.py, so that no baseline breaks unseen.
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])

# The fixture project (tests/fixtures/project) is a user's project: its own tests run in their
# own pytest sessions, under the leaseproof plugin (tests/toolkit/test_pytest_plugin.py).
collect_ignore = ["fixtures"]
# pytester: the plugin's own tests run pytest sessions of their own.
pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    """Under the leaseproof plugin (`--leaseproof-traces DIR`, as scripts/record_traces.sh runs
    the tests), our recorders write into DIR: they read LEASEPROOF_TRACE_DIR
    (tests/engine/recording.py, tests/workqueue/conftest.py), and the plugin checks DIR (which
    wins over a LEASEPROOF_TRACE_DIR set outside, so that what is recorded is what is checked).
    Set before xdist starts its workers, which inherit it."""
    traces = config.getoption("leaseproof_traces", None)
    if traces:
        os.environ["LEASEPROOF_TRACE_DIR"] = str(Path(traces).resolve())


MYSQL_URL = os.environ.get("LEASEPROOF_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("LEASEPROOF_REDIS_URL", "redis://127.0.0.1:6379/0")


def in_ci() -> bool:
    """Whether we run in CI, where every server must be present."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def server_absent(what: str, url: str, exc: BaseException) -> None:
    """Skip (on a user's machine) or fail (in CI) because a server cannot be reached."""
    reason = f"{what} is not reachable at {url} ({exc}); set LEASEPROOF_{what.upper()}_URL or start it"
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def mysql_url() -> str:
    """The URL of a reachable MySQL/MariaDB server (skip or fail otherwise)."""
    import pymysql
    from urllib.parse import urlparse

    u = urlparse(MYSQL_URL)
    try:
        conn = pymysql.connect(
            host=u.hostname or "127.0.0.1",
            port=u.port or 3306,
            user=u.username or "root",
            password=u.password or "",
            database=(u.path or "/test").lstrip("/") or "test",
            connect_timeout=3,
        )
        conn.close()
    except Exception as exc:  # any failure to connect means "absent"
        server_absent("mysql", MYSQL_URL, exc)
    return MYSQL_URL


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The URL of a reachable Redis server (skip or fail otherwise)."""
    import redis

    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
        client.ping()
        client.close()
    except Exception as exc:
        server_absent("redis", REDIS_URL, exc)
    return REDIS_URL


@pytest.fixture(scope="session")
def script() -> Callable[[str], ModuleType]:
    """Loads `scripts/<name>.py` as the module `<name>` (registered in sys.modules, where its
    dataclasses look their module up)."""
    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    return load


@pytest.fixture
def key_prefix() -> Iterator[str]:
    """A unique prefix for the Redis keys or SQL tables of one test, so tests never share state."""
    yield f"lp-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def chromium() -> str:
    """The path of a headless Chromium (Debian's `chromium` package): skipped with the reason
    where it is absent, failed under CI=true (.ci/run installs it)."""
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    reason = "no headless Chromium on PATH (chromium, chromium-browser, google-chrome): apt-get install chromium"
    if in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)
