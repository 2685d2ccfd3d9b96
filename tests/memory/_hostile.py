"""Damaged, hostile and read-only stores for tests/memory/test_hostile_store.py.

Read-only is simulated faithfully: tests run as root, and root ignores file modes, so when the
process is root the commands run with the effective uid/gid of `nobody` (`os.seteuid`, restored
after each command). Every folder on the way is then traversable by `nobody`, and the whole tree
is owned by `nobody`, so the modes a test sets (0444 file, 0555 folder, 0000 file) are exactly what
the code meets. As a non-root user the modes apply as they are."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.memory.schema import expected_catalog, read_catalog
from tests.support.fixtures import raw_connect, write_git_layout

NOBODY = 65534
IS_ROOT = os.geteuid() == 0


@contextlib.contextmanager
def unprivileged() -> Iterator[None]:
    """Run the block as `nobody` when this process is root (file modes then apply)."""
    if not IS_ROOT:
        yield
        return
    os.setegid(NOBODY)
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def world_dir(prefix: str) -> Path:
    """A fresh folder `nobody` can reach (pytest's tmp folders are 0700 root)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp")).resolve()
    os.chmod(path, 0o755)
    return path


def give_to_nobody(base: Path) -> None:
    """chown -R nobody (no-op unless root); symlinks themselves, never their targets."""
    if not IS_ROOT:
        return
    for dirpath, dirnames, filenames in os.walk(base):
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)
    os.chown(base, NOBODY, NOBODY)


def remove_tree(base: Path) -> None:
    for dirpath, dirnames, _ in os.walk(base):
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if not os.path.islink(p):
                os.chmod(p, 0o755)
    shutil.rmtree(base, ignore_errors=True)


def tree_fingerprint(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below `root` (links not followed): kind, mode, and content hash / link target."""
    out: dict[str, tuple[object, ...]] = {}
    if not os.path.lexists(root):
        return out
    st = os.lstat(root)
    if stat.S_ISLNK(st.st_mode):
        return {".": ("link", os.readlink(root))}
    if not stat.S_ISDIR(st.st_mode):
        return {".": ("file", stat.S_IMODE(st.st_mode), _hash(root))}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted([*dirnames, *filenames]):
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            try:
                s = os.lstat(p)
            except PermissionError:  # below a folder without search permission (non-root runs)
                out[rel] = ("unreachable",)
                continue
            if stat.S_ISLNK(s.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(s.st_mode):
                out[rel] = ("dir", stat.S_IMODE(s.st_mode))
            elif stat.S_ISREG(s.st_mode):
                out[rel] = ("file", stat.S_IMODE(s.st_mode), _hash(p))
            else:
                out[rel] = ("other", stat.S_IFMT(s.st_mode))
    return out


def _hash(p: Path) -> str:
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except PermissionError:
        return "unreadable"


# --------------------------------------------------------------------------- the world of one test


@dataclass
class World:
    base: Path     # world-traversable folder holding everything
    repo: Path     # the checkout under test
    other: Path    # another project's checkout with a healthy store
    home: Path     # AUTOPATCH_HOME

    @property
    def state(self) -> Path:
        return self.repo / ".autopatch-j"

    @property
    def db(self) -> Path:
        return self.state / "memory.db"

    @property
    def elsewhere(self) -> Path:
        return self.base / "elsewhere"


def new_world(template: Path) -> World:
    """A checkout with a healthy store copied from `template` (a closed store file), another
    project with a healthy store, and an `elsewhere` folder outside both."""
    base = world_dir("apj-hostile-")
    repo = write_git_layout(base / "project", "https://example.org/project.git")  # no git process: fast
    other = write_git_layout(base / "other-project", "https://example.org/other.git")
    for checkout in (repo, other):
        state = checkout / ".autopatch-j"
        state.mkdir(mode=0o700)
        shutil.copyfile(template, state / "memory.db")
        os.chmod(state / "memory.db", 0o600)
        (state / ".gitignore").write_text("*\n")  # as the app writes it with the store
        os.chmod(state / ".gitignore", 0o600)
    (base / "elsewhere").mkdir()
    home = base / "home"
    home.mkdir(mode=0o700)
    return World(base, repo, other, home)


def sql(db: Path, *statements: str) -> None:
    conn = raw_connect(db)
    try:
        for s in statements:
            conn.execute(s)
    finally:
        conn.close()


def commit_only_in_wal(db: Path, *statements: str, shm: bool) -> None:
    """`statements` committed only in `db`'s WAL, as a backup or copy of a live store (or a crash)
    leaves it: they run on a scratch copy whose connection stays open (no checkpoint), and the file,
    its `-wal` (and, with `shm`, its `-shm`) are copied over `db`. The file alone stays as it was."""
    scratch = Path(tempfile.mkdtemp(prefix="apj-wal-only-"))
    try:
        shutil.copyfile(db, scratch / "memory.db")
        conn = raw_connect(scratch / "memory.db")
        try:
            conn.execute("PRAGMA wal_autocheckpoint = 0")
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            for statement in statements:
                conn.execute(statement)
            for suffix in ("", "-wal", *(("-shm",) if shm else ())):
                target = db.with_name(db.name + suffix)
                shutil.copyfile(scratch / f"memory.db{suffix}", target)
                os.chmod(target, 0o600)
        finally:
            conn.close()
    finally:
        shutil.rmtree(scratch)
    assert db.with_name(db.name + "-wal").stat().st_size > 0
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)  # the file alone: a healthy v4 store
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
        assert read_catalog(conn) == list(expected_catalog())
        assert conn.execute("SELECT count(*) FROM memory_meta").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM threads WHERE status = 'active'").fetchone()[0] == 1
    finally:
        conn.close()


def sqlite_rollback_file(db: Path) -> None:
    """A v4 copy switched to the rollback journal (header bytes 1/1)."""
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


def bypass_index(db: Path, index: str, column_where: str, never: str, *inserts: str) -> None:
    """Write rows the (partial unique) index does not see: its WHERE is swapped for one no row
    meets, the rows are inserted, and the original definition is put back. The catalog is then
    exactly v4 again and `quick_check` (which does not compare indexes with tables) passes."""
    conn = raw_connect(db)
    try:
        original = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (index,)).fetchone()[0]
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (original.replace(column_where, never), index))
        conn.execute(f"PRAGMA schema_version = {version + 1}")
        conn.execute("PRAGMA writable_schema = OFF")
    finally:
        conn.close()
    conn = raw_connect(db)
    try:
        for s in inserts:
            conn.execute(s)
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (original, index))
        conn.execute(f"PRAGMA schema_version = {version + 1}")
        conn.execute("PRAGMA writable_schema = OFF")
    finally:
        conn.close()


Build = Callable[[World], None]
