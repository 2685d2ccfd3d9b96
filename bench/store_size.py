"""Store size: MB per 1k active items, before and after issue 23's recall index, and where it goes.

    .venv/bin/python bench/store_size.py [--sizes 1000,10000,100000] [--no-vacuum] [--no-cache]

For each size it takes `bench/recall.py`'s synthetic store (built once and cached there, the same
items every run) and writes the same items' recall index three ways, each in a copy:

- before: the layout of the releases before issue 23 (`recall_terms` + `recall_terms_item`), rows
  written item by item in row order by that release's own writer (`tests/support/terms_layout.py`
  keeps it verbatim; its test checks it against a store that release wrote);
- after: the current layout, written item by item in row order by today's writer
  (`item_writes.index_terms`), as a store grows;
- upgraded: the "before" copy rebuilt by `layout_rebuild.rebuild_now` (what an existing user's store
  becomes; the freed pages stay in the file as free pages until the store grows into them or is
  vacuumed), with the rebuild's wall and CPU time.

Sizes are the pages in use (SQLite's `dbstat`: every table and index, free pages excluded), per 1000
active items; the file size is printed beside them. With `--vacuum` (the default) both layouts are
also measured after `VACUUM` (every page packed: the floor of each layout). Every figure is measured
in this run; nothing is estimated.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autopatch_tui.core.memory.item_writes import index_terms  # noqa: E402
from autopatch_tui.core.memory.items import ItemFields  # noqa: E402
from autopatch_tui.core.memory.schema import RECALL_DDL, TERMS_RECALL_DDL  # noqa: E402
from autopatch_tui.core.recall.layout_rebuild import rebuild_now  # noqa: E402
from bench import recall as recall_bench  # noqa: E402
from tests.support.terms_layout import terms_rows  # noqa: E402

GOAL_MB_PER_1K = 2.0
ITEM_COLUMNS = "row_id, kind, subject, statement, content, strength, origin, recall_mode, applies_to_paths, aliases," \
               " keywords, thread_id"


def _conn(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _items(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    conn.row_factory = sqlite3.Row
    rows = conn.execute(f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE status = 'active' ORDER BY row_id").fetchall()
    conn.row_factory = None
    return rows


def _drop_current(conn: sqlite3.Connection) -> None:
    for stmt in RECALL_DDL:
        conn.execute(f"DROP TABLE {stmt.split('(')[0].split()[-1]}")


def write_before(db: Path) -> None:
    """The recall index as the releases before issue 23 wrote it, item by item."""
    conn = _conn(db)
    conn.execute("BEGIN IMMEDIATE")
    _drop_current(conn)
    for stmt in TERMS_RECALL_DDL:
        conn.execute(stmt)
    for r in _items(conn):
        rows = terms_rows(r["row_id"], r["subject"], json.loads(r["aliases"]), json.loads(r["keywords"]),
                          r["statement"], r["content"])
        conn.executemany("INSERT OR IGNORE INTO recall_terms (term, item_row_id, field, phrase, need)"
                         " VALUES (?, ?, ?, ?, ?)", sorted(rows, key=lambda row: (row[2], row[3], row[0])))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def write_after(db: Path) -> None:
    """The recall index as today's writer posts it, item by item."""
    conn = _conn(db)
    conn.execute("BEGIN IMMEDIATE")
    _drop_current(conn)
    for stmt in RECALL_DDL:
        conn.execute(stmt)
    conn.execute("INSERT INTO recall_meta (id, last_term_id) VALUES (1, 0)")
    for r in _items(conn):
        index_terms(conn, r["row_id"], ItemFields(r["kind"], r["subject"], r["statement"], r["content"], r["strength"],
                                                  r["origin"], r["recall_mode"], tuple(json.loads(r["applies_to_paths"])),
                                                  tuple(json.loads(r["aliases"])), tuple(json.loads(r["keywords"])),
                                                  r["thread_id"]))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def upgrade(db: Path) -> tuple[float, float]:
    conn = _conn(db)
    wall, cpu = time.perf_counter(), time.process_time()
    assert rebuild_now(conn)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return wall, cpu


def vacuum(db: Path) -> None:
    conn = _conn(db)
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def composition(db: Path, n: int) -> dict[str, object]:
    """Pages in use per object (`dbstat`), per 1000 active items, and the file's size."""
    conn = sqlite3.connect(db)
    try:
        try:
            objects = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
        except sqlite3.OperationalError:  # an SQLite built without dbstat: totals only
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            used = conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]
            objects = {"(all objects: this SQLite has no dbstat)": used * page}
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
        text = conn.execute("SELECT sum(length(CAST(subject AS BLOB)) + length(CAST(statement AS BLOB))"
                            " + length(CAST(content AS BLOB)) + length(CAST(aliases AS BLOB))"
                            " + length(CAST(keywords AS BLOB))) FROM memory_items WHERE status = 'active'").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    per_k = 1000.0 / n / 1e6
    recall = {k: v * per_k for k, v in objects.items() if owner.get(k, k).startswith("recall_")}
    items = {k: v * per_k for k, v in objects.items() if owner.get(k, "").startswith("memory_items")}
    rest = sum(v for k, v in objects.items()) * per_k - sum(recall.values()) - sum(items.values())
    return {"total": sum(objects.values()) * per_k, "recall": recall, "items": items, "rest": rest,
            "text": (text or 0) * per_k, "file": db.stat().st_size * per_k, "free": free * per_k}


def _row(label: str, c: dict[str, object]) -> str:
    recall = sum(c["recall"].values())  # type: ignore[union-attr]
    items = sum(c["items"].values())  # type: ignore[union-attr]
    goal = "OK" if float(c["total"]) <= GOAL_MB_PER_1K else "over"  # type: ignore[arg-type]
    return (f"  {label:<22} {float(c['total']):>7.3f} {goal:>5} {recall:>8.3f} {items:>9.3f} {float(c['rest']):>7.3f}"
            f" {float(c['text']):>9.3f} {float(c['file']):>8.3f} {float(c['free']):>8.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--no-vacuum", action="store_true")
    ap.add_argument("--no-cache", action="store_true", help="build bench/recall.py's stores afresh (and delete them)")
    args = ap.parse_args(argv)
    cache = not args.no_cache
    base = (Path(tempfile.gettempdir()) / "autopatch-recall-bench" / recall_bench._cache_key() if cache
            else Path(tempfile.mkdtemp(prefix="autopatch-size-bench-")))
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="autopatch-size-bench-home-"))
    os.environ["AUTOPATCH_HOME"] = str(home)
    work = Path(tempfile.mkdtemp(prefix="autopatch-size-bench-copies-"))
    started = time.perf_counter()
    print(f"SQLite {sqlite3.sqlite_version}; MB per 1000 active items; goal <= {GOAL_MB_PER_1K:g} (pages in use)")
    try:
        for n in [int(s) for s in args.sizes.split(",") if s]:
            repo, _threads, _secs, reused = recall_bench._store(base, n, args.workers, cache)
            db = repo / ".autopatch-j" / "memory.db"
            print(f"\n{n} items ({'reused' if reused else 'built'} bench/recall.py store)", flush=True)
            copies = {}
            for name in ("before", "after"):
                copies[name] = work / f"{name}-{n}.db"
                shutil.copyfile(db, copies[name])
            t = time.perf_counter()
            write_before(copies["before"])
            write_after(copies["after"])
            print(f"  (both layouts written item by item in {time.perf_counter() - t:.0f} s)", flush=True)
            copies["upgraded"] = work / f"upgraded-{n}.db"
            shutil.copyfile(copies["before"], copies["upgraded"])
            up_wall, up_cpu = upgrade(copies["upgraded"])
            measured = {name: composition(path, n) for name, path in copies.items()}
            if not args.no_vacuum:
                for name in ("before", "after"):
                    vacuum(copies[name])
                    measured[f"{name}, vacuumed"] = composition(copies[name], n)
            head = (f"  {'layout':<22} {'total':>7} {'goal':>5} {'recall':>8} {'items+idx':>9} {'rest':>7}"
                    f" {'item text':>9} {'file':>8} {'free':>8}")
            print(head)
            print("  " + "-" * (len(head) - 2))
            for name, c in measured.items():
                print(_row(name, c))
            b, a = measured["before"], measured["after"]
            print(f"  after / before: total {float(a['total']) / float(b['total']):.2f}x, recall index "
                  f"{sum(a['recall'].values()) / sum(b['recall'].values()):.2f}x; "  # type: ignore[union-attr]
                  f"upgrade of the before copy: {up_wall:.2f} s wall, {up_cpu:.2f} s CPU")
            for name in ("before", "after"):
                parts = ", ".join(f"{k} {v:.3f}" for k, v in sorted(measured[name]["recall"].items(),  # type: ignore[union-attr]
                                                                      key=lambda kv: -kv[1]))
                print(f"  {name} recall index by object: {parts}")
            parts = ", ".join(f"{k} {v:.3f}" for k, v in sorted(a["items"].items(), key=lambda kv: -kv[1]))  # type: ignore[union-attr]
            print(f"  memory_items and its indexes: {parts}")
            for path in copies.values():
                path.unlink(missing_ok=True)
        print(f"\ntotal {time.perf_counter() - started:.0f} s")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        if not cache:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
