"""What opening a store costs, by size (issues 11, 23): the open-time check every open runs
(`health.inspect_store`: header, hard links, version, exact catalog, meta row, active thread, read
as the read-write connection reads it), against the deep check that runs once per file state after
the first frame or a command's answer (`deep_check.deep_problem`: quick_check, CHECK scan, foreign
keys, duplicate scans); both together are the full check, which every process ran before it
opened a store until issue 23 (with a slower foreign-key check then: `PRAGMA foreign_key_check`).

Prints, per store size, the best of REPEAT runs (wall and CPU) of each, the ratio of the open-time
check to the smallest store's (target: flat, independent of the size), and the deep check's share.
`--with-100k` adds the recall benchmark's 100k-item store (built through the Store's writer by
bench/recall.py and cached under the system temp folder).
Run: .venv/bin/python bench/store_open.py [--with-100k]"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from _common import bench_settings, environment_line, make_repo, ms, table, temp_dir  # noqa: I001

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import deep_check, health
from autopatch_tui.core.memory.sqlite import write_txn

SIZES = (1_000, 10_000, 50_000)  # turns (each ~200 bytes of text)
REPEAT = 5


def seed(repo: Path, home: Path, turns: int) -> Path:
    mgr = MemoryManager(repo, bench_settings(home), register=False)
    try:
        conn = mgr.store.conn()
        thread = mgr.active_thread_id()
        with write_txn(conn):
            conn.executemany(
                "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, assistant_text, created_at,"
                " ended_at) VALUES (?, ?, ?, 'general_chat', 'completed', ?, ?, ?, ?)",
                [(f"turn-{n:026d}", thread, n, f"question {n} " + "q" * 80, f"answer {n} " + "a" * 80, 1.0 + n,
                  2.0 + n) for n in range(1, turns + 1)])
    finally:
        mgr.close()
    return mgr.paths.db


def deep(path: Path) -> object:
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, isolation_level=None)
    try:
        return deep_check.deep_problem(conn) or "ok"
    finally:
        conn.close()


def timed(fn, path: Path) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(REPEAT):
        w, c = time.perf_counter(), time.process_time()
        result = fn(path)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        ok = result.healthy if isinstance(result, health.Health) else result == "ok"
        assert ok, result
    return min(walls), min(cpus)


def huge() -> tuple[str, Path]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import recall

    cache = Path(tempfile.gettempdir()) / "autopatch-recall-bench" / recall._cache_key()
    cache.mkdir(parents=True, exist_ok=True)
    repo, _threads, secs, reused = recall._store(cache, 100_000, 2, True)
    print(f"100k-item store {'reused' if reused else 'built'} ({secs:.0f} s to build)", flush=True)
    return "100k items", repo / ".autopatch-j" / "memory.db"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--with-100k", action="store_true")
    args = ap.parse_args()
    rows = []
    with temp_dir("apj-bench-inspect-") as tmp:
        print(environment_line(tmp))
        stores = []
        for turns in SIZES:
            stores.append((f"{turns} turns", seed(make_repo(tmp, f"p{turns}"), tmp / "home", turns)))
        if args.with_100k:
            os.environ["AUTOPATCH_HOME"] = str(tmp / "home")
            stores.append(huge())
        first_cpu = None
        for label, db in stores:
            size_mb = db.stat().st_size / 1e6
            open_wall, open_cpu = timed(health.inspect_store, db)
            deep_wall, deep_cpu = timed(deep, db)
            first_cpu = first_cpu or open_cpu
            rows.append((label, f"{size_mb:.1f} MB", ms(open_wall), ms(open_cpu), f"{open_cpu / first_cpu:.2f}x",
                         ms(deep_wall), ms(deep_cpu), ms(open_wall + deep_wall)))
    print(f"best of {REPEAT} runs each; 'full check' = the open-time check + the deep check (every process ran a"
          " full check before opening until issue 23)")
    table(("store", "file", "open wall", "open cpu", "open cpu vs smallest", "deep wall", "deep cpu",
           "full check (wall)"), rows)


if __name__ == "__main__":
    main()
