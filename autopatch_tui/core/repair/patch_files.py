"""Writing a patched file — and our own files under `.autopatch-j/` — so that a crash leaves no
trace in the repository.

The new text is written to a temporary file in `.autopatch-j/tmp/` (private, 0700; git ignores the
whole `.autopatch-j/`) and renamed over the source file with `os.replace` — atomic, because the
folder is on the same file system as the repository. When it is not (a mount inside the
repository: another device, or a bind mount of the same one, where the rename fails with EXDEV),
the temporary file goes beside the source, and a marker in `.autopatch-j/tmp/` names it, so a
crash's leftover is still found. The saved audit (`drafts_file`) is written the same way
(`save_private`). `sweep` removes what a killed process left there (its process is gone); the app
calls it at start and on `/reset`.

Nothing here follows a link below the repository (`paths.open_dir`), and every failure is a
`PatchWriteError` with a plain message that names repository-relative paths only."""

from __future__ import annotations

import errno
import functools
import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autopatch_tui.core.confine import confine, kind_of
from autopatch_tui.core.errors import AutopatchError, UnsafePathError
from autopatch_tui.core.paths import StorePaths, new_private_file, open_dir, replace_with

log = logging.getLogger(__name__)

TEMP_DIR_NAME = "tmp"
MAX_MARKER_BYTES = 4096
STALE_SECONDS = 24 * 3600  # a leftover of another host (a shared folder) is swept after a day
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@functools.cache
def host_tag() -> str:
    """This host's tag in temporary names (8 hex digits of the host name's SHA-256), computed at the
    first write: importing this module loads neither `socket` nor OpenSSL's `hashlib` (the host name
    comes from `os.uname`, as `socket.gethostname` gives it on POSIX)."""
    import hashlib

    try:
        name = os.uname().nodename
    except AttributeError:  # no uname: the socket layer's name
        import socket

        name = socket.gethostname()
    return hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()[:8]

_TEMP = re.compile(r"^(?:patch|state|promote)-([0-9a-f]{8})-([0-9]+)-([0-9a-f]{8})\.tmp$")
_MARKER = re.compile(r"^beside-([0-9a-f]{8})-([0-9]+)-([0-9a-f]{8})$")
_BESIDE = re.compile(r"^\..+\.autopatch-([0-9]+)-([0-9a-f]{8})\.tmp$")


class PatchWriteError(AutopatchError):
    """The patched file could not be written; the source file is untouched. Safe to show."""


def temp_dir(repo: Path) -> Path:
    return StorePaths(repo).state_dir / TEMP_DIR_NAME


def _errno_text(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on the device"
    return errno.errorcode.get(exc.errno or 0, "error").lower()


def _folder_text(rel_parent: str) -> str:
    return f"the folder {rel_parent}/" if rel_parent not in ("", ".") else "the repository's root folder"


def _access(path: Path, mode: int) -> bool:
    if os.access in os.supports_effective_ids:  # the rights this process writes with
        return os.access(path, mode, effective_ids=True)
    return os.access(path, mode)


def writable_problem(repo: Path, target: Path) -> str | None:
    """Why this user cannot replace `target` (a confined file of `repo`), in plain words, or None."""
    rel = target.relative_to(repo).as_posix()
    parent = target.parent.relative_to(repo).as_posix()
    if not _access(target.parent, os.W_OK | os.X_OK):
        return f"cannot write {rel}: {_folder_text(parent)} is read-only for you (no write permission)"
    if not _access(target, os.W_OK):
        return f"{rel} is read-only (no write permission); make it writable, then apply again"
    return None


def _private_dir(repo: Path) -> int | None:
    """A descriptor of `.autopatch-j/tmp/` (created 0700, never through a link), or None when it
    cannot be had (a read-only or linked `.autopatch-j`: the caller writes beside the file)."""
    from autopatch_tui.core.memory.store_files import (
        ensure_gitignore,  # the store's own rule: git ignores it
    )

    paths = StorePaths(repo)
    try:
        fd = open_dir(repo, temp_dir(repo), create=True)
    except (OSError, UnsafePathError) as exc:
        log.info("patch temp folder unavailable: %s", type(exc).__name__)
        return None
    try:
        ensure_gitignore(paths)
    except (OSError, UnsafePathError) as exc:
        log.info("state folder .gitignore not written: %s", type(exc).__name__)
    return fd


def same_device(a_fd: int, b_fd: int) -> bool:
    """Are the two folders on one file system (so a rename between them is atomic)?"""
    return os.fstat(a_fd).st_dev == os.fstat(b_fd).st_dev


def _unlink(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def _write(tmp_fd: int, tmp_name: str, folder_fd: int, target: str, data: bytes, mode: int, rel: str, *,
           exdev_ok: bool = False) -> bool:
    """`data` through `tmp_name` in `tmp_fd` onto `target` in `folder_fd`. False (nothing written,
    no temporary file left) when the rename crossed a mount point and `exdev_ok`."""
    try:
        fd = new_private_file(tmp_fd, tmp_name)
    except OSError as exc:
        raise PatchWriteError(f"cannot write {rel}: no temporary file could be made ({_errno_text(exc)})") from None
    try:
        replace_with(fd, data, tmp_name=tmp_name, tmp_dir_fd=tmp_fd, name=target, dir_fd=folder_fd, mode=mode)
    except OSError as exc:
        if exc.errno == errno.EXDEV and exdev_ok:
            return False
        raise PatchWriteError(f"cannot write {rel} ({_errno_text(exc)}); the file is unchanged") from None
    return True


def replace_file(repo: Path, target: Path, data: bytes, mode: int) -> None:
    """Atomically replace the confined file `target` of `repo` with `data`, keeping `mode`.
    Raises `PatchWriteError` (the file is then unchanged and no temporary file is left)."""
    rel = target.relative_to(repo).as_posix()
    problem = writable_problem(repo, target)
    if problem:
        raise PatchWriteError(problem)
    token = f"{os.getpid()}-{os.urandom(4).hex()}"
    try:
        folder_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise PatchWriteError(f"cannot write {rel}: its folder cannot be opened ({_errno_text(exc)})") from None
    private_fd = _private_dir(repo)
    marker: str | None = None
    try:
        written = private_fd is not None and same_device(private_fd, folder_fd) and _write(
            private_fd, f"patch-{host_tag()}-{token}.tmp", folder_fd, target.name, data, mode, rel, exdev_ok=True)
        if not written:  # another file system (or a bind mount): beside the file, named by a marker
            tmp_name = f".{target.name[:180]}.autopatch-{token}.tmp"
            if private_fd is not None:
                marker = f"beside-{host_tag()}-{token}"
                _write_marker(private_fd, marker, (target.parent / tmp_name).relative_to(repo).as_posix())
            _write(folder_fd, tmp_name, folder_fd, target.name, data, mode, rel)
        try:
            os.fsync(folder_fd)  # the rename itself survives a power cut
        except OSError:
            pass  # some file systems refuse fsync on a folder; the rename is done either way
    finally:
        if marker is not None and private_fd is not None:
            _unlink(marker, private_fd)
        if private_fd is not None:
            os.close(private_fd)
        os.close(folder_fd)


@contextmanager
def temp_spot(repo: Path, folder_fd: int, folder_rel: str, target_name: str, kind: str) -> Iterator[tuple[int, str]]:
    """Where to write a temporary file that will be renamed onto `target_name` in the folder
    `folder_fd` (`folder_rel`: that folder, repository-relative, "" for the root): (folder
    descriptor, name). In `.autopatch-j/tmp/` (`<kind>-<host>-<pid>-<hex>.tmp`)
    when it is on the same file system; otherwise beside the target, named by a marker in
    `.autopatch-j/tmp/`, so what a kill leaves is swept either way. The caller creates the file,
    renames or removes it; on exit a leftover of it and the marker are removed. Raises
    `PatchWriteError` when no marker can be written."""
    token = f"{os.getpid()}-{os.urandom(4).hex()}"
    private_fd = _private_dir(repo)
    marker: str | None = None
    spot: tuple[int, str]
    try:
        if private_fd is not None and same_device(private_fd, folder_fd):
            spot = (private_fd, f"{kind}-{host_tag()}-{token}.tmp")
        else:
            spot = (folder_fd, f".{target_name[:180]}.autopatch-{token}.tmp")
            if private_fd is not None:
                marker = f"beside-{host_tag()}-{token}"
                _write_marker(private_fd, marker, f"{folder_rel}/{spot[1]}" if folder_rel else spot[1])
        try:
            yield spot
        finally:
            _unlink(spot[1], spot[0])
    finally:
        if marker is not None and private_fd is not None:
            _unlink(marker, private_fd)
        if private_fd is not None:
            os.close(private_fd)


def save_private(repo: Path, name: str, data: bytes) -> None:
    """Atomically replace `.autopatch-j/<name>` with `data` (0600; never through a link). Its
    temporary file is made in `.autopatch-j/tmp/`, named like a patch write's, so what a kill
    leaves there is swept the same way. Raises OSError or `UnsafePathError`."""
    state_fd = open_dir(repo, StorePaths(repo).state_dir, create=True)
    try:
        tmp_fd = open_dir(repo, temp_dir(repo), create=True)
        try:
            tmp_name = f"state-{host_tag()}-{os.getpid()}-{os.urandom(4).hex()}.tmp"
            replace_with(new_private_file(tmp_fd, tmp_name), data, tmp_name=tmp_name, tmp_dir_fd=tmp_fd, name=name,
                         dir_fd=state_fd, mode=0o600)
        finally:
            os.close(tmp_fd)
    finally:
        os.close(state_fd)


def _write_marker(dir_fd: int, name: str, rel: str) -> None:
    try:
        fd = new_private_file(dir_fd, name)
    except OSError as exc:
        raise PatchWriteError(f"cannot write the patch: .autopatch-j/tmp is not writable ({_errno_text(exc)})"
                              ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(rel)
        fh.flush()
        os.fsync(fh.fileno())


def _dead(host: str, pid: str, age: float) -> bool:
    """Was this left by a process that is gone? (Another host's: only once it is a day old.)"""
    if host != host_tag():
        return age > STALE_SECONDS
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False  # alive (another user's process) or not a pid we can ask about
    return False


def sweep(repo: Path) -> int:
    """Remove the temporary files of patch writes whose process is gone (a kill during `/patch
    apply`), and the files their markers name beside the sources. Returns how many files went.
    Never raises for what it finds: a leftover that cannot be removed is logged and kept."""
    folder = temp_dir(repo)
    if kind_of(folder) != "dir" or os.path.islink(folder) or os.path.islink(folder.parent):
        return 0
    try:
        dfd = open_dir(repo, folder, create=False)
    except (OSError, UnsafePathError) as exc:
        log.info("patch temp folder not swept: %s", type(exc).__name__)
        return 0
    removed = 0
    now = time.time()
    try:
        for name in os.listdir(dfd):
            temp, mark = _TEMP.match(name), _MARKER.match(name)
            if temp is None and mark is None:
                continue
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            host, pid = (temp or mark).group(1), (temp or mark).group(2)  # type: ignore[union-attr]
            if not _dead(host, pid, now - st.st_mtime):
                continue
            if mark is not None:
                removed += _sweep_beside(repo, dfd, name, pid, mark.group(3))
            try:
                os.unlink(name, dir_fd=dfd)
                removed += temp is not None
            except OSError as exc:
                log.warning("patch leftover not removed: %s", type(exc).__name__)
    finally:
        os.close(dfd)
    if removed:
        log.info("swept %d leftover patch file(s)", removed)
    return removed


def _sweep_beside(repo: Path, dfd: int, marker: str, pid: str, token: str) -> int:
    """Remove the temporary file a marker names, only when it is exactly one of ours."""
    try:
        fd = os.open(marker, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=dfd)
        with os.fdopen(fd, "rb") as fh:
            rel = fh.read(MAX_MARKER_BYTES).decode("utf-8")
        name = Path(rel).name
        found = _BESIDE.match(name)
        if found is None or found.groups() != (pid, token):
            return 0
        path = confine(repo, Path(rel).parent.as_posix() or ".") / name
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return 0
        os.unlink(path)
        return 1
    except (OSError, UnicodeDecodeError, AutopatchError):
        return 0
