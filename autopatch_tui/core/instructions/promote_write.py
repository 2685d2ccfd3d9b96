"""Writing a promotion (contracts §9): one lock, one atomic swap, nothing left in the repository.

- **One lock.** Plan, check and write happen under an exclusive `fcntl` lock on
  `.autopatch-j/promote.lock` (`promote_lock`), so two promotes never both read the same file and
  the second's rename eats the first's bullet: the second waits, then plans again from what the
  first wrote. A promote that cannot get the lock within `LOCK_WAIT_SECONDS` writes nothing and
  says so.
- **A hand edit is never lost.** An editor takes no lock, so the file is checked again *after* the
  new text is in place: the new file is swapped in with `renameat2(RENAME_EXCHANGE)`, and the file
  it replaced must be the very file the plan read (inode, size, mtime); if an edit landed between
  the check and the swap, the swap is undone and nothing is written. A new file is put in place
  with `RENAME_NOREPLACE` (a file created meanwhile is never replaced). Where the kernel or file
  system has no `renameat2`, the check runs right before a plain `rename` (a window of
  microseconds).
- **No leftovers.** The temporary file lives in `.autopatch-j/tmp/` (`promote-<host>-<pid>-<hex>.tmp`;
  beside the file, named by a marker there, when `.autopatch-j` is on another file system), where
  the start's sweep (`patch_files.sweep`, as for `/patch apply`) removes what a kill left.
- Nothing is written through a link: every folder below the repository is opened `O_NOFOLLOW`
  relative to its parent (`paths.open_dir`), and the names are used relative to those descriptors."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.paths import StorePaths, open_dir

if TYPE_CHECKING:
    import ctypes

LOCK_NAME = "promote.lock"
LOCK_WAIT_SECONDS = 30.0
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2

Stamp = tuple[int, int, int, int, int]  # (mtime_ns, size, inode, device, ctime_ns)


class PromoteError(AutopatchError):
    """The promotion cannot be done as asked; nothing was written."""


def stamp_of(st: os.stat_result) -> Stamp:
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev, st.st_ctime_ns


def why(exc: OSError) -> str:
    """An OS error in plain words ("Permission denied", "Read-only file system")."""
    return os.strerror(exc.errno) if exc.errno else "the system refused it"


# --------------------------------------------------------------------------- the lock


@contextmanager
def promote_lock(repo: Path, *, wait: float | None = None) -> Iterator[None]:
    """Exclusive across processes for one plan-check-write. `PromoteError` when it cannot be had
    (another promote holds it for longer than `wait` seconds — `LOCK_WAIT_SECONDS` by default —
    or the lock file is not ours)."""
    wait = LOCK_WAIT_SECONDS if wait is None else wait
    try:
        dfd = open_dir(repo, StorePaths(repo).state_dir, create=True)
    except AutopatchError as exc:
        raise PromoteError(f"the promote lock cannot be taken: {exc}") from None
    except OSError as exc:
        raise PromoteError(f"the promote lock cannot be taken ({why(exc)}); nothing was written") from None
    try:
        fd = os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, 0o600, dir_fd=dfd)
    except OSError as exc:
        link = exc.errno in (errno.ELOOP, errno.EMLINK)
        raise PromoteError(f".autopatch-j/{LOCK_NAME} " + ("is a symbolic link; move it away" if link else
                           f"cannot be opened ({why(exc)})") + "; nothing was written") from None
    finally:
        os.close(dfd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PromoteError(f".autopatch-j/{LOCK_NAME} is not a regular file; move it away (nothing was written)")
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise PromoteError(f"another promote has been writing for over {wait:.0f} s; nothing was "
                                       "written (try again)") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# --------------------------------------------------------------------------- the swap


class _Unsupported(Exception):
    """No `renameat2` (another OS, an old kernel or C library, a file system without the flag)."""


_renameat2_fn: object = None


def _renameat2() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    global _renameat2_fn
    if _renameat2_fn is None:
        import ctypes  # only a write needs it: promote's planning, --prune with nothing gone and `forget` do not

        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2_fn = fn
        except (OSError, AttributeError):
            _renameat2_fn = False
    return _renameat2_fn or None  # type: ignore[return-value]


def rename2(src_fd: int, src: str, dst_fd: int, dst: str, flags: int) -> None:
    """`renameat2`; `_Unsupported` where it does not exist or the flag is not supported."""
    fn = _renameat2()
    if fn is None:
        raise _Unsupported
    if fn(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), flags) != 0:
        import ctypes

        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise _Unsupported
        raise OSError(err, os.strerror(err))


def _changed(shown: str) -> PromoteError:
    return PromoteError(f"{shown} changed since the diff was made; nothing was written (promote again)")


def check_unchanged(dfd: int, name: str, shown: str, stamp: Stamp | None, mode: int | None) -> None:
    """The file is still what the plan read (or still absent), and still writable with its mode."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if (None if st is None else stamp_of(st)) != stamp:
        raise _changed(shown)
    if st is not None and (not st.st_mode & 0o222 or stat.S_IMODE(st.st_mode) != mode):
        raise PromoteError(f"{shown} is read-only (or its mode changed); nothing was changed")


def _install(tfd: int, tmp: str, dfd: int, name: str, shown: str, stamp: Stamp | None, mode: int | None) -> None:
    """Put the written temporary file in place of `name`, only while `name` is the file the plan read."""
    if stamp is None:
        try:
            rename2(tfd, tmp, dfd, name, _RENAME_NOREPLACE)
        except FileExistsError:
            raise _changed(shown) from None
        except _Unsupported:
            check_unchanged(dfd, name, shown, stamp, mode)
            os.rename(tmp, name, src_dir_fd=tfd, dst_dir_fd=dfd)
        return
    try:
        rename2(tfd, tmp, dfd, name, _RENAME_EXCHANGE)
    except FileNotFoundError:  # removed since the check
        raise _changed(shown) from None
    except _Unsupported:
        check_unchanged(dfd, name, shown, stamp, mode)
        os.rename(tmp, name, src_dir_fd=tfd, dst_dir_fd=dfd)
        return
    # `tmp` now names the file that was in place: it must be the one the plan read, unedited (its
    # ctime moved with the swap itself, so inode, size and mtime tell)
    st = os.stat(tmp, dir_fd=tfd, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode) or stamp_of(st)[:4] != stamp[:4]:
        try:
            rename2(tfd, tmp, dfd, name, _RENAME_EXCHANGE)  # theirs back in place, ours out
        except (OSError, _Unsupported):
            kept = f"{name}.edited-{os.urandom(3).hex()}"  # never lose theirs: beside the file, named
            os.rename(tmp, kept, src_dir_fd=tfd, dst_dir_fd=dfd)
            raise PromoteError(f"{shown} changed while it was written; the edited file is kept as {kept} "
                               "beside it (compare and merge by hand)") from None
        raise _changed(shown)


def write_text(repo: Path, path: Path, shown: str, text: str, stamp: Stamp | None, mode: int | None) -> None:
    """Atomically replace `path` (inside the resolved `repo`) with `text`, only while it is still
    the file stamped `stamp` (None: still absent). A new file gets the usual mode (0666 less the
    umask: a shared file, not a private one); an existing one keeps `mode`. Call it under
    `promote_lock`. `PromoteError` (nothing changed) for any refusal or failure."""
    from autopatch_tui.core.repair.patch_files import PatchWriteError, temp_spot

    folder_rel = path.parent.relative_to(repo).as_posix()
    try:
        dfd = open_dir(repo, path.parent, create=False)
    except AutopatchError as exc:  # a link on the way: never followed
        raise PromoteError(f"{shown} cannot be written: {exc}") from None
    except OSError as exc:
        raise PromoteError(f"{shown}'s folder cannot be opened ({why(exc)})") from None
    try:
        check_unchanged(dfd, path.name, shown, stamp, mode)
        with temp_spot(repo, dfd, "" if folder_rel == "." else folder_rel, path.name, "promote") as (tfd, tmp):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=tfd)
            with os.fdopen(fd, "wb") as out:
                out.write(text.encode("utf-8"))
                out.flush()
                if mode is not None:
                    os.fchmod(out.fileno(), mode)
                os.fsync(out.fileno())
            _install(tfd, tmp, dfd, path.name, shown, stamp, mode)
        try:
            os.fsync(dfd)  # the rename itself survives a power cut
        except OSError:
            pass  # some file systems refuse fsync on a folder; the rename is done either way
    except PatchWriteError as exc:
        raise PromoteError(f"{shown} cannot be written ({exc}); nothing was changed") from None
    except OSError as exc:
        raise PromoteError(f"{shown} cannot be written ({why(exc)}); nothing was changed") from None
    finally:
        os.close(dfd)
