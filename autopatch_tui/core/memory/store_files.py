"""The files of a store before SQLite sees them: symlinks, kinds, permissions and a stale journal.

`preflight` runs before any SQLite connection is opened and returns a degraded `Health` (with its
`cause`) for anything SQLite must not be given: a symlink anywhere below the repository on the
way to a Memory file (contracts §1), a folder or other non-file where a file belongs, a file or
folder this user cannot read, or a garbage `-journal` that SQLite would try to roll back.
`write_problem` says why a store that reads fine cannot be written (cause `read_only`).
`open_verified` opens SQLite read-write and checks afterwards that it opened exactly the checked
file (closing a race between the check and the open)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from autopatch_tui.core.errors import SymlinkRefusedError
from autopatch_tui.core.memory.health import JOURNAL, NOT_A_FILE, PERMISSION, SYMLINK, Health
from autopatch_tui.core.memory.sqlite import garbage_journal, open_reader, open_readwrite, opened_file, side_file
from autopatch_tui.core.paths import (
    StorePaths,
    create_private_file,
    find_symlink,
    move_aside,
    read_access_problem,
    write_access_problem,
)

CLEAR_MOVES_ASIDE = "`memory clear --confirm` moves it aside (nothing is deleted) and starts a clean store"


def _link_text(link: Path) -> str:
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    return f"{link} is a symbolic link (to {target}); Memory never opens or writes through a link"


def symlink_in(paths: StorePaths) -> Path | None:
    """The first symlink on the way to any file the app opens under `.autopatch-j/`: the folder
    itself (every component below the repository), then each file in it (one `lstat` each: every
    opened path is a direct child of the folder)."""
    state = paths.state_dir
    link = find_symlink(paths.repo, state)
    if link is not None:
        return link
    folder = str(state)
    for p in paths.opened_paths():
        if p == state:
            continue
        if p.parent != state:  # pragma: no cover - a path deeper down: walk it
            link = find_symlink(paths.repo, p)
            if link is not None:
                return link
            continue
        try:
            if stat.S_ISLNK(os.lstat(os.path.join(folder, p.name)).st_mode):
                return p
        except (FileNotFoundError, NotADirectoryError):
            continue
    return None


def _degraded(diagnostic: str, cause: str) -> Health:
    return Health(False, 0, diagnostic, cause=cause)


def preflight(paths: StorePaths) -> Health | None:
    """A degraded `Health` when the store's files must not be handed to SQLite, else None."""
    try:
        link = symlink_in(paths)
    except PermissionError:
        return _degraded(f"cannot read the Memory folder: no search permission on the folder {paths.state_dir}",
                         PERMISSION)
    if link is not None:
        return _degraded(f"{_link_text(link)}; `memory clear --confirm` moves the link aside (its target is "
                         "untouched) and starts a clean store, or remove the link yourself", SYMLINK)
    try:
        st_dir = os.lstat(paths.state_dir)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st_dir.st_mode):
        return _degraded(f"{paths.state_dir} is not a folder; {CLEAR_MOVES_ASIDE}", NOT_A_FILE)
    problem = read_access_problem(paths.state_dir, folder=True)
    if problem:
        return _degraded(f"cannot read the Memory folder: {problem}", PERMISSION)
    for artifact in paths.db_artifacts():
        try:
            st = os.lstat(artifact)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a special file (FIFO, socket or device)"
            return _degraded(f"{artifact} is {kind}, not a database file; {CLEAR_MOVES_ASIDE}", NOT_A_FILE)
        problem = read_access_problem(artifact)
        if problem:
            return _degraded(f"cannot read the Memory database: {problem}", PERMISSION)
    return _journal_problem(paths)


def _journal_problem(paths: StorePaths) -> Health | None:
    size = garbage_journal(paths.db)
    if size is None:
        return None  # none, empty or finished (SQLite ignores it), or a real one SQLite rolls back or waits on
    return _degraded(f"memory.db-journal next to the database is not an SQLite rollback journal ({size} bytes of "
                     "unknown content): SQLite would try to roll it back into the database; the files are left "
                     "as they are; `memory clear --confirm` deletes the database files and starts a clean store",
                     JOURNAL)


def write_problem(paths: StorePaths) -> str | None:
    """Why this user cannot write the store (or create it), naming the path and the permission."""
    if not os.path.lexists(paths.state_dir):
        parent = paths.repo
        problem = write_access_problem(parent, folder=True)
        return f"cannot create {paths.state_dir}: {problem}" if problem else None
    problem = write_access_problem(paths.state_dir, folder=True)
    if problem:
        return f"the Memory store is read-only: {problem} (SQLite needs it for memory.db-wal and memory.db-shm)"
    for artifact in paths.db_artifacts():
        if os.path.lexists(artifact):
            problem = write_access_problem(artifact)
            if problem:
                return f"the Memory store is read-only: {problem}"
    return None


def ensure_gitignore(paths: StorePaths) -> None:
    """`.autopatch-j/.gitignore` holding `*` (contracts §1), written once, never through a link."""
    if os.path.lexists(paths.gitignore):
        return
    if create_private_file(paths.repo, paths.gitignore):
        fd = os.open(paths.gitignore, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.write(fd, b"*\n")
        finally:
            os.close(fd)


def open_verified(paths: StorePaths, *, reader: bool = False) -> sqlite3.Connection:
    """A read-write connection to `paths.db` (with `reader`: a plain read-only one, see
    `sqlite.open_reader`), refused when SQLite opened anything but the checked file (a link
    planted between the check and the open)."""
    link = symlink_in(paths)
    if link is not None:
        raise SymlinkRefusedError(_link_text(link), link)
    conn = open_reader(paths.db) if reader else open_readwrite(paths.db)
    try:
        link = symlink_in(paths)
        if link is not None:
            raise SymlinkRefusedError(_link_text(link), link)
        if opened_file(conn) != os.path.realpath(paths.db):
            raise SymlinkRefusedError(f"{paths.db} changed while it was opened; Memory never opens a link", paths.db)
    except BaseException:
        conn.close()
        raise
    return conn


def move_aside_odd_files(paths: StorePaths, now: float) -> list[Path]:
    """For an explicit clear: every symlink, every non-file and every file with more than one hard
    link on the way to the database is renamed aside (never deleted; a link's target and a hard
    link's other names are untouched). A hard-linked `memory.db` takes its `-wal` along under the
    matching name, so the moved file still opens with its last commits. Returns the new paths."""
    moved: list[Path] = []
    link = symlink_in(paths)
    while link is not None:
        moved.append(move_aside(link, now))
        link = symlink_in(paths)
    if os.path.lexists(paths.state_dir) and not paths.state_dir.is_dir():
        moved.append(move_aside(paths.state_dir, now))
    for artifact in paths.db_artifacts():
        try:
            st = os.lstat(artifact)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            aside = move_aside(artifact, now)
            moved.append(aside)
            if artifact == paths.db:
                moved.extend(_move_wal_along(paths.db, aside))
    return moved


def _move_wal_along(db: Path, aside: Path) -> list[Path]:
    wal, target = side_file(db, "-wal"), side_file(aside, "-wal")
    try:
        if not stat.S_ISREG(os.lstat(wal).st_mode) or os.path.lexists(target):
            return []
    except FileNotFoundError:
        return []
    os.rename(wal, target)
    return [target]
