"""`write_txn` keeps the error that ended the transaction, also when SQLite already rolled it back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn


def test_a_transaction_sqlite_rolled_back_itself_raises_its_own_error(tmp_path: Path) -> None:
    conn = open_readwrite(tmp_path / "full.db", create=True)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (x)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # a full disk, as SQLite sees it
        with pytest.raises(sqlite3.OperationalError, match="full"), write_txn(conn):
            conn.execute("INSERT INTO t VALUES (zeroblob(100000))")  # SQLITE_FULL rolls the txn back
        assert not conn.in_transaction
        with write_txn(conn):  # the connection is usable again
            conn.execute("INSERT INTO t VALUES (1)")
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 1
    finally:
        conn.close()


def test_an_error_inside_an_open_transaction_still_rolls_it_back(tmp_path: Path) -> None:
    conn = open_readwrite(tmp_path / "x.db", create=True)
    try:
        conn.execute("CREATE TABLE t (x)")
        with pytest.raises(ValueError), write_txn(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            raise ValueError("boom")
        assert not conn.in_transaction
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    finally:
        conn.close()
