"""The per-user registry of known project stores: `$AUTOPATCH_HOME/registry.db` (SQLite, WAL), so
several processes can register stores at once. It caches what each store says about itself; the
store's own `memory_meta` stays the source of truth for its label, root and aliases."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.errors import SymlinkRefusedError, UsageError
from autopatch_tui.core.memory.sqlite import enable_wal, open_readwrite, opened_file, write_txn
from autopatch_tui.core.paths import create_private_file, find_symlink

REGISTRY_FILE = "registry.db"
SEEN_REFRESH_SECONDS = 24 * 3600.0  # `seen_at` is refreshed at most once a day by a repeat open
DDL = (
    """CREATE TABLE IF NOT EXISTS stores (
    name TEXT PRIMARY KEY,
    db_path TEXT NOT NULL,
    root TEXT,
    remote TEXT,
    label TEXT,
    retired_into TEXT,
    added_at REAL NOT NULL,
    seen_at REAL NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS stores_db_path ON stores(db_path)",
    """CREATE TABLE IF NOT EXISTS aliases (
    alias TEXT PRIMARY KEY,
    holder TEXT NOT NULL
)""",
)


@dataclass(frozen=True)
class StoreEntry:
    name: str
    db_path: str
    root: str | None
    remote: str | None
    label: str | None
    retired_into: str | None

    @property
    def retired(self) -> bool:
        return self.retired_into is not None


class Registry:
    def __init__(self, home: Path) -> None:
        self.path = home / REGISTRY_FILE
        self._refuse_links(home)
        create_private_file(home, self.path)  # 0600 (SQLite would create it 0644); -wal/-shm copy its mode
        self._conn = open_readwrite(self.path)
        try:
            self._refuse_links(home)
            if opened_file(self._conn) != os.path.realpath(self.path):
                raise SymlinkRefusedError(f"{self.path} changed while it was opened; it is never used through a link",
                                          self.path)
        except BaseException:
            self._conn.close()
            raise
        have = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
        if not {"stores", "stores_db_path", "aliases"} <= have:  # a new registry: no write lock otherwise
            with write_txn(self._conn):
                for stmt in DDL:
                    self._conn.execute(stmt)
        enable_wal(self._conn)

    def _refuse_links(self, home: Path) -> None:
        for p in (self.path, *(self.path.with_name(self.path.name + s) for s in ("-wal", "-shm", "-journal"))):
            link = find_symlink(home, p)
            if link is not None:
                raise SymlinkRefusedError(f"{link} is a symbolic link; the store registry is never used through a link",
                                          link)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def upsert(self, *, name: str, db_path: Path, root: str | None, remote: str | None, label: str | None,
               retired_into: str | None, now: float) -> None:
        """Record what a store says about itself. Every open calls this: an entry that already says
        the same (and was seen within SEEN_REFRESH_SECONDS) is not written again, so a command
        costs no registry write, and no sync, while nothing changed."""
        row = self._conn.execute("SELECT db_path, root, remote, label, retired_into, seen_at FROM stores"
                                 " WHERE name = ?", (name,)).fetchone()
        if row is not None and tuple(row)[:5] == (str(db_path), root, remote, label, retired_into) \
                and now - float(row["seen_at"]) < SEEN_REFRESH_SECONDS:
            return
        with write_txn(self._conn):
            self._conn.execute(
                "INSERT INTO stores (name, db_path, root, remote, label, retired_into, added_at, seen_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET db_path = excluded.db_path,"
                " root = excluded.root, remote = excluded.remote, label = excluded.label,"
                " retired_into = excluded.retired_into, seen_at = excluded.seen_at",
                (name, str(db_path), root, remote, label, retired_into, now, now),
            )

    def mark_retired(self, name: str, holder: str) -> None:
        with write_txn(self._conn):
            self._conn.execute("UPDATE stores SET retired_into = ? WHERE name = ?", (holder, name))

    def set_label(self, name: str, label: str | None) -> None:
        with write_txn(self._conn):
            self._conn.execute("UPDATE stores SET label = ? WHERE name = ?", (label, name))

    def set_aliases(self, aliases: list[str], holder: str) -> None:
        """Each alias has exactly one living holder: the newest one."""
        with write_txn(self._conn):
            self._conn.executemany(
                "INSERT INTO aliases (alias, holder) VALUES (?, ?) ON CONFLICT(alias) DO UPDATE SET holder = excluded.holder",
                [(a, holder) for a in aliases])

    def holder_of(self, alias: str) -> str | None:
        row = self._conn.execute("SELECT holder FROM aliases WHERE alias = ?", (alias,)).fetchone()
        return row[0] if row else None

    def entries(self) -> list[StoreEntry]:
        rows = self._conn.execute("SELECT * FROM stores ORDER BY name").fetchall()
        return [self._entry(r) for r in rows]

    def get(self, name: str) -> StoreEntry | None:
        row = self._conn.execute("SELECT * FROM stores WHERE name = ?", (name,)).fetchone()
        return self._entry(row) if row else None

    def require(self, name: str) -> StoreEntry:
        entry = self.get(name)
        if entry is None:
            raise UsageError(f"unknown store {name}; `memory stores` lists the known stores")
        return entry

    @staticmethod
    def _entry(row: sqlite3.Row) -> StoreEntry:
        return StoreEntry(row["name"], row["db_path"], row["root"], row["remote"], row["label"], row["retired_into"])
