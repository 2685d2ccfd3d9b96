"""`ReviewService`: the one door to review marks and approval mode (contracts §8), held by the
`MemoryManager` as `manager.review`.

- the inbox: `items()` (oldest first), `count()`, `entry_detail()` (the kept revision a revised item
  is compared with);
- `keep(ids)` / `keep_all()`: validate every ID first (an unknown or inactive one marks nothing),
  then one locked read-modify-write of the marks file;
- approval mode: `approval` (`auto` | `review`, from the settings, switchable at run time without a
  restart: every request asks for its policy when it starts), `recallable()` — in `review` mode the
  kept revision IDs, the only ones recall may return — and `policy(intent, thread)`, the request's
  `RecallPolicy` with that allow-list, taken once when the request starts."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import AutopatchError, MemoryNotFoundError, UsageError
from autopatch_tui.core.events import MemoryChanged
from autopatch_tui.core.memory import review, review_marks
from autopatch_tui.core.memory.items import summary_from_row
from autopatch_tui.core.memory.models import ItemSummary
from autopatch_tui.core.memory.pages import Page, review_page
from autopatch_tui.core.memory.sqlite import read_txn
from autopatch_tui.core.terminal_text import one_line

if TYPE_CHECKING:
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.recall.query import RecallPolicy

log = logging.getLogger(__name__)
APPROVAL_MODES = ("auto", "review")
APPROVAL_ENV = "AUTOPATCH_MEMORY_APPROVAL"
_UNSEEN = object()


class RevisionChangedError(MemoryNotFoundError):
    """A keep of the revision the user saw, when the item has been revised since: nothing marked."""

    def __init__(self, logical_id: str, revision: int, seen: int) -> None:
        super().__init__(f"Memory item {one_line(logical_id)} is now at revision {revision}, not revision {seen}; "
                         "nothing was marked")
        self.logical_id, self.revision = logical_id, revision


@dataclass(frozen=True)
class KeptRevision:
    """The revision a revised item is compared with (the kept one, else the one it replaced)."""

    summary: ItemSummary
    revision: int
    was_kept: bool
    content: str


class ReviewService:
    def __init__(self, manager: MemoryManager) -> None:
        self._mgr = manager
        self._approval = manager.settings.memory_approval
        self._lock = threading.Lock()
        self._seen_token: object = _UNSEEN  # the marks file as this process last read or wrote it

    # --- approval mode ------------------------------------------------------------------------
    @property
    def approval(self) -> str:
        return self._approval

    def set_approval(self, mode: str, *, persist: bool = True) -> bool:
        """Switch approval mode for every request from now on (no restart). With `persist`, the
        setting is also written to config.toml. Returns whether the environment variable overrides
        the file at the next start."""
        mode = mode.strip().lower()
        if mode not in APPROVAL_MODES:
            raise UsageError(f"unknown approval mode {mode!r}; expected auto or review")
        self._approval = mode
        config = self._mgr.settings.config_file
        if persist and config is not None:
            from autopatch_tui.core.settings import save_setting

            save_setting(config, "memory_approval", mode)
        self._mgr.events.emit(MemoryChanged("approval"))
        env = os.environ.get(APPROVAL_ENV, "").strip().lower()
        return bool(env) and env != mode

    # --- marks ----------------------------------------------------------------------------------
    def _stamp(self, conn: sqlite3.Connection) -> review_marks.StoreStamp:
        return review_marks.store_stamp(conn)

    def kept(self, conn: sqlite3.Connection | None = None) -> frozenset[str]:
        conn = conn or self._mgr.store.read_conn()
        return review_marks.load_kept(self._mgr.paths, self._stamp(conn))

    def count(self) -> int:
        conn = self._mgr.store.read_conn()
        with read_txn(conn):
            return review.count_new(conn, self.kept(conn))

    def items(self, *, limit: int | None = None, offset: int = 0) -> list[review.ReviewEntry]:
        conn = self._mgr.store.read_conn()
        with read_txn(conn):
            return review.awaiting(conn, self.kept(conn), limit=limit, offset=offset)

    def page(self, *, limit: int, after: str | None = None) -> tuple[list[review.ReviewEntry], Page]:
        """One page of the inbox (core/memory/pages.py): its entries and the page (cursor, more)."""
        conn = self._mgr.store.read_conn()
        with read_txn(conn):
            page = review_page(conn, review.kept_json(self.kept(conn)), limit=limit, after=after)
            return review.entries_of(conn, page.rows), page

    def all_entries(self, chunk: int = 1000) -> Iterator[review.ReviewEntry]:
        """The whole inbox in page order, `chunk` rows at a time inside one snapshot: `memory review
        --json` at any size in constant memory."""
        conn = self._mgr.store.read_conn()
        with read_txn(conn):
            kept = review.kept_json(self.kept(conn))
            after: str | None = None
            while True:
                page = review_page(conn, kept, limit=chunk, after=after, count_more=False)
                yield from review.entries_of(conn, page.rows)
                if page.next is None:
                    return
                after = page.next

    def review_state(self, item_ids: list[str]) -> dict[str, str]:
        """`new` | `kept` of each active item (logical IDs), for `memory list --json`."""
        conn = self._mgr.store.read_conn()
        with read_txn(conn):
            kept = self.kept(conn)
            rows = conn.execute("SELECT m.logical_id, m.id FROM json_each(?) j CROSS JOIN memory_items m"
                                " ON m.logical_id = j.value AND m.status = 'active'",
                                (review.kept_json(frozenset(item_ids)),)).fetchall()
        return {r[0]: "kept" if r[1] in kept else "new" for r in rows}

    def base_of(self, item_id: str) -> KeptRevision | None:
        """What a revised item is compared with; None for an item that replaced nothing."""
        conn = self._mgr.store.read_conn()
        with read_txn(conn):
            row = review.active_revision(conn, item_id)
            base, was_kept = review.diff_base(conn, row, self.kept(conn))
        if base is None:
            return None
        return KeptRevision(summary_from_row(base), base["revision"], was_kept, base["content"])

    def keep(self, item_ids: list[str], *, revisions: dict[str, int] | None = None) -> list[str]:
        """Mark the current revision of each item kept. Every ID is checked first: an unknown or
        inactive one (or, with `revisions` — the revision the user saw, by the ID as given or by
        the item's logical ID — one revised since it was shown) marks nothing. Returns the logical
        IDs, in the order given."""
        if not item_ids:
            raise UsageError("name at least one item ID, or use --all")
        self._mgr.require_healthy()
        conn = self._mgr.store.conn()
        with read_txn(conn):
            rows = [review.active_revision(conn, i) for i in item_ids]
            stamp = self._stamp(conn)
        if revisions:
            for given, r in zip(item_ids, rows):
                expected = revisions.get(given, revisions.get(r["logical_id"]))
                if expected is not None and expected != r["revision"]:
                    raise RevisionChangedError(r["logical_id"], r["revision"], expected)
        ids = frozenset(r["id"] for r in rows)
        self._write(conn, stamp, lambda kept: kept | ids)
        return list(dict.fromkeys(r["logical_id"] for r in rows))

    def keep_all(self, shown: list[tuple[str, int]] | None = None) -> list[str]:
        """Keep every item awaiting review now, or — with `shown`, (logical ID, revision) pairs the
        user saw — exactly those that are still that revision. Returns the logical IDs kept."""
        self._mgr.require_healthy()
        conn = self._mgr.store.conn()
        with read_txn(conn):
            stamp = self._stamp(conn)
            entries = review.awaiting(conn, review_marks.load_kept(self._mgr.paths, stamp))
        if shown is not None:
            wanted = set(shown)
            entries = [e for e in entries if (e.summary.id, e.revision) in wanted]
        ids = frozenset(e.revision_id for e in entries)
        if ids:
            self._write(conn, stamp, lambda kept: kept | ids)
        return [e.summary.id for e in entries]

    def _write(self, conn: sqlite3.Connection, stamp: review_marks.StoreStamp, change) -> None:
        def apply(kept: frozenset[str]) -> frozenset[str]:
            with read_txn(conn):
                return review.prune(conn, change(kept))

        with self._lock:
            review_marks.update_kept(self._mgr.paths, stamp, apply)
            self._seen_token = review_marks.file_token(self._mgr.paths)
        self._mgr.events.emit(MemoryChanged("review"))

    def remember_marks(self) -> None:
        """Take the marks file as it is now as seen (an inbox about to read them): only a change
        after this is an outside keep for `notice_outside_keeps`."""
        token = review_marks.file_token(self._mgr.paths)
        with self._lock:
            self._seen_token = token

    def notice_outside_keeps(self) -> bool:
        """Whether the marks file changed since this process last looked at or wrote it — a keep in
        another process (`memory review keep` in a shell) or a file moved away. If so,
        `MemoryChanged("review")` is emitted, so an open inbox and the status bar follow. One
        `lstat`; the first call only remembers the file."""
        token = review_marks.file_token(self._mgr.paths)
        with self._lock:
            if token == self._seen_token:
                return False
            first = self._seen_token is _UNSEEN
            self._seen_token = token
        if first:
            return False
        self._mgr.events.emit(MemoryChanged("review"))
        return True

    # --- recall ---------------------------------------------------------------------------------
    def recallable(self, conn: sqlite3.Connection) -> frozenset[str] | None:
        """What recall may return now: None in `auto` mode (everything); in `review` mode the kept
        revision IDs — an allow-list, so a revision written after this call is never among them.
        Marks that cannot be read allow nothing (fail closed)."""
        if self._approval != "review":
            return None
        try:
            return review_marks.load_kept(self._mgr.paths, self._stamp(conn))
        except (AutopatchError, OSError) as exc:  # fail closed: nothing unreviewed is recalled
            log.warning("review marks unreadable; approval mode hides every item: %s", type(exc).__name__)
            return frozenset()

    def policy(self, intent: str, thread_id: str | None, conn: sqlite3.Connection | None = None) -> RecallPolicy:
        """The request's immutable policy; in `review` mode with the kept revisions as they are when
        the request starts (anything written or revised while it runs stays hidden). (Recall is
        imported here, by the requests that recall: `memory status` counts the inbox without it.)"""
        from autopatch_tui.core.recall.query import policy_for

        base = policy_for(intent, thread_id)
        if self._approval != "review":
            return base
        return replace(base, kept=self.recallable(conn or self._mgr.store.read_conn()))
