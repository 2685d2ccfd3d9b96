"""Small JSON documents of ours beside the store (contracts §1): read bounded in size and nesting,
as a regular file with one link, never through a link, without blocking; written atomically (0600)
under an exclusive `fcntl` lock on a `.lock` file beside them, so two processes changing one at once
both land and a reader (who takes no lock) always sees a whole file.

The steering files (`refused_store`) are read through the project's bounded reader
(`core.bounded_json`, issue 28)."""

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


def read_document(paths: StorePaths, path: Path, *, max_bytes: int, fmt: str) -> dict | None:
    """The parsed document at `path` (under `paths.state_dir`), or None when there is none: read by
    the project's one bounded reader (`core.bounded_json`: no link, a regular file with one link, no
    blocking, bounded size and nesting). Raises `SymlinkRefusedError` for a link, `SideFileError`
    for anything else that is not ours."""
    from autopatch_tui.core.bounded_json import LINK, JsonFileError, read_json

    try:
        dfd = open_dir(paths.repo, paths.state_dir, create=False)
    except FileNotFoundError:
        return None
    try:
        doc = read_json(path.name, max_bytes=max_bytes, max_depth=MAX_DEPTH, dir_fd=dfd, single_link=True,
                        shown=path)
    except JsonFileError as exc:
        if exc.reason == LINK:
            raise SymlinkRefusedError(f"{path} is a symbolic link; Memory never opens or writes through a link",
                                      path) from None
        raise SideFileError(f"{exc}; move it away") from None
    finally:
        os.close(dfd)
    if doc is None:
        return None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise SideFileError(f"{path} is not a {fmt} document; move it away")
    return doc


@contextmanager
def locked(paths: StorePaths, lock: Path, *, error: type[AutopatchError] = SideFileError,
           refused: str = "nothing was changed") -> Iterator[None]:
    """An exclusive lock (across processes) for one read-modify-write of a side file (the review
    marks' too). A link is refused; a lock file that cannot be one (a folder, a FIFO without a
    reader, a read-only folder, a second link) is `error` in one sentence ending in `refused`."""
    dfd = open_dir(paths.repo, paths.state_dir, create=True)
    try:
        try:
            fd = os.open(lock.name, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, 0o600, dir_fd=dfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise SymlinkRefusedError(f"{lock} is a symbolic link; Memory never opens or writes through a link",
                                          lock) from None
            raise error(f"{lock} cannot be opened as a lock file ({exc.strerror or type(exc).__name__}); "
                        f"{refused} — move it away") from None
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise error(f"{lock} is not a private regular file; move it away")
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
