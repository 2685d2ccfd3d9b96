"""Small JSON documents of ours beside the store (contracts §1): read bounded in size and nesting,
as a regular file with one link, never through a link, without blocking; written atomically (0600)
under an exclusive `fcntl` lock on a `.lock` file beside them, so two processes changing one at once
both land and a reader (who takes no lock) always sees a whole file.

A minimal reader for the steering files (`refused_store`); the project-wide bounded reader of
issue 28 (h28a, `core/`) replaces `read_document` once it is on main."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autopatch_tui.core.errors import AutopatchError, SymlinkRefusedError
from autopatch_tui.core.paths import (
    StorePaths,
    move_aside,
    open_dir,
    write_private_text,
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
MAX_DEPTH = 8  # our documents nest 4 deep; a deeper one is not ours


class SideFileError(AutopatchError):
    """A side file cannot be used (not a regular file, a second link, too large, not our document).
    It is left as it is; the message names it and says what to do."""


def _depth(value: object, limit: int) -> bool:
    """Whether `value` nests at most `limit` containers deep (iterative: no recursion on hostile input)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > limit:
                return False
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return True


def read_document(paths: StorePaths, path: Path, *, max_bytes: int, fmt: str) -> dict | None:
    """The parsed document at `path` (under `paths.state_dir`), or None when there is none.
    Raises `SymlinkRefusedError` for a link, `SideFileError` for anything else that is not ours."""
    try:
        dfd = open_dir(paths.repo, paths.state_dir, create=False)
    except FileNotFoundError:
        return None
    try:
        try:
            fd = os.open(path.name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise SymlinkRefusedError(f"{path} is a symbolic link; Memory never opens or writes through a link",
                                          path) from None
            raise SideFileError(f"{path} cannot be read ({type(exc).__name__}); move it away") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SideFileError(f"{path} is not a regular file; move it away")
            if st.st_nlink > 1:
                raise SideFileError(f"{path} has more than one hard link; move it away")
            if st.st_size > max_bytes:
                raise SideFileError(f"{path} is larger than {max_bytes} bytes; move it away")
            with os.fdopen(fd, "rb", closefd=False) as fh:
                raw = fh.read(max_bytes + 1)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise SideFileError(f"{path} is not a JSON document; move it away") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt or not _depth(doc, MAX_DEPTH):
        raise SideFileError(f"{path} is not a {fmt} document; move it away")
    return doc


@contextmanager
def locked(paths: StorePaths, lock: Path) -> Iterator[None]:
    """An exclusive lock (across processes) for one read-modify-write of a side file."""
    dfd = open_dir(paths.repo, paths.state_dir, create=True)
    try:
        try:
            fd = os.open(lock.name, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, 0o600, dir_fd=dfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise SymlinkRefusedError(f"{lock} is a symbolic link; Memory never opens or writes through a link",
                                          lock) from None
            raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise SideFileError(f"{lock} is not a private regular file; move it away")
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_document(paths: StorePaths, path: Path, doc: dict) -> None:
    write_private_text(path, json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n", root=paths.repo)


def remove(paths: StorePaths, path: Path, now: float) -> Path | None:
    """`memory clear`: a regular file is deleted; anything else there is moved aside (returned)."""
    try:
        dfd = open_dir(paths.repo, paths.state_dir, create=False)
    except FileNotFoundError:
        return None
    try:
        try:
            st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISREG(st.st_mode):
            os.unlink(path.name, dir_fd=dfd)
            return None
    finally:
        os.close(dfd)
    return move_aside(path, now)
