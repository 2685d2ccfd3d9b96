"""The one-time rebuild of a first-layout recall index, as the app runs it, with a user typing.

    .venv/bin/python bench/layout_rebuild.py [--sizes 10000,100000] [--turn-every 0.5] [--no-cache]
    .venv/bin/python bench/layout_rebuild.py --store OLD_LAYOUT_MEMORY.db

For each size it takes `bench/recall.py`'s synthetic store (built once and cached there), writes a copy
of it with the recall index in the layout of the releases before issue 23 (`bench/store_size.py`'s
`write_before`, that release's own writer), opens it with `MemoryManager.open` and starts the Memory
worker (`start_background`), which rebuilds the index in short transactions (`layout_rebuild`). Beside it,
as in the app:

- a "UI" loop on the main thread sleeps 5 ms and records how late it wakes (its GIL and CPU share:
  what a keystroke would wait for), and samples the size of `memory.db` and `memory.db-wal`;
- a "turn" thread saves a chat turn every `--turn-every` seconds (`begin_turn`, then `complete_turn`,
  as a chat request does around its model call) and records how long `begin_turn` took.

The same two loops run first for a few seconds with the worker idle on an already rebuilt copy (the
baseline, same process). Printed, all measured in this run: every rebuild transaction's wall time
(longest, p50, p95, per phase) and CPU time (this thread's), the whole rebuild's wall and CPU (the
process's CPU too), `begin_turn` waits and UI wake-up delays during the rebuild against the baseline,
the peak size of the WAL, the file before and after, and the machine's load average. Nothing is timed
against a target: the figures are for direction (the machine may be loaded: compare ratios).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.memory.schema import CURRENT, recall_layout  # noqa: E402
from autopatch_tui.core.pipeline import worker as worker_module  # noqa: E402
from autopatch_tui.core.recall import layout_rebuild  # noqa: E402
from autopatch_tui.core.settings import load_settings  # noqa: E402
from bench import recall as recall_bench  # noqa: E402
from bench.store_size import write_before  # noqa: E402

BASELINE_SECONDS = 6.0
TICK = 0.005


class _Recorded(layout_rebuild.Rebuild):
    """The worker's rebuild, kept where the bench can read its transactions."""

    made: list[layout_rebuild.Rebuild] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        _Recorded.made.append(self)


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


def _ms(values: list[float]) -> str:
    if not values:
        return "n=0"
    return (f"n={len(values)} p50 {_pct(values, 50) * 1e3:.1f} ms, p95 {_pct(values, 95) * 1e3:.1f} ms,"
            f" max {max(values) * 1e3:.1f} ms")


def _state(db: Path) -> str | None:
    conn = sqlite3.connect(db)
    try:
        return recall_layout(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))
    finally:
        conn.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _observe(mgr: MemoryManager, db: Path, until: threading.Event | None, seconds: float,
             turn_every: float) -> tuple[list[float], list[float], int, list[str]]:
    """Run the UI loop (this thread) and the turn thread until `until` is set (or for `seconds`).
    Returns (UI wake-up delays, begin_turn waits, peak WAL bytes, turn errors)."""
    waits: list[float] = []
    errors: list[str] = []
    stop = threading.Event()

    def turns() -> None:
        n = 0
        while not stop.is_set():
            t = time.perf_counter()
            try:
                handle = mgr.begin_turn(f"bench turn {n}: what is our config policy?")
                waits.append(time.perf_counter() - t)
                mgr.complete_turn(handle, "an answer")
            except Exception as exc:  # a failed turn is a finding: count it, never hide it
                errors.append(type(exc).__name__)
            n += 1
            stop.wait(turn_every)
        mgr.store.release_thread_connection()

    thread = threading.Thread(target=turns, name="bench-turns")
    thread.start()
    late: list[float] = []
    wal_peak = 0
    end = time.perf_counter() + seconds
    last_sample = 0.0
    while (until is None and time.perf_counter() < end) or (until is not None and not until.is_set()):
        t = time.perf_counter()
        time.sleep(TICK)
        late.append(time.perf_counter() - t - TICK)
        if t - last_sample > 0.1:
            wal_peak = max(wal_peak, _size(db.with_name(db.name + "-wal")))
            last_sample = t
    stop.set()
    thread.join()
    return late, waits, wal_peak, errors


def _copy_repo(src_repo: Path, db: Path, dest: Path) -> Path:
    repo = dest / "project"
    (repo / ".autopatch-j").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name in (".gitignore",):
        if (src_repo / ".autopatch-j" / name).exists():
            shutil.copy2(src_repo / ".autopatch-j" / name, repo / ".autopatch-j" / name)
    shutil.copyfile(db, repo / ".autopatch-j" / "memory.db")
    return repo


def _baseline(repo: Path, turn_every: float) -> tuple[list[float], list[float], list[str]]:
    """The same loops, the worker idle on a store with nothing to rebuild."""
    mgr = MemoryManager.open(repo, load_settings())
    mgr.start_background()
    late, waits, _, errors = _observe(mgr, mgr.store.db_path, None, BASELINE_SECONDS, turn_every)
    mgr.close()
    return late, waits, errors


def measure(n: int | str, src_repo: Path | None, terms_db: Path, work: Path, turn_every: float) -> None:
    """`src_repo`: the same items in the current layout, for the baseline (run first); None: the
    baseline runs after the rebuild, on the rebuilt copy."""
    if src_repo is not None:
        base_late, base_waits, base_errors = _baseline(
            _copy_repo(src_repo, src_repo / ".autopatch-j" / "memory.db", work / f"baseline-{n}"), turn_every)

    repo = _copy_repo(src_repo or work, terms_db, work / f"rebuild-{n}")
    db = repo / ".autopatch-j" / "memory.db"
    file_before = _size(db)
    _Recorded.made.clear()
    mgr = MemoryManager.open(repo, load_settings())
    done = threading.Event()

    def watch() -> None:  # its own look at the catalog, every 50 ms
        while True:
            try:
                if _state(db) == CURRENT:
                    break
            except sqlite3.Error as exc:  # a look that fails is counted, and the watch goes on
                looks_failed.append(type(exc).__name__)
            time.sleep(0.05)
        done.set()

    looks_failed: list[str] = []

    watcher = threading.Thread(target=watch, name="bench-watch")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    mgr.start_background()
    watcher.start()
    late, waits, wal_peak, errors = _observe(mgr, db, done, 0.0, turn_every)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    watcher.join()
    mgr.close()
    if src_repo is None:
        base_late, base_waits, base_errors = _baseline(repo, turn_every)
    txns = [t for r in _Recorded.made for t in r.transactions if t.phase not in ("done", "stopped")]
    longest = max(txns, key=lambda t: t.wall)
    print(f"\n{n} items: file {file_before / 1e6:.1f} MB before, {_size(db) / 1e6:.1f} MB after"
          f" (WAL peak {wal_peak / 1e6:.1f} MB); rebuild {wall:.1f} s wall, {sum(t.cpu for t in txns):.1f} s CPU"
          f" in its transactions (process CPU {cpu:.1f} s, turns and UI loop included), {len(txns)} transactions")
    print(f"  longest transaction: {longest.wall * 1e3:.1f} ms wall, {longest.cpu * 1e3:.1f} ms CPU ({longest.phase});"
          f" all: {_ms([t.wall for t in txns])}")
    for phase in ("created", "postings", "records", "switched", "dropped"):
        mine = [t for t in txns if t.phase == phase]
        if mine:
            worst = max(mine, key=lambda t: t.wall)
            print(f"  {phase:>9}: {len(mine):>5} transaction(s), longest {worst.wall * 1e3:.1f} ms wall"
                  f" / {worst.cpu * 1e3:.1f} ms CPU, p95 {_pct([t.wall for t in mine], 95) * 1e3:.1f} ms wall")
    print(f"  begin_turn wait: during the rebuild {_ms(waits)}; baseline {_ms(base_waits)}")
    print(f"  turns that failed: during {len(errors)} {sorted(set(errors))}; baseline {len(base_errors)}")
    print(f"  UI loop (5 ms sleep) woke late: during {_ms(late)}; baseline {_ms(base_late)}")
    if looks_failed:
        print(f"  the bench's own catalog looks that failed: {len(looks_failed)} {sorted(set(looks_failed))}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--turn-every", type=float, default=0.5)
    ap.add_argument("--store", type=Path, help="an old-layout memory.db to rebuild instead of the bench's stores"
                                              " (the baseline then runs on its rebuilt copy)")
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--no-cache", action="store_true", help="build bench/recall.py's stores afresh (and delete them)")
    args = ap.parse_args(argv)
    cache = not args.no_cache
    base = (Path(tempfile.gettempdir()) / "autopatch-recall-bench" / recall_bench._cache_key() if cache
            else Path(tempfile.mkdtemp(prefix="autopatch-rebuild-bench-")))
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="autopatch-rebuild-bench-home-"))
    for var in [v for v in os.environ if v.startswith("AUTOPATCH_")]:
        del os.environ[var]
    os.environ["AUTOPATCH_HOME"] = str(home)
    work = Path(tempfile.mkdtemp(prefix="autopatch-rebuild-bench-copies-"))
    worker_module.Rebuild = _Recorded  # type: ignore[misc]
    print(f"SQLite {sqlite3.sqlite_version}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs;"
          f" a turn every {args.turn_every:g} s; rebuild batches {layout_rebuild.BATCH_SECONDS * 1e3:.0f} ms,"
          f" pauses >= {layout_rebuild.MIN_PAUSE_SECONDS * 1e3:.0f} ms")
    try:
        if args.store is not None:
            conn = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
            items = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
            conn.close()
            measure(f"{items} (--store)", None, args.store, work, args.turn_every)
            return 0
        for n in [int(s) for s in args.sizes.split(",") if s]:
            repo, _threads, _secs, reused = recall_bench._store(base, n, args.workers, cache)
            terms = base / f"terms-layout-{n}.db"
            if not (cache and terms.exists()):
                t = time.perf_counter()
                shutil.copyfile(repo / ".autopatch-j" / "memory.db", work / "terms.db")
                write_before(work / "terms.db")
                shutil.move(work / "terms.db", terms)
                print(f"({n} items: the old layout written in {time.perf_counter() - t:.0f} s)", flush=True)
            measure(n, repo, terms, work, args.turn_every)
        print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        if not cache:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
