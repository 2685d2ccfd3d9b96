"""The one confinement check every caller that takes a repository path calls (the model's source
tools, the repair scanner's scope, patch drafting and apply, `--path`, instruction files): a path is
refused when it is absolute, leaves the repository (also through a symlink), or has a `.git` or
`.autopatch-j` component at any depth — before or after symlinks are resolved. A path the operating
system could not use is refused with its own typed error instead of whatever `pathlib` raises: a NUL
byte or text that is not a file name (`ValueError`), a symlink loop or a chain longer than the
system follows (`RuntimeError` / ELOOP), a path over the system's length limits (ENAMETOOLONG).
Walkers prune the same names and never follow a link out.

`confine(repo, rel)` is the check; `read_confined(repo, rel, max_bytes)` reads a regular file
through it (never a FIFO, device or folder). Both raise only `ConfinementError` subclasses, whose
messages name no absolute path."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePath

from autopatch_tui.core.constants import STATE_DIR_NAME
from autopatch_tui.core.errors import AutopatchError

REFUSED_NAMES = frozenset({".git", STATE_DIR_NAME})
MAX_PATH_BYTES = 4095  # Linux's PATH_MAX (4096) less the NUL: the whole path, repository included
MAX_NAME_BYTES = 255  # NAME_MAX: one path component


class ConfinementError(AutopatchError):
    """A path a tool must not touch; the message is safe to show the model (no absolute paths)."""


class NotRegularFileError(ConfinementError):
    """A FIFO, socket, device or folder where a file is to be read: reading one could block forever."""


class FileTooLargeError(ConfinementError):
    """A regular file over the reader's size bound."""


class UnusablePathError(ConfinementError):
    """A path the system cannot use: a NUL byte, a symlink loop (or a chain of links longer than the
    system follows), a path or component over the length limits."""


NO_SUCH_FILE = "no such file"
LOOP = "that path is a symbolic link loop (or a chain of links longer than the system follows)"


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


def shown(rel: object, limit: int = 80) -> str:
    """A path as messages quote it: `repr` (control characters escaped), at most `limit` characters."""
    text = repr(rel)
    return text if len(text) <= limit else text[:limit - 2] + "…" + text[-1]


def refused_name(name: str) -> bool:
    """`.git` / `.autopatch-j` (any case: case-insensitive file systems map `.GIT` onto `.git`)."""
    return name.casefold() in REFUSED_NAMES


def refused_part(parts: tuple[str, ...]) -> str | None:
    return next((p for p in parts if refused_name(p)), None)


def check_text(rel: str, root: Path | None = None) -> None:
    """Refuse, as `UnusablePathError`, a path no system call could take: a NUL byte, text that is
    not a file name, a component over MAX_NAME_BYTES, or (joined to `root`) over MAX_PATH_BYTES."""
    if "\x00" in rel:
        raise UnusablePathError("a path with a NUL byte is refused")
    try:
        raw = os.fsencode(rel)
        base = len(os.fsencode(str(root))) + 1 if root is not None else 0
    except (UnicodeError, ValueError):
        raise UnusablePathError("that path is not a valid file name") from None
    if base + len(raw) > MAX_PATH_BYTES:
        raise UnusablePathError(f"that path is too long (the limit is {MAX_PATH_BYTES} bytes)")
    if any(len(part) > MAX_NAME_BYTES for part in raw.split(b"/")):
        raise UnusablePathError(f"a name in that path is too long (the limit is {MAX_NAME_BYTES} bytes)")


def _os_refusal(exc: OSError) -> UnusablePathError | None:
    if exc.errno == errno.ELOOP:
        return UnusablePathError(LOOP)
    if exc.errno == errno.ENAMETOOLONG:
        return UnusablePathError("that path is too long for the system")
    return None


def resolve_inside(path: Path) -> Path:
    """`path.resolve()` with the system's own view checked too (a chain of links the system would
    not follow, a loop anywhere in the path): `UnusablePathError` instead of RuntimeError, OSError or
    ValueError. A path that does not exist (yet) resolves as far as it can, as `resolve()` does."""
    try:
        target = path.resolve()
        os.stat(path)  # the system's own walk: ELOOP for a loop and for a chain over its link limit
    except RuntimeError:  # Python 3.11's "Symlink loop from ..."
        raise UnusablePathError(LOOP) from None
    except (FileNotFoundError, NotADirectoryError):
        return path.resolve()  # missing: resolved as far as it exists (no loop: that raised above)
    except OSError as exc:
        refusal = _os_refusal(exc)
        if refusal is not None:
            raise refusal from None
        if exc.errno in (errno.EACCES, errno.EPERM):  # a folder on the way is not searchable: the
            return path.resolve()  # reader says so when it opens the file
        raise UnusablePathError(f"that path cannot be used ({errno.errorcode.get(exc.errno or 0, 'error')})") from None
    except ValueError:
        raise UnusablePathError("that path is not a valid file name") from None
    return target


def confine(repo: Path, rel: str) -> Path:
    """The resolved path of `rel` inside `repo` (itself resolved), or `ConfinementError` (its
    `UnusablePathError` for a path the system cannot use). Never raises anything else."""
    if not isinstance(rel, str) or not rel.strip():
        raise ConfinementError("a repository-relative path is required")
    check_text(rel.strip(), repo)
    raw = PurePath(rel.strip())
    if raw.is_absolute():
        raise ConfinementError("absolute paths are refused; use a path relative to the repository")
    bad = refused_part(raw.parts)
    if bad:
        raise ConfinementError(f"{bad}/ is not readable by tools")
    target = resolve_inside(repo / raw)
    try:
        inside = target.relative_to(repo)
    except ValueError:
        raise ConfinementError("that path leaves the repository") from None
    bad = refused_part(inside.parts)
    if bad:
        raise ConfinementError(f"that path leads into {bad}/, which is not readable by tools")
    return target


def kind_of(path: Path) -> str | None:
    """"file", "dir", "other" (a FIFO, socket or device) or None (missing or unusable) — for a path
    `confine` returned; never raises, never opens it."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def read_confined(repo: Path, rel: str, max_bytes: int) -> tuple[Path, bytes]:
    """The resolved path and bytes of the regular file `rel` in `repo`, through `confine`; at most
    `max_bytes` (`FileTooLargeError` over it). Every refusal is a `ConfinementError` with a safe
    message: missing, not a regular file, unreadable, too large, outside the repository."""
    target = confine(repo, rel)
    try:
        return target, read_regular(target, max_bytes)
    except FileNotFoundError:
        raise ConfinementError(NO_SUCH_FILE) from None
    except PermissionError:
        raise ConfinementError("that file is not readable (permission denied)") from None
    except IsADirectoryError:
        raise NotRegularFileError("that path is a folder, not a file") from None
    except OSError as exc:
        refusal = _os_refusal(exc)
        if refusal is not None:
            raise refusal from None
        raise ConfinementError(f"that file cannot be read ({errno.errorcode.get(exc.errno or 0, 'error')})") from None


def allowed_entry(repo: Path, entry: Path) -> bool:
    """For walkers and listings: False for a refused name, and for a symlink whose target leaves
    the repository or leads into a refused folder."""
    if refused_name(entry.name):
        return False
    if not entry.is_symlink():
        return True
    try:
        inside = resolve_inside(entry).relative_to(repo)
    except (ValueError, ConfinementError):
        return False
    return refused_part(inside.parts) is None


def read_regular_head(path: Path | str, max_bytes: int, *, dir_fd: int | None = None,
                      stat_out: list[os.stat_result] | None = None) -> tuple[bytes, int]:
    """At most `max_bytes` from the start of the regular file `path`, and its size: a file over the
    bound is cut, never read whole (an instruction file may be huge). Opened like `read_regular`
    (non-blocking, checked with `fstat` before a byte is read) and, in addition, never through a
    symlink as its last component: pass a path `confine` resolved, so a link swapped in after the
    check is refused instead of followed. With `dir_fd`, `path` is a name in that folder (opened
    with `paths.open_dir`, so no component on the way is a link either); `stat_out` receives the
    opened file's `fstat`. Raises `NotRegularFileError` or `OSError`."""
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
             | getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if stat_out is not None:
            stat_out.append(st)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError("not a regular file (a pipe, socket, device or folder is not read)")
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(max_bytes)
    finally:
        if fd >= 0:
            os.close(fd)
    return data, max(st.st_size, len(data))
