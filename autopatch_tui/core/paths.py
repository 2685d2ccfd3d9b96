"""Where a project's Memory files live, and private, no-follow file creation (0600 files, 0700
folders).

Below a trusted root (the repository for `.autopatch-j/`, `$AUTOPATCH_HOME` for per-user state)
no path component is ever followed when it is a symlink (contracts §1): folders are walked with
`O_NOFOLLOW | O_DIRECTORY` relative to their parent's descriptor, files are created with
`O_CREAT | O_EXCL | O_NOFOLLOW`, and replaced with `os.replace` relative to the folder descriptor
(which replaces a link itself, never its target). The path up to the root may contain links."""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import ReadOnlyPathError, SymlinkRefusedError, UnsafePathError

GITIGNORE_NAME = ".gitignore"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_EFFECTIVE = os.access in os.supports_effective_ids


@dataclass(frozen=True)
class StorePaths:
    """The files of one project store under `<repo>/.autopatch-j/`."""

    repo: Path

    @property
    def state_dir(self) -> Path:
        return self.repo / C.STATE_DIR_NAME

    @property
    def db(self) -> Path:
        return self.state_dir / C.DB_FILE_NAME

    @property
    def exports_dir(self) -> Path:
        return self.state_dir / C.EXPORT_DIR_NAME

    @property
    def summary(self) -> Path:
        return self.state_dir / C.SUMMARY_FILE_NAME

    @property
    def legacy_json(self) -> Path:
        return self.state_dir / C.LEGACY_JSON_NAME

    @property
    def gitignore(self) -> Path:
        return self.state_dir / GITIGNORE_NAME

    @property
    def saved_audit(self) -> Path:
        return self.state_dir / C.AUDIT_FILE_NAME

    @property
    def review_marks(self) -> Path:
        return self.state_dir / C.REVIEW_MARKS_NAME

    @property
    def review_lock(self) -> Path:
        return self.state_dir / C.REVIEW_LOCK_NAME

    @property
    def refused(self) -> Path:
        return self.state_dir / C.REFUSED_NAME

    @property
    def refused_lock(self) -> Path:
        return self.state_dir / C.REFUSED_LOCK_NAME

    @property
    def memory_used(self) -> Path:
        return self.state_dir / C.MEMORY_USED_NAME

    def db_artifacts(self) -> list[Path]:
        """memory.db and its side files (-wal, -shm, -journal)."""
        return [self.db] + [self.db.with_name(self.db.name + s) for s in C.DB_SIDE_SUFFIXES]

    def opened_paths(self) -> list[Path]:
        """Everything the app opens or writes under `.autopatch-j/` (the legacy memory.json is
        never opened), folder first."""
        return [self.state_dir, *self.db_artifacts(), self.exports_dir, self.summary, self.gitignore,
                self.review_marks, self.review_lock, self.refused, self.refused_lock, self.memory_used]

    @classmethod
    def for_db(cls, db_path: Path) -> StorePaths:
        """Paths for a loose `memory.db` (its folder is taken as the state dir)."""
        return cls(repo=db_path.parent.parent)


# --------------------------------------------------------------------------- checks


def find_symlink(root: Path, path: Path) -> Path | None:
    """The first component of `path` below `root` that is a symlink, or None. Components that do
    not exist end the walk (nothing below them exists either)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise UnsafePathError(f"{path} is not below {root}", path) from None
    p = root
    for part in rel.parts:
        p = p / part
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return p
    return None


def write_access_problem(path: Path, *, folder: bool = False) -> str | None:
    """'no write permission on PATH' when this user may not write (create in, for a folder) `path`."""
    mode = os.W_OK | (os.X_OK if folder else 0)
    ok = os.access(path, mode, effective_ids=True) if _EFFECTIVE else os.access(path, mode)
    if ok:
        return None
    what = "write and search permission on the folder" if folder else "write permission on"
    return f"no {what} {path}"


def read_access_problem(path: Path, *, folder: bool = False) -> str | None:
    """'no read permission on PATH' (a file), 'no search permission on the folder PATH' (a folder:
    reaching its files needs x, not r)."""
    mode = os.X_OK if folder else os.R_OK
    ok = os.access(path, mode, effective_ids=True) if _EFFECTIVE else os.access(path, mode)
    if ok:
        return None
    what = "search permission on the folder" if folder else "read permission on"
    return f"no {what} {path}"


# --------------------------------------------------------------------------- no-follow creation


def _refuse_link(path: Path) -> SymlinkRefusedError:
    return SymlinkRefusedError(f"{path} is a symbolic link; Memory never opens or writes through a link", path)


def _read_only(path: Path, parent: Path) -> ReadOnlyPathError:
    return ReadOnlyPathError(f"cannot create {path}: no write permission on {parent}", path)


def open_dir(root: Path, path: Path, *, create: bool) -> int:
    """A descriptor of the folder `path` (below or equal to `root`), walked without following any
    symlink below `root`; with `create`, missing folders are made 0700. The caller closes it."""
    rel = path.relative_to(root)
    if create and not os.path.lexists(root):
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
        except PermissionError as exc:
            raise _read_only(root, root.parent) from exc
        except OSError as exc:
            if exc.errno == errno.EROFS:
                raise _read_only(root, root.parent) from exc
            raise
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    p = root
    try:
        for part in rel.parts:
            parent, p = p, p / part
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                except PermissionError as exc:
                    raise _read_only(p, parent) from exc
                except OSError as exc:
                    if exc.errno == errno.EROFS:
                        raise _read_only(p, parent) from exc
                    raise
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.fchmod(nfd, 0o700)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and os.path.islink(p):
                    raise _refuse_link(p) from exc
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def ensure_private_dir(path: Path, root: Path | None = None) -> Path:
    """Create `path` (0700 for the folders this call creates). Below `root` (default: the
    nearest existing ancestor) no symlink is followed."""
    if root is None:
        root = path
        while not os.path.lexists(root) and root.parent != root:
            root = root.parent
        if root == path and os.path.lexists(path):
            return path
    os.close(open_dir(root, path, create=True))
    return path


def create_private_file(root: Path, path: Path) -> bool:
    """Create the empty file `path` (0600) unless it exists; True when this call created it.
    A symlink at `path` or above it (below `root`) is refused, never followed."""
    dfd = open_dir(root, path.parent, create=True)
    try:
        try:
            fd = os.open(path.name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | _NOFOLLOW, 0o600, dir_fd=dfd)
        except FileExistsError:
            if os.path.islink(path):
                raise _refuse_link(path) from None
            return False
        except PermissionError as exc:
            raise _read_only(path, path.parent) from exc
        os.close(fd)
        return True
    finally:
        os.close(dfd)


def new_private_file(dir_fd: int, name: str) -> int:
    """A new file `name` (0600) in the folder `dir_fd`, opened for writing; never through a link,
    never an existing file. Raises OSError."""
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                   dir_fd=dir_fd)


def replace_with(fd: int, data: bytes, *, tmp_name: str, tmp_dir_fd: int, name: str, dir_fd: int,
                 mode: int | None = None) -> None:
    """The one atomic replace: `data` written to the new temporary file `fd` (`tmp_name` in the
    folder `tmp_dir_fd`), given `mode`, flushed to disk, and renamed over `name` in the folder
    `dir_fd` (a link there is replaced, never followed). On any failure the temporary file is
    removed and the error re-raised; `name` is then untouched."""
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp_name, name, src_dir_fd=tmp_dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp_name, dir_fd=tmp_dir_fd)
        except FileNotFoundError:
            pass
        raise


def write_private_text(path: Path, text: str, root: Path | None = None) -> None:
    """Atomically replace `path` with `text` (0600), via a temp file in the same folder, all
    relative to the folder's descriptor (no symlink below `root` is followed)."""
    parent = path.parent
    if root is None:
        ensure_private_dir(parent)
        root = parent
    dfd = open_dir(root, parent, create=True)
    tmp = f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        try:
            fd = new_private_file(dfd, tmp)
        except PermissionError as exc:
            raise _read_only(path, parent) from exc
        replace_with(fd, text.encode("utf-8"), tmp_name=tmp, tmp_dir_fd=dfd, name=path.name, dir_fd=dfd)
    finally:
        os.close(dfd)


def move_aside(path: Path, now: float) -> Path:
    """Rename `path` (a link, a folder, anything) to `<name>.aside-<UTC stamp>[-N]` in its folder;
    nothing is deleted and a link's target is untouched. Returns the new path."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    for n in range(1000):
        target = path.with_name(f"{path.name}.aside-{stamp}" + (f"-{n}" if n else ""))
        if os.path.lexists(target):
            continue
        try:
            os.rename(path, target)
        except PermissionError as exc:
            raise ReadOnlyPathError(f"cannot move {path} aside: no write permission on {path.parent}", path) from exc
        return target
    raise UnsafePathError(f"cannot find a free name to move {path} aside", path)
