"""The cost of validating a store on open (issue 11): `health.inspect_store`, which reads through a
connection that creates no side file (`immutable=1`) and runs `quick_check`, its own CHECK-constraint
scan (SQLite skips CHECKs in a read-only `quick_check`), the foreign-key check and the `NOT INDEXED`
invariant counts — against the naive baseline of the same checks on a plain `mode=ro` connection
(which creates `-wal`/`-shm` beside a WAL file).

Prints wall and CPU time per open for stores of several sizes, and the ratio to the baseline.
Run: .venv/bin/python bench/store_open.py"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from _common import environment_line, make_repo, ms, table, temp_dir, bench_settings  # noqa: I001

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import health
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


def naive(path: Path) -> health.Health:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        return health._inspect_conn(conn)
    finally:
        conn.close()


def timed(fn, path: Path) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(REPEAT):
        w, c = time.perf_counter(), time.process_time()
        result = fn(path)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        assert result.healthy, result
    return min(walls), min(cpus)


def main() -> None:
    rows = []
    with temp_dir("apj-bench-inspect-") as tmp:
        print(environment_line(tmp))
        for turns in SIZES:
            repo = make_repo(tmp, f"p{turns}")
            db = seed(repo, tmp / "home", turns)
            size_mb = db.stat().st_size / 1e6
            new_wall, new_cpu = timed(health.inspect_store, db)
            base_wall, base_cpu = timed(naive, db)
            rows.append((turns, f"{size_mb:.1f} MB", ms(new_wall), ms(new_cpu), ms(base_wall), ms(base_cpu),
                         f"{new_wall / base_wall:.2f}x", f"{new_cpu / base_cpu:.2f}x"))
    print(f"best of {REPEAT} opens each")
    table(("turns", "file", "inspect wall", "inspect cpu", "naive wall", "naive cpu", "wall ratio", "cpu ratio"),
          rows)


if __name__ == "__main__":
    main()
