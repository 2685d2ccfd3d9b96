"""`memory promote`: reviewed Memory items into the marked section of an instruction file
(contracts §9), for the CLI and the Memory browser alike.

`plan_promotion` reads the store and the file and computes the new text and its unified diff;
nothing is written. `write_confirmed` writes a plan a person looked at for a while (the browser's
dialog): only when planning it again now gives the same diff. `write_promotion` writes a plan: atomically (a temp file in the same folder,
then a rename), never through a link (every folder below the repository is opened without
following one, and the file itself must not be a link), with the file's mode kept, and only when
the file is still exactly what the plan read.

The section's bullets: a promoted item's bullet is (re)written from its current revision; a bullet
whose item this store knows as no longer active (forgotten, superseded) is removed; a bullet whose
item this store does not know is kept — `AGENTS.md` is shared through the repository while Memory
is each person's own, so a teammate's promoted items must survive your promote."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from autopatch_tui.core.confine import ConfinementError, read_regular_head, refused_part
from autopatch_tui.core.errors import AutopatchError, UsageError
from autopatch_tui.core.instructions.section import Bullet, one_line, render_bullet, section_bullets, splice
from autopatch_tui.core.memory.items import resolve_logical_id
from autopatch_tui.core.paths import find_symlink, open_dir, replace_with
from autopatch_tui.core.secrets import mask

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

AGENTS = "AGENTS.md"
MAX_FILE_BYTES = 1024 * 1024  # an instruction file larger than this is not rewritten
MAX_ITEMS = 500


class PromoteError(AutopatchError):
    """The promotion cannot be done as asked; nothing was written."""


_Stamp = tuple[int, int, int, int]  # (mtime_ns, size, inode, device)


@dataclass(frozen=True)
class PromotePlan:
    path: Path  # the file, absolute (inside the resolved repository)
    shown: str  # repository-relative, as the user sees it
    old_text: str | None  # None: the file does not exist yet
    new_text: str
    promoted: tuple[str, ...]  # logical IDs written (or rewritten)
    removed: tuple[str, ...]  # logical IDs whose bullet goes (no longer active in this store)
    stamp: _Stamp | None  # of the file read (None: it did not exist)
    mode: int | None  # its permission bits, kept by the write

    @property
    def changed(self) -> bool:
        return (self.old_text or "") != self.new_text or (self.old_text is None and bool(self.new_text))

    @property
    def diff(self) -> str:
        """The unified diff of the change ("" when nothing changes)."""
        if not self.changed:
            return ""
        import difflib  # only when a diff is shown

        old = (self.old_text or "").splitlines()
        lines = difflib.unified_diff(old, self.new_text.splitlines(), lineterm="",
                                     fromfile="/dev/null" if self.old_text is None else f"a/{self.shown}",
                                     tofile=f"b/{self.shown}")
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the target


def target_path(repo: Path, to: str | None) -> tuple[Path, str]:
    """(absolute path, repository-relative path) of the file to write: the root's `AGENTS.md`, or
    `to` — relative to the repository root, or absolute inside it. `UsageError` (rc 2) for a path
    outside the repository, into `.git/` or `.autopatch-j/`, a folder, or a missing folder."""
    root = repo.resolve()
    if to is None:
        return root / AGENTS, AGENTS
    text = to.strip()
    if not text or "\x00" in text:
        raise UsageError("--to needs a file path inside the repository")
    given = Path(text).expanduser()
    lexical = Path(os.path.normpath(given if given.is_absolute() else root / given))
    rel = None
    for base in (root, repo):
        try:
            rel = lexical.relative_to(base)
            break
        except ValueError:
            continue
    if rel is None or not rel.parts or rel.parts[0] == "..":
        raise UsageError(f"--to is outside the repository ({root}): {text[:200]}")
    if refused_part(rel.parts):
        raise UsageError(f"--to is refused: {text[:200]} (never under .git/ or .autopatch-j/)")
    try:
        folder = (root / rel.parent).resolve()
        folder.relative_to(root)
    except (OSError, RuntimeError, ValueError):
        raise UsageError(f"--to's folder is not inside the repository (a link leads out of it, or loops): "
                         f"{text[:200]}") from None
    path = root / rel
    try:
        if not stat.S_ISDIR(os.stat(folder).st_mode):
            raise UsageError(f"--to's folder is not a folder: {text[:200]}")
        os.lstat(path)
    except FileNotFoundError:
        if not folder.is_dir():
            raise UsageError(f"--to's folder does not exist in the repository: {text[:200]}") from None
    except OSError as exc:  # a name too long for the file system, a loop
        raise UsageError(f"--to cannot be used ({_why(exc)}): {text[:200]}") from None
    if path.is_dir() and not path.is_symlink():
        raise UsageError(f"--to is a folder; name the file to write, e.g. {rel.as_posix()}/{AGENTS}")
    return path, rel.as_posix()


def _why(exc: OSError) -> str:
    """An OS error in plain words ("Permission denied", "Read-only file system")."""
    return os.strerror(exc.errno) if exc.errno else "the system refused it"


def _stamp(st: os.stat_result) -> _Stamp:
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev


def _read_only(st: os.stat_result, path: Path) -> bool:
    """No write bit at all, or no write permission for this user (root included: a 0444 file is
    somebody's decision that it must not change)."""
    return not st.st_mode & 0o222 or not os.access(path, os.W_OK)


def _read_target(root: Path, path: Path, shown: str) -> tuple[str | None, _Stamp | None, int | None]:
    """(text, stamp, mode) of the file, (None, None, None) when it does not exist."""
    link = find_symlink(root, path.parent)
    if link is not None:
        raise PromoteError(f"{shown}'s folder is reached through a symbolic link; promote never writes through one")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, None, None
    if stat.S_ISLNK(st.st_mode):
        raise PromoteError(f"{shown} is a symbolic link; promote never writes through a link "
                           "(pass --to the file it points to)")
    if not stat.S_ISREG(st.st_mode):
        raise PromoteError(f"{shown} is not a regular file")
    if _read_only(st, path):
        raise PromoteError(f"{shown} is read-only; nothing was changed")
    try:
        data, size = read_regular_head(path, MAX_FILE_BYTES)
    except ConfinementError as exc:
        raise PromoteError(f"{shown} cannot be read ({exc})") from None
    except OSError as exc:
        raise PromoteError(f"{shown} cannot be read ({_why(exc)})") from None
    if size > len(data):
        raise PromoteError(f"{shown} is larger than {MAX_FILE_BYTES // 1024} KiB; it is not rewritten")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PromoteError(f"{shown} is not UTF-8 text; nothing was changed") from None
    return text, _stamp(st), stat.S_IMODE(st.st_mode)


# --------------------------------------------------------------------------- the items


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def _bullet(conn: sqlite3.Connection, raw_id: str) -> Bullet:
    """The bullet of one active item: its statement, the user's first source quote of its current
    revision and that turn's date (the item's date when no quote of the user is recorded)."""
    logical = resolve_logical_id(conn, raw_id)
    row = conn.execute("SELECT row_id, status, statement, updated_at FROM memory_items WHERE logical_id = ?"
                       " ORDER BY revision DESC LIMIT 1", (logical,)).fetchone()
    if row["status"] != "active":
        raise PromoteError(f"Memory item {logical} is {row['status']}; only active items can be promoted")
    source = conn.execute(
        "SELECT s.quote, t.created_at FROM item_candidates ic"
        " JOIN candidate_sources s ON s.candidate_id = ic.candidate_id"
        " JOIN memory_candidates c ON c.id = ic.candidate_id"
        " LEFT JOIN turns t ON t.id = s.turn_id"
        " WHERE ic.item_row_id = ? AND s.role = 'user' ORDER BY c.created_at, s.candidate_id, s.ordinal LIMIT 1",
        (row["row_id"],)).fetchone()
    quote = source["quote"] if source is not None else None
    when = source["created_at"] if source is not None and source["created_at"] is not None else row["updated_at"]
    statement = mask(row["statement"])  # an older item may hold a secret: a promote never writes one (§10)
    lines = render_bullet(logical, statement, mask(quote) if quote is not None else None, _date(when))
    return Bullet(logical, one_line(statement), lines)


def _gone(conn: sqlite3.Connection, item_id: str) -> bool:
    """This store knows the item and it is no longer active (an unknown ID is somebody else's)."""
    row = conn.execute("SELECT status FROM memory_items WHERE logical_id = ? ORDER BY revision DESC LIMIT 1",
                       (item_id,)).fetchone()
    return row is not None and row["status"] != "active"


# --------------------------------------------------------------------------- plan and write


def plan_promotion(manager: MemoryManager, ids: Sequence[str], *, to: str | None = None) -> PromotePlan:
    """What promoting `ids` into the file would change; nothing is written. Raises `UsageError`
    (a bad `--to`, no ID), `MemoryNotFoundError` / `PromoteError` (an unknown or inactive item, a
    file that must not be rewritten)."""
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    if not wanted:
        raise UsageError("memory promote needs at least one item ID")
    if len(wanted) > MAX_ITEMS:
        raise UsageError(f"memory promote takes at most {MAX_ITEMS} items at once")
    manager.require_readable()
    path, shown = target_path(manager.repo, to)
    root = manager.repo.resolve()
    old, stamp, mode = _read_target(root, path, shown)
    conn = manager.store.read_conn()
    fresh = [_bullet(conn, i) for i in wanted]  # every ID checked before anything else
    by_id = {b.item_id: b for b in fresh}
    try:
        existing = section_bullets(old or "")
    except AutopatchError as exc:
        raise PromoteError(f"{shown}: {exc}; nothing was changed") from None
    bullets: list[Bullet] = []
    removed: list[str] = []
    for b in existing:
        if b.item_id in by_id:
            bullets.append(by_id.pop(b.item_id))
        elif _gone(conn, b.item_id):
            removed.append(b.item_id)
        else:
            bullets.append(b)
    bullets += [b for b in fresh if b.item_id in by_id]
    new = splice(old or "", bullets)
    return PromotePlan(path, shown, old, new, tuple(b.item_id for b in fresh), tuple(removed), stamp, mode)


def _check_unchanged(dfd: int, name: str, plan: PromotePlan) -> None:
    """The file is still what the plan read (or still absent), and still writable."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if (None if st is None else _stamp(st)) != plan.stamp:
        raise PromoteError(f"{plan.shown} changed since the diff was made; nothing was written (promote again)")
    if st is not None and (not st.st_mode & 0o222 or stat.S_IMODE(st.st_mode) != plan.mode):
        raise PromoteError(f"{plan.shown} is read-only (or its mode changed); nothing was changed")


def write_promotion(manager: MemoryManager, plan: PromotePlan) -> bool:
    """Write the plan (False when it changes nothing). `PromoteError` when the file changed since
    the plan read it, became a link or read-only, or its folder cannot be written: nothing changed."""
    if not plan.changed:
        return False
    root = manager.repo.resolve()
    try:
        dfd = open_dir(root, plan.path.parent, create=False)
    except AutopatchError as exc:  # a link on the way: never followed
        raise PromoteError(f"{plan.shown} cannot be written: {exc}") from None
    except OSError as exc:
        raise PromoteError(f"{plan.shown}'s folder cannot be opened ({_why(exc)})") from None
    name = plan.path.name
    tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        _check_unchanged(dfd, name, plan)
        # a shared file, not a private one: a new file gets the usual mode (0666 less the umask), an
        # existing one keeps its own
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dfd)
        replace_with(fd, plan.new_text.encode("utf-8"), tmp_name=tmp, tmp_dir_fd=dfd, name=name, dir_fd=dfd,
                     mode=plan.mode)
    except OSError as exc:
        raise PromoteError(f"{plan.shown} cannot be written ({_why(exc)}); nothing was changed") from None
    finally:
        os.close(dfd)
    return True


def write_confirmed(manager: MemoryManager, plan: PromotePlan) -> bool:
    """Write a plan whose diff a person confirmed, made again first: an item revised, forgotten or
    merged meanwhile, or the file edited, raises `PromoteError` (or the error planning it now
    raises) and nothing is written — what is written is always the diff that was shown."""
    now = plan_promotion(manager, plan.promoted, to=plan.shown)
    if (now.old_text, now.new_text, now.removed) != (plan.old_text, plan.new_text, plan.removed):
        raise PromoteError(f"the items or {plan.shown} changed since the diff was shown; nothing was written "
                           "(promote again to see the new diff)")
    return write_promotion(manager, plan)
