"""`memory promote`: reviewed Memory items into the marked section of an instruction file
(contracts §9), for the CLI and the Memory browser alike.

`plan_promotion` reads the store and the file and computes the new text and its unified diff;
nothing is written. `promote_now` (`--yes`) plans and writes under the promote lock;
`write_confirmed` writes a plan a person looked at for a while (the browser's dialog): only when
planning it again now, under the lock, gives the same diff; `write_promotion` writes a plan only
while the file is still exactly what the plan read. The write itself (`promote_write`): under one
lock, atomic, a hand edit during it never lost, the temporary file in `.autopatch-j/tmp/`, never
through a link, the file's mode kept. A written item that still awaited review is kept (§8): the
diff the user approved is its review.

The default target is the root's `AGENTS.md`, or its `CLAUDE.md` when that is the file the loader
reads (no `AGENTS.md` with text beside it). A file the loader would not read (NUL bytes, not UTF-8)
is refused, and so is a new text whose section the loader would not find (an unclosed fence).

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
from autopatch_tui.core.instructions.promote_write import PromoteError, Stamp, promote_lock, stamp_of, why, write_text
from autopatch_tui.core.instructions.section import (
    Bullet,
    SectionError,
    one_line,
    render_bullet,
    section_bullets,
    splice,
    visible,
)
from autopatch_tui.core.memory.items import resolve_logical_id
from autopatch_tui.core.paths import find_symlink
from autopatch_tui.core.secrets import mask

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager

AGENTS = "AGENTS.md"
CLAUDE = "CLAUDE.md"
MAX_FILE_BYTES = 1024 * 1024  # an instruction file larger than this is not rewritten
MAX_ITEMS = 500


@dataclass(frozen=True)
class PromotePlan:
    path: Path  # the file, absolute (inside the resolved repository)
    shown: str  # repository-relative, as the user sees it
    old_text: str | None  # None: the file does not exist yet
    new_text: str
    promoted: tuple[str, ...]  # logical IDs written (or rewritten)
    removed: tuple[str, ...]  # logical IDs whose bullet goes (no longer active in this store)
    stamp: Stamp | None  # of the file read (None: it did not exist)
    mode: int | None  # its permission bits, kept by the write
    new_items: tuple[tuple[str, int], ...] = ()  # (logical ID, revision) of promoted items not kept yet (§8)

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
        name = default_target(root)
        return root / name, name
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


_why = why


def default_target(root: Path) -> str:
    """The root's file promote writes by default: `AGENTS.md`, or the root's `CLAUDE.md` when it is
    the file the loader reads — the root has it and no `AGENTS.md` with any text (contracts §9).
    Creating an `AGENTS.md` there would silently stop the `CLAUDE.md` in use from being read."""
    if not os.path.lexists(root / CLAUDE):
        return AGENTS
    try:
        st = os.lstat(root / AGENTS)
    except FileNotFoundError:
        return CLAUDE
    except OSError:
        return AGENTS
    if stat.S_ISREG(st.st_mode) and st.st_size <= 4096:
        try:
            data, _ = read_regular_head(root / AGENTS, 4096)
        except OSError:
            return AGENTS
        if not data.strip():
            return CLAUDE  # an empty AGENTS.md: the loader passes over it to CLAUDE.md
    return AGENTS


def loader_reads(rel: str, root: Path) -> bool:
    """Does the loader read the file `rel` (repository-relative) as an instruction file? An
    `AGENTS.md` in any folder, or the root's `CLAUDE.md` when it is the root's file."""
    name = rel.rpartition("/")[2]
    if name == AGENTS:
        return True
    return rel == CLAUDE and default_target(root) == CLAUDE


def _read_only(st: os.stat_result, path: Path) -> bool:
    """No write bit at all, or no write permission for this user (root included: a 0444 file is
    somebody's decision that it must not change)."""
    return not st.st_mode & 0o222 or not os.access(path, os.W_OK)


def _read_target(root: Path, path: Path, shown: str) -> tuple[str | None, Stamp | None, int | None]:
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
    if "\x00" in text:  # the loader skips such a file: a promotion there would never be read
        raise PromoteError(f"{shown} holds NUL bytes, so it is never read as an instruction file; nothing was "
                           "changed")
    return text, stamp_of(st), stat.S_IMODE(st.st_mode)


# --------------------------------------------------------------------------- the items


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def _bullet(conn: sqlite3.Connection, raw_id: str) -> tuple[Bullet, int]:
    """The bullet of one active item — its statement, the user's first source quote of its current
    revision and that turn's date (the item's date when no quote of the user is recorded) — and
    that revision's number."""
    logical = resolve_logical_id(conn, raw_id)
    row = conn.execute("SELECT row_id, revision, status, statement, updated_at FROM memory_items"
                       " WHERE logical_id = ? ORDER BY revision DESC LIMIT 1", (logical,)).fetchone()
    if row["status"] != "active":
        raise PromoteError(f"Memory item {visible(logical)} is {row['status']}; only active items can be promoted")
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
    try:
        lines = render_bullet(logical, statement, mask(quote) if quote is not None else None, _date(when))
    except SectionError as exc:
        shown = visible(logical[:80]) + ("…" if len(logical) > 80 else "")
        raise PromoteError(f"Memory item {shown} cannot be promoted: {exc}") from None
    return Bullet(logical, one_line(statement), lines), row["revision"]


def _gone(conn: sqlite3.Connection, item_id: str) -> bool:
    """This store knows the item and it is no longer active (an unknown ID is somebody else's)."""
    row = conn.execute("SELECT status FROM memory_items WHERE logical_id = ? ORDER BY revision DESC LIMIT 1",
                       (item_id,)).fetchone()
    return row is not None and row["status"] != "active"


# --------------------------------------------------------------------------- plan and write


def plan_promotion(manager: MemoryManager, ids: Sequence[str], *, to: str | None = None,
                   prune: bool = False) -> PromotePlan:
    """What promoting `ids` into the file would change; nothing is written. With `prune`, no ID is
    needed: the bullets of items this store knows as no longer active go. Raises `UsageError` (a
    bad `--to`, no ID), `MemoryNotFoundError` / `PromoteError` (an unknown or inactive item, a file
    that must not be rewritten)."""
    wanted = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
    if not wanted and not prune:
        raise UsageError("memory promote needs at least one item ID (or --prune)")
    if len(wanted) > MAX_ITEMS:
        raise UsageError(f"memory promote takes at most {MAX_ITEMS} items at once")
    manager.require_readable()
    path, shown = target_path(manager.repo, to)
    root = manager.repo.resolve()
    old, stamp, mode = _read_target(root, path, shown)
    conn = manager.store.read_conn()
    fresh = [_bullet(conn, i) for i in wanted]  # every ID checked before anything else
    by_id = {b.item_id: b for b, _ in fresh}
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
    bullets += [b for b, _ in fresh if b.item_id in by_id]
    new = splice(old or "", bullets)
    _check_readable(new, bullets, shown)
    promoted = tuple(b.item_id for b, _ in fresh)
    return PromotePlan(path, shown, old, new, promoted, tuple(removed), stamp, mode,
                       _not_kept(manager, [(b.item_id, rev) for b, rev in fresh]))


def _check_readable(new: str, bullets: Sequence[Bullet], shown: str) -> None:
    """The new text is one the loader reads, with every bullet in its section: never write a
    promotion nobody would see (a section swallowed by an unclosed code fence)."""
    try:
        found = [b.item_id for b in section_bullets(new)]
    except SectionError:
        found = []
    if found != [b.item_id for b in bullets]:
        raise PromoteError(f"{shown}: the promoted section would not be read as written (is a code fence left "
                           "open before it?); nothing was changed")


def _not_kept(manager: MemoryManager, items: list[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """The promoted items still awaiting review (§8): promoting them keeps them, since the diff the
    user approves shows their words (and in review mode they would otherwise be in every request
    through the file while the inbox still calls them new)."""
    if not items:
        return ()
    try:
        state = manager.review.review_state([i for i, _ in items])
    except AutopatchError:  # the marks cannot be read: nothing is kept by promote
        return ()
    return tuple((i, rev) for i, rev in items if state.get(i) == "new")


@dataclass(frozen=True)
class PromoteResult:
    plan: PromotePlan  # the plan written (made under the lock)
    written: bool
    kept: tuple[str, ...] = ()  # items the write also marked kept
    keep_problem: str = ""  # why marking them kept failed (the file was written)


def write_promotion(manager: MemoryManager, plan: PromotePlan) -> bool:
    """Write the plan (False when it changes nothing), under the promote lock. `PromoteError` when
    the file changed since the plan read it (also by a hand edit during the write), became a link
    or read-only, or its folder cannot be written: nothing changed."""
    if not plan.changed:
        return False
    root = manager.repo.resolve()
    with promote_lock(root):
        _write(root, plan)
    return True


def _write(root: Path, plan: PromotePlan) -> None:
    from autopatch_tui.core.repair.patch_files import sweep

    sweep(root)  # what a killed promote (or patch write) left in .autopatch-j/tmp/
    write_text(root, plan.path, plan.shown, plan.new_text, plan.stamp, plan.mode)


def _keep(manager: MemoryManager, plan: PromotePlan, *, written: bool = True) -> PromoteResult:
    """Mark the promoted items that awaited review kept: the user approved their words in the diff
    (or, with nothing to write, asked with --yes for words the file already holds)."""
    if not plan.new_items:
        return PromoteResult(plan, written)
    try:
        kept = manager.review.keep([i for i, _ in plan.new_items], revisions=dict(plan.new_items))
    except AutopatchError as exc:
        return PromoteResult(plan, written, (), f"the promoted items were not marked kept ({exc})")
    return PromoteResult(plan, written, tuple(kept))


def promote_now(manager: MemoryManager, ids: Sequence[str], *, to: str | None = None,
                prune: bool = False) -> PromoteResult:
    """`memory promote --yes`: plan and write under the promote lock, so a promote running at the
    same time is waited for and its bullets are in the text planned here."""
    root = manager.repo.resolve()
    with promote_lock(root):
        plan = plan_promotion(manager, ids, to=to, prune=prune)
        if not plan.changed:
            return _keep(manager, plan, written=False)
        _write(root, plan)
        return _keep(manager, plan)


def write_confirmed(manager: MemoryManager, plan: PromotePlan) -> PromoteResult:
    """Write a plan whose diff a person confirmed, made again under the promote lock first: an item
    revised, forgotten or merged meanwhile, or the file edited (by hand or by another promote),
    raises `PromoteError` (or the error planning it now raises) and nothing is written — what is
    written is always the diff that was shown."""
    root = manager.repo.resolve()
    with promote_lock(root):
        now = plan_promotion(manager, plan.promoted, to=plan.shown)
        if (now.old_text, now.new_text, now.removed) != (plan.old_text, plan.new_text, plan.removed):
            raise PromoteError(f"the items or {plan.shown} changed since the diff was shown; nothing was written "
                               "(promote again to see the new diff)")
        if not now.changed:
            return PromoteResult(now, False)
        _write(root, now)
        return _keep(manager, now)


def files_holding(repo: Path, item_id: str) -> list[str]:
    """The root's instruction files (`AGENTS.md`, `CLAUDE.md`) whose promoted section holds a bullet
    of `item_id`: after `forget`, that bullet stays until a promote removes it (the file is shared
    through the repository; Memory never edits it behind the user's back)."""
    from autopatch_tui.core.instructions.section import promoted_statements

    root = repo.resolve()
    found = []
    for name in (AGENTS, CLAUDE):
        try:
            text, _, _ = _read_target(root, root / name, name)
        except (AutopatchError, OSError):
            continue
        if text is not None and item_id in promoted_statements(text):
            found.append(name)
    return found


def forget_note(repo: Path, item_id: str) -> str:
    """What `forget` says about a forgotten item's promoted bullets ("" when no root file holds one):
    the bullet remains, and how to remove it."""
    names = files_holding(repo, item_id)
    if not names:
        return ""
    where = " and ".join(names)
    how = f"`autopatch-tui memory promote --prune --to {names[0]} --yes` removes it"
    return visible(f"Its promoted bullet in {where} remains and still applies to every request (the file is the "
                   f"team's; Memory never edits it unasked): {how}, as does the next promote to that file; or "
                   "delete its lines by hand.")
