"""The one confinement check every tool that reads the repository on the model's behalf calls
(source tools, the repair scanner's scope): a path is refused when it is absolute, leaves the
repository (also through a symlink), or has a `.git` or `.autopatch-j` component at any depth —
before or after symlinks are resolved. Walkers prune the same names and never follow a link out."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePath

from autopatch_tui.core.constants import STATE_DIR_NAME
from autopatch_tui.core.errors import AutopatchError

REFUSED_NAMES = frozenset({".git", STATE_DIR_NAME})


class ConfinementError(AutopatchError):
    """A path a tool must not touch; the message is safe to show the model (no absolute paths)."""


class NotRegularFileError(ConfinementError):
    """A FIFO, socket, device or folder where a file is to be read: reading one could block forever."""


class FileTooLargeError(ConfinementError):
    """A regular file over the reader's size bound."""


def is_regular(path: Path) -> bool:
    """True only for a regular file (symlinks followed); never opens it, so a FIFO cannot block."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_regular(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of `path`, which must be a regular file: it is opened non-blocking (a FIFO swapped
    in after a check cannot block the open) and checked with `fstat` on the open descriptor before a
    byte is read. Raises `NotRegularFileError`, `FileTooLargeError` (over `max_bytes`) or `OSError`."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError("not a regular file (a pipe, socket, device or folder is not read)")
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileTooLargeError("file too large to read")
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if max_bytes is not None and len(data) > max_bytes:  # it grew after the fstat
        raise FileTooLargeError("file too large to read")
    return data


def refused_name(name: str) -> bool:
    """`.git` / `.autopatch-j` (any case: case-insensitive file systems map `.GIT` onto `.git`)."""
    return name.casefold() in REFUSED_NAMES


def refused_part(parts: tuple[str, ...]) -> str | None:
    return next((p for p in parts if refused_name(p)), None)


def confine(repo: Path, rel: str) -> Path:
    """The resolved path of `rel` inside `repo` (itself resolved), or `ConfinementError`."""
    if not isinstance(rel, str) or not rel.strip():
        raise ConfinementError("a repository-relative path is required")
    raw = PurePath(rel.strip())
    if raw.is_absolute():
        raise ConfinementError("absolute paths are refused; use a path relative to the repository")
    bad = refused_part(raw.parts)
    if bad:
        raise ConfinementError(f"{bad}/ is not readable by tools")
    target = (repo / raw).resolve()
    try:
        inside = target.relative_to(repo)
    except ValueError:
        raise ConfinementError("that path leaves the repository") from None
    bad = refused_part(inside.parts)
    if bad:
        raise ConfinementError(f"that path leads into {bad}/, which is not readable by tools")
    return target


def allowed_entry(repo: Path, entry: Path) -> bool:
    """For walkers and listings: False for a refused name, and for a symlink whose target leaves
    the repository or leads into a refused folder."""
    if refused_name(entry.name):
        return False
    if not entry.is_symlink():
        return True
    try:
        inside = entry.resolve().relative_to(repo)
    except (ValueError, OSError, RuntimeError):
        return False
    return refused_part(inside.parts) is None


def read_regular_head(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """At most `max_bytes` from the start of the regular file `path`, and its size: a file over the
    bound is cut, never read whole (an instruction file may be huge). Opened like `read_regular`
    (non-blocking, checked with `fstat` before a byte is read) and, in addition, never through a
    symlink as its last component: pass a path `confine` resolved, so a link swapped in after the
    check is refused instead of followed. Raises `NotRegularFileError` or `OSError`."""
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
             | getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError("not a regular file (a pipe, socket, device or folder is not read)")
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(max_bytes)
    finally:
        if fd >= 0:
            os.close(fd)
    return data, max(st.st_size, len(data))
