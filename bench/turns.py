"""Turn write latency and throughput of the Memory store (issue 2).

    .venv/bin/python bench/turns.py [--pairs 1000] [--procs 4] [--per-proc 500] [--naive-pairs 200]

1. Single process, through `MemoryManager`: latency of one `begin_turn` + `complete_turn` pair
   (p50 / p95 / max after a warm-up), with the store's own settings (WAL, one persistent connection
   per thread, `synchronous = NORMAL`) and again with `synchronous = FULL` set on the same connection.
2. The same pair done the careless way in the same process: a fresh `sqlite3` connection per
   operation, the default rollback journal and synchronous mode, every statement auto-committed
   (same schema v4 and the same statements), for the ratio.
3. Four writer processes (spawn, started together at a barrier) on one store: aggregate turns/s, and
   a check that no turn was lost (every returned turn exists, completed, with its extraction job;
   sequences unique and contiguous; one active thread).

Targets (issue 2): p95 <= 2 ms per pair, >= 500 turns/s aggregate, zero lost. Figures only."""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_settings, environment_line, make_repo, ms, percentile, table, temp_dir, verdict  # noqa: E402

from autopatch_tui.core.ids import new_id  # noqa: E402
from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.memory.schema import DDL  # noqa: E402

P95_TARGET = 0.002
TPS_TARGET = 500.0
WARMUP = 100

USER_TEXT = ("Why does parse_config() in src/app/config.py ignore the TOML [tool] table when the file "
             "also has an env override? Keep the answer short. #{i}")
ANSWER_TEXT = ("It reads the override first and returns early (lines 40-52), so the [tool] table is never "
               "merged. Merge both, then apply the override last. " * 3) + "#{i}"
SCOPE = ("src/app/config.py", "src/app/env.py", "tests/test_config.py")


# --------------------------------------------------------------------------- store (MemoryManager)


class Samples(list):
    """Wall seconds per pair; `.cpu` holds the same pairs' CPU seconds (this thread's)."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu: list[float] = []


def timed_pairs(mgr: MemoryManager, n: int, tag: str = "") -> Samples:
    out = Samples()
    for i in range(n):
        t0, c0 = time.perf_counter(), time.thread_time()
        h = mgr.begin_turn(USER_TEXT.format(i=f"{tag}{i}"), intent="code_explain", scope_paths=SCOPE)
        mgr.complete_turn(h, ANSWER_TEXT.format(i=f"{tag}{i}"))
        out.append(time.perf_counter() - t0)
        out.cpu.append(time.thread_time() - c0)
    return out


# --------------------------------------------------------------------------- naive baseline


def naive_create(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    for stmt in DDL:
        conn.execute(stmt)
    now = time.time()
    conn.execute("INSERT INTO memory_meta (id, generation, created_at, store_name) VALUES (1, 1, ?, 'naive')", (now,))
    conn.execute("INSERT INTO threads (id, status, created_at) VALUES (?, 'active', ?)", (new_id("thr"), now))
    conn.execute("PRAGMA user_version = 4")
    conn.close()


def naive_begin(db: Path, text: str, owner: str) -> str:
    """A fresh connection, rollback journal, every statement its own auto-committed transaction."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        now = time.time()
        thread = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
        seq = conn.execute("SELECT coalesce(max(sequence), 0) + 1 FROM turns WHERE thread_id = ?", (thread,)).fetchone()[0]
        turn_id = new_id("turn")
        conn.execute(
            "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, scope_paths, evidence_keys,"
            " owner, lease_expires_at, created_at) VALUES (?, ?, ?, 'code_explain', 'open', ?, ?, '[]', ?, ?, ?)",
            (turn_id, thread, seq, text, '["src/app/config.py", "src/app/env.py", "tests/test_config.py"]', owner,
             now + 120, now),
        )
        return turn_id
    finally:
        conn.close()


def naive_complete(db: Path, turn_id: str, answer: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        now = time.time()
        turn = conn.execute("SELECT id, thread_id, sequence, state FROM turns WHERE id = ?", (turn_id,)).fetchone()
        conn.execute("UPDATE turns SET state = 'completed', assistant_text = ?, ended_at = ?, owner = NULL,"
                     " lease_expires_at = NULL WHERE id = ?", (answer, now, turn_id))
        conn.execute(
            "INSERT OR IGNORE INTO memory_jobs (id, kind, status, thread_id, turn_id, sequence, available_at,"
            " created_at, updated_at) VALUES (?, 'extraction', 'pending', ?, ?, ?, ?, ?, ?)",
            (new_id("job"), turn[1], turn[0], turn[2], now, now, now),
        )
    finally:
        conn.close()


def naive_pairs(db: Path, n: int, tag: str) -> Samples:
    out = Samples()
    for i in range(n):
        t0, c0 = time.perf_counter(), time.thread_time()
        tid = naive_begin(db, USER_TEXT.format(i=f"{tag}{i}"), "naive-owner")
        naive_complete(db, tid, ANSWER_TEXT.format(i=f"{tag}{i}"))
        out.append(time.perf_counter() - t0)
        out.cpu.append(time.thread_time() - c0)
    return out


# --------------------------------------------------------------------------- writer processes


def writer(repo: str, home: str, n: int, tag: str, barrier, results) -> None:  # spawn entry point
    try:
        mgr = MemoryManager(Path(repo), bench_settings(Path(home)))
        try:
            barrier.wait(timeout=120)
            start = time.monotonic()
            ids, lat, cpu = [], [], []
            for i in range(n):
                t0, c0 = time.perf_counter(), time.thread_time()
                h = mgr.begin_turn(USER_TEXT.format(i=f"{tag}-{i}"), intent="code_explain", scope_paths=SCOPE)
                mgr.complete_turn(h, ANSWER_TEXT.format(i=f"{tag}-{i}"))
                lat.append(time.perf_counter() - t0)
                cpu.append(time.thread_time() - c0)
                ids.append(h.turn_id)
            end = time.monotonic()
        finally:
            mgr.close()
        results.put(("ok", tag, start, end, ids, lat, cpu))
    except BaseException as exc:  # report to the parent instead of hanging it
        results.put(("error", tag, repr(exc)))
        raise


def multi_process(base: Path, procs: int, per_proc: int) -> dict[str, object]:
    repo = make_repo(base, "mp-project")
    home = base / "home"
    MemoryManager(repo, bench_settings(home)).close()  # bootstrap once, like a first start
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    results = ctx.Queue()
    workers = [ctx.Process(target=writer, args=(str(repo), str(home), per_proc, f"w{k}", barrier, results))
               for k in range(procs)]
    for w in workers:
        w.start()
    got = [results.get(timeout=300) for _ in workers]
    for w in workers:
        w.join(60)
    errors = [g for g in got if g[0] != "ok"]
    if errors:
        raise SystemExit(f"writer failed: {errors}")
    start = min(g[2] for g in got)
    end = max(g[3] for g in got)
    ids = [i for g in got for i in g[4]]
    lat = [x for g in got for x in g[5]]
    cpu = [x for g in got for x in g[6]]

    db = repo / ".autopatch-j" / "memory.db"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, thread_id, sequence, state FROM turns").fetchall()
        jobs = conn.execute("SELECT count(*) FROM memory_jobs WHERE kind = 'extraction'").fetchone()[0]
        active = conn.execute("SELECT count(*) FROM threads WHERE status = 'active'").fetchone()[0]
    finally:
        conn.close()
    stored = {r[0]: r for r in rows}
    lost = [i for i in ids if i not in stored or stored[i][3] != "completed"]
    seqs = sorted(r[2] for r in rows)
    return {
        "pairs": len(ids), "elapsed": end - start, "tps": len(ids) / (end - start), "lat": lat, "cpu": cpu,
        "rows": len(rows), "lost": len(lost), "jobs": jobs, "active": active,
        "unique_seq": len(set(seqs)) == len(seqs), "contiguous": seqs == list(range(1, len(seqs) + 1)),
        "threads": len({r[1] for r in rows}),
    }


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--naive-pairs", type=int, default=200)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--per-proc", type=int, default=500)
    args = ap.parse_args()

    with temp_dir("bench-turns-") as base:
        print("bench/turns.py — Memory turn writes (issue 2)")
        print(environment_line(base))
        print()

        t_all = time.perf_counter()
        mgr = MemoryManager(make_repo(base), bench_settings(base / "home"))
        try:
            timed_pairs(mgr, WARMUP, "warm")
            normal = timed_pairs(mgr, args.pairs, "n")
            conn = mgr.store.conn()
            sync_before = conn.execute("PRAGMA synchronous").fetchone()[0]
            journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
            conn.execute("PRAGMA synchronous = FULL")
            timed_pairs(mgr, WARMUP // 4, "warmfull")
            full = timed_pairs(mgr, args.pairs, "f")
            conn.execute(f"PRAGMA synchronous = {sync_before}")
        finally:
            mgr.close()

        naive_db = base / "naive" / "memory.db"
        naive_db.parent.mkdir()
        naive_create(naive_db)
        naive_pairs(naive_db, max(5, args.naive_pairs // 10), "warm")
        naive = naive_pairs(naive_db, args.naive_pairs, "n")
        nconn = sqlite3.connect(naive_db)
        naive_journal = nconn.execute("PRAGMA journal_mode").fetchone()[0]
        naive_sync = nconn.execute("PRAGMA synchronous").fetchone()[0]
        nconn.close()

        def row(name: str, lat: Samples, target: bool) -> list[object]:
            p95 = percentile(lat, 95)
            return [name, len(lat), ms(percentile(lat, 50)), ms(p95), ms(max(lat)),
                    f"{ms(percentile(lat.cpu, 50))} / {ms(percentile(lat.cpu, 95))}",
                    f"{len(lat) / sum(lat):.0f}", ("<= 2 ms: " + verdict(p95 <= P95_TARGET)) if target else "-"]

        sync_names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
        print(f"Single process, begin_turn + complete_turn per pair (after {WARMUP} warm-up pairs)")
        table(["variant", "pairs", "p50", "p95", "max", "CPU p50 / p95", "pairs/s", "target p95"], [
            row(f"store: {journal}, synchronous={sync_names.get(sync_before, sync_before)}, persistent conn",
                normal, True),
            row(f"store: {journal}, synchronous=FULL (pragma set on the manager's connection)", full, True),
            row(f"naive: fresh conn per op, journal={naive_journal}, synchronous="
                f"{sync_names.get(naive_sync, naive_sync)}, autocommit per statement", naive, False),
        ])
        p50n, p95n = percentile(normal, 50), percentile(normal, 95)
        p50v, p95v = percentile(naive, 50), percentile(naive, 95)
        print(f"ratio naive/store: p50 x{p50v / p50n:.1f}, p95 x{p95v / p95n:.1f},"
              f" CPU p50 x{percentile(naive.cpu, 50) / percentile(normal.cpu, 50):.1f};  "
              f"FULL/NORMAL p95 x{percentile(full, 95) / p95n:.2f}")
        print()

        r = multi_process(base, args.procs, args.per_proc)
        lat = r["lat"]
        print(f"{args.procs} writer processes (spawn, start barrier), {args.per_proc} pairs each, one store")
        table(["figure", "value", "target"], [
            ["aggregate turns/s", f"{r['tps']:.0f}  ({r['pairs']} pairs in {r['elapsed']:.2f} s)",
             f">= {TPS_TARGET:.0f}: {verdict(r['tps'] >= TPS_TARGET)}"],
            ["pair latency under contention p50 / p95 / max",
             f"{ms(percentile(lat, 50))} / {ms(percentile(lat, 95))} / {ms(max(lat))}", "-"],
            ["pair CPU time under contention p50 / p95",
             f"{ms(percentile(r['cpu'], 50))} / {ms(percentile(r['cpu'], 95))}", "-"],
            ["turn rows stored / returned", f"{r['rows']} / {r['pairs']}", "equal"],
            ["lost turns", r["lost"], f"0: {verdict(r['lost'] == 0 and r['rows'] == r['pairs'])}"],
            ["sequences unique / contiguous 1..n", f"{r['unique_seq']} / {r['contiguous']}", "True / True"],
            ["extraction jobs (one per ended turn)", r["jobs"], f"{r['pairs']}: {verdict(r['jobs'] == r['pairs'])}"],
            ["active threads / threads used", f"{r['active']} / {r['threads']}", "1 / 1"],
        ])
        print()
        print(f"total bench time {time.perf_counter() - t_all:.1f} s")


if __name__ == "__main__":
    main()
