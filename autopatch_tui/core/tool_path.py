"""How a tool the app runs is found on PATH (issue 28 review): only absolute PATH entries. An empty
entry (`PATH=:/usr/bin`, a trailing `:`) or a relative one (`.`, `bin`) means the working folder —
and tools run in the repository, so its own `./semgrep` would run as the user. Both the lookup and
the child's own PATH (a tool that starts another by name) keep the absolute entries only."""

from __future__ import annotations

import os
import shutil


def absolute_path(value: str | None) -> str:
    """`value` (a PATH) without its empty and relative entries; the process's PATH when None."""
    if value is None:
        value = os.environ.get("PATH", os.defpath)
    return os.pathsep.join(p for p in value.split(os.pathsep) if os.path.isabs(p))


def which(name: str, path: str | None = None) -> str | None:
    """`shutil.which(name)` over the absolute entries of `path` (default: the process's PATH)."""
    return shutil.which(name, path=absolute_path(path))
