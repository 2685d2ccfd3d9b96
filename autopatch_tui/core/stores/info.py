"""What a store says about itself, read without modifying it (read-only connection)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from autopatch_tui.core.identity.remote import normalize_remote_url
from autopatch_tui.core.identity.repo import read_origin_remote
from autopatch_tui.core.memory.health import inspect_store
from autopatch_tui.core.memory.readonly import open_readonly
from autopatch_tui.core.memory.sqlite import read_txn
from autopatch_tui.core.secrets import mask

MAX_SUBJECTS = 24
MAX_STATEMENTS = 8
MAX_STATEMENT_CHARS = 200


@dataclass(frozen=True)
class StoreInfo:
    db_path: Path
    name: str
    label: str | None
    root: str | None
    remote: str | None  # as recorded in the store
    fact_count: int
    retired_into: str | None
    aliases: tuple[str, ...] = ()
    subjects: tuple[str, ...] = field(default=())
    statements: tuple[str, ...] = field(default=())
    holds_something: bool = True  # a turn or an item (any status); an empty store is never listed

    @cached_property
    def root_readable(self) -> bool:
        return bool(self.root) and Path(self.root).is_dir()

    @cached_property
    def _live_remote(self) -> str:
        if not self.root_readable:
            return ""
        return normalize_remote_url(read_origin_remote(Path(self.root)))

    @cached_property
    def subject_terms(self) -> frozenset[str]:
        """The recall terms of the sampled subjects (for the scan's similarity ordering)."""
        from autopatch_tui.core.recall.terms import phrase_terms  # the scan's, not a command's

        return frozenset(t for subject in self.subjects for t in phrase_terms(subject))

    def live_remote(self) -> str:
        """The normalized origin remote read from the root's git config, when the root is readable here
        (read once per StoreInfo: a scan compares every pair)."""
        return self._live_remote


HOLDS_SOMETHING = "SELECT EXISTS (SELECT 1 FROM turns) OR EXISTS (SELECT 1 FROM memory_items)"


def holds_something(conn: sqlite3.Connection) -> bool:
    """Whether a store holds a turn or an item: one that holds neither (made by a `memory status`
    in some folder, or just cleared) is not listed, scanned nor registered until it does."""
    return bool(conn.execute(HOLDS_SOMETHING).fetchone()[0])


class StoreUnreadable(Exception):
    """The file is missing or degraded; `diagnostic` says why (safe text)."""

    def __init__(self, diagnostic: str) -> None:
        super().__init__(diagnostic)
        self.diagnostic = diagnostic


def read_store_name(db_path: Path) -> tuple[str, str | None]:
    """(store name, `retired_into`) of a healthy store: what the merge redirect needs, read in a
    few pages (never a count that grows with the store)."""
    if not os.path.isfile(db_path):
        raise StoreUnreadable("the store file does not exist or cannot be reached")
    health = inspect_store(db_path, then=lambda conn: conn.execute(
        "SELECT store_name, retired_into FROM memory_meta WHERE id = 1").fetchone())
    if not health.healthy:
        raise StoreUnreadable(health.diagnostic or "the store is not a healthy v4 database")
    meta = health.read  # the check found the row (the meta singleton is part of it)
    return meta["store_name"], meta["retired_into"]  # type: ignore[index]


def read_store_info(db_path: Path) -> StoreInfo:
    if not os.path.isfile(db_path):  # also False when a folder on the way cannot be searched
        raise StoreUnreadable("the store file does not exist or cannot be reached")
    health = inspect_store(db_path)
    if not health.healthy:
        raise StoreUnreadable(health.diagnostic or "the store is not a healthy v4 database")
    conn = open_readonly(db_path)
    try:
        with read_txn(conn):
            meta = conn.execute("SELECT * FROM memory_meta WHERE id = 1").fetchone()
            facts = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
            used = holds_something(conn)
            aliases = tuple(r[0] for r in conn.execute("SELECT alias FROM store_aliases ORDER BY alias"))
            rows = conn.execute(
                "SELECT subject, statement FROM memory_items WHERE status = 'active' AND kind != 'discussion_context'"
                " ORDER BY updated_at DESC, row_id DESC LIMIT ?", (MAX_SUBJECTS,)
            ).fetchall()
    except sqlite3.Error as exc:
        raise StoreUnreadable(f"the store could not be read ({type(exc).__name__})") from exc
    finally:
        conn.close()
    return StoreInfo(
        db_path=db_path, name=meta["store_name"], label=meta["label"], root=meta["root"], remote=meta["remote"],
        fact_count=facts, retired_into=meta["retired_into"], aliases=aliases,
        # merge evidence (shown, and sent to the merge judge): secrets masked before any cut (contracts §10)
        subjects=tuple(dict.fromkeys(mask(r["subject"]) for r in rows)),
        statements=tuple(mask(r["statement"])[:MAX_STATEMENT_CHARS] for r in rows[:MAX_STATEMENTS]),
        holds_something=used,
    )
