"""Where a model file may point: inside the project root, or inside a folder the command allows.

A model file names files that TLC reads and runs: its module (and so the module's folder, every
`.tla` and Java override `.class` under it, which go on TLC's library path and classpath) and a
cfg. A model file is input like any other: one that names `/home/you/.ssh/config` as its cfg,
or `../../elsewhere/Evil.tla` with a `.class` beside it, must not get them read or run. So every
such path is resolved (symlinks followed: a link inside the project that points out of it is
outside) and must fall inside the project root or a folder given with `--allow-path DIR`;
anything else is refused, naming the field, the resolved path and the root, before the file is
opened. Pure apart from `Path.resolve()`, which reads the links on the way.

    >>> c = Confinement.project(Path("/proj"))
    >>> c.allows(Path("/proj/tla/Engine.tla")), c.allows(Path("/proj/../etc/passwd"))
    (True, False)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from conformance.errors import ModelFileError


class PathNotAllowed(ModelFileError):
    """A model file names a file or folder outside the project root and the allowed folders;
    the message names the field, the resolved path, the root and how to allow it."""


@dataclass(frozen=True)
class Confinement:
    """The folders (resolved) that a model file's paths may resolve into: the project root
    first, then each folder the command allows."""

    root: Path
    allowed: tuple[Path, ...] = ()

    @classmethod
    def project(cls, root: Path, allowed: Iterable[Path] = ()) -> Confinement:
        """The project at `root`, and the folders given with `--allow-path`."""
        return cls(root.resolve(), tuple(dict.fromkeys(Path(a).resolve() for a in allowed)))

    def allows(self, path: Path) -> bool:
        """Whether `path`, resolved, is the root, an allowed folder, or inside one of them."""
        resolved = path.resolve()
        return any(resolved.is_relative_to(folder) for folder in (self.root, *self.allowed))

    def check(self, what: str, path: Path) -> Path:
        """`path` resolved, or `PathNotAllowed` when it falls outside (`what` says which file:
        `the module`, `the cfg`, `the module's folder`); the file itself is never opened."""
        resolved = path.resolve()
        if self.allows(resolved):
            return resolved
        also = f" or the allowed folders {', '.join(map(str, self.allowed))}" if self.allowed else ""
        raise PathNotAllowed(f"{what} {path} resolves to {resolved}, outside the project root {self.root}{also}: "
                             f"leaseproof reads and runs only files inside {'them' if self.allowed else 'it'}; to use it, pass "
                             f"--allow-path {resolved.parent}")
