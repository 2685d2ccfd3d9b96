"""Duplicate project stores (issue 6): the cost of a merge and of the deterministic merge-scan.

    .venv/bin/python bench/merge.py [--turns 10000] [--items 1000] [--stores 100] [--repeat 3]

Part A, merge: two stores of `--turns` turns (10 threads, each turn with its finished extraction
job) and `--items` active items with provenance (an accepted candidate with one source each) are
seeded with direct inserts in one transaction (items through `item_writes.insert_revision`). 5% of
the source's items are identical to one of the target's (linked), 5% conflict with one (queued for
organize). Then `StoreService.merge(source, target, organize=False)`: validation, the first copy,
the sweep under the source's write lock, retirement, registry and alias bookkeeping. Timed over
`--repeat` fresh pairs; the figure is the median.

Part B, deterministic scan: `--stores` registered project stores in temporary checkouts (a git
layout with an origin remote written directly; half of them in pairs that share a remote, the
rest with remotes of their own), a few items each. `StoreService.scan()` without a model: reading
every registered store read-only (validation included) and the remote tier over all pairs.

Targets (issue 6): merge <= 3 s; deterministic scan over 100 stores <= 1 s. Figures are printed,
never asserted."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_settings, environment_line, table, temp_dir, verdict  # noqa: E402

from autopatch_tui.core.identity.names import canonical_location, store_name_for_location  # noqa: E402
from autopatch_tui.core.identity.remote import normalize_remote_url  # noqa: E402
from autopatch_tui.core.ids import new_id  # noqa: E402
from autopatch_tui.core.memory.bootstrap import StoreIdentity, bootstrap_if_empty  # noqa: E402
from autopatch_tui.core.memory.item_writes import insert_revision, link_candidates  # noqa: E402
from autopatch_tui.core.memory.items import ItemFields  # noqa: E402
from autopatch_tui.core.memory.sqlite import enable_wal, open_readwrite, write_txn  # noqa: E402
from autopatch_tui.core.paths import StorePaths  # noqa: E402
from autopatch_tui.core.stores.service import StoreService  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.fixtures import write_git_layout  # noqa: E402

MERGE_TARGET = 3.0
SCAN_TARGET = 1.0
THREADS = 10
WORDS = ("parser", "lexer", "config", "cache", "retry", "schema", "index", "render", "auth", "queue", "logging",
         "metrics", "router", "session", "upload", "billing", "search", "export", "import", "worker")


# --------------------------------------------------------------------------- seeding


def create_store(root: Path, remote: str | None, now: float) -> tuple[str, Path]:
    location = canonical_location(root)
    name = store_name_for_location(location)
    db = StorePaths(root).db
    bootstrap_if_empty(db, StoreIdentity(name, location, normalize_remote_url(remote) or None), now)
    conn = open_readwrite(db)
    enable_wal(conn)
    conn.close()
    return name, db


def seed_store(db: Path, *, tag: str, turns: int, items: int, shared: list[tuple[str, str]], now: float) -> None:
    """`turns` turns over THREADS threads (all archived but the active one), a finished extraction job
    per turn, `items` active items each with an accepted candidate and its source. `shared` are
    (subject, statement) pairs seeded first (the overlap with the other store)."""
    conn = open_readwrite(db)
    conn.execute("PRAGMA synchronous = OFF")
    with write_txn(conn):
        active = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
        threads = [new_id("thr") for _ in range(THREADS - 1)]
        conn.executemany("INSERT INTO threads (id, status, created_at, archived_at, checkpoint, checkpoint_sequence)"
                         " VALUES (?, 'archived', ?, ?, 'checkpoint text', 10)", [(t, now, now) for t in threads])
        threads.append(active)
        turn_rows, job_rows, turn_ids = [], [], []
        per = max(1, turns // THREADS)
        for i in range(turns):
            tid = threads[min(i // per, THREADS - 1)]
            seq = i - min(i // per, THREADS - 1) * per + 1
            turn = new_id("turn")
            turn_ids.append(turn)
            turn_rows.append((turn, tid, seq, "general_chat", "completed",
                              f"{tag} question {i}: why does {WORDS[i % len(WORDS)]} fail on the second run?",
                              f"{tag} answer {i}: the {WORDS[(i + 3) % len(WORDS)]} state is reused; reset it.",
                              '["src/app/main.py"]', "[]", now + i * 0.001, now + i * 0.001 + 0.5))
            job_rows.append((new_id("job"), tid, turn, seq, now, now, now, now))
        conn.executemany(
            "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, assistant_text, scope_paths,"
            " evidence_keys, created_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", turn_rows)
        conn.executemany(
            "INSERT INTO memory_jobs (id, kind, status, thread_id, turn_id, sequence, attempts, provider_calls,"
            " available_at, created_at, updated_at, completed_at) VALUES (?, 'extraction', 'succeeded', ?, ?, ?,"
            " 1, 1, ?, ?, ?, ?)", job_rows)
        specs = list(shared) + [(f"{tag} {WORDS[i % len(WORDS)]} rule {i}", f"{tag}: decision number {i} about"
                                 f" {WORDS[(i * 7) % len(WORDS)]}.") for i in range(items - len(shared))]
        for n, (subject, statement) in enumerate(specs):
            cid = new_id("cand")
            conn.execute(
                "INSERT INTO memory_candidates (id, status, kind, subject, statement, content, strength, origin,"
                " recall_mode, created_at) VALUES (?, 'accepted', 'project_decision', ?, ?, ?, 'hard', 'explicit',"
                " 'on_match', ?)", (cid, subject, statement, statement, now))
            conn.execute("INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote)"
                         " VALUES (?, 0, ?, 'user', ?)", (cid, turn_ids[n % len(turn_ids)], f"remember {subject}"))
            f = ItemFields("project_decision", subject, statement, statement, "hard", "explicit", "on_match",
                           keywords=(WORDS[n % len(WORDS)],))
            row_id, _ = insert_revision(conn, f, logical_id=None, revision=1, now=now)
            link_candidates(conn, row_id, [cid])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


# --------------------------------------------------------------------------- part A


def bench_merge(base: Path, *, turns: int, items: int, run: int) -> tuple[float, float, dict]:
    settings = bench_settings(base / f"home{run}")
    now = time.time()
    names = []
    for key in ("source", "target"):
        root = write_git_layout(base / f"run{run}" / key, f"https://example.com/org/{key}.git")
        names.append(create_store(root, f"https://example.com/org/{key}.git", now))
    overlap = max(1, items // 20)
    same = [(f"shared rule {i}", f"Shared statement {i}.") for i in range(overlap)]
    conflict_src = [(f"contested rule {i}", f"Source says {i}.") for i in range(overlap)]
    conflict_tgt = [(f"contested rule {i}", f"Target says {i}.") for i in range(overlap)]
    (sname, sdb), (tname, tdb) = names
    seed_store(sdb, tag="src", turns=turns, items=items, shared=same + conflict_src, now=now)
    seed_store(tdb, tag="tgt", turns=turns, items=items, shared=same + conflict_tgt, now=now)
    svc = StoreService(settings)
    svc.add(sdb)
    svc.add(tdb)
    t0, c0 = time.perf_counter(), time.process_time()
    result = svc.merge(sname, tname, organize=False)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    conn = open_readwrite(tdb)
    check = {
        "turns": conn.execute("SELECT count(*) FROM turns").fetchone()[0],
        "revisions": conn.execute("SELECT count(*) FROM memory_items").fetchone()[0],
        "active": conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0],
        "queued": conn.execute("SELECT count(*) FROM memory_candidates WHERE status = 'pending'").fetchone()[0],
        "merged_turns": result.merged_turns, "merged_items": result.merged_items,
    }
    conn.close()
    return elapsed, cpu, check


# --------------------------------------------------------------------------- part B


def bench_scan(base: Path, *, stores: int) -> tuple[float, float, float, int, int]:
    settings = bench_settings(base / "scan-home")
    now = time.time()
    svc = StoreService(settings)
    t_seed = time.perf_counter()
    for i in range(stores):
        if i < stores // 2:
            remote = f"git@example.com:org/shared-{i // 2}.git" if i % 2 else f"https://example.com/org/shared-{i // 2}"
        else:
            remote = f"https://example.com/org/solo-{i}.git"
        root = write_git_layout(base / "checkouts" / f"c{i:03d}" / "proj", remote)
        _, db = create_store(root, remote, now)
        conn = open_readwrite(db)
        with write_txn(conn):
            for k in range(5):
                w = WORDS[(i + k) % len(WORDS)]
                insert_revision(conn, ItemFields("project_decision", f"{w} policy {k}", f"Keep {w} simple.",
                                                 f"Keep {w} simple.", "hard", "explicit", "on_match"),
                                logical_id=None, revision=1, now=now)
        conn.close()
        svc.register_db(db)
    seeded = time.perf_counter() - t_seed
    runs, cpus = [], []
    result = None
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        result = svc.scan()
        runs.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    assert result is not None
    return (statistics.median(runs), statistics.median(cpus), seeded, len(result.proposals),
            stores * (stores - 1) // 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--items", type=int, default=1_000)
    ap.add_argument("--stores", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    with temp_dir("bench-merge-") as base:
        print(environment_line(base))
        print()
        times, cpus, check = [], [], {}
        for run in range(args.repeat):
            elapsed, cpu, check = bench_merge(base, turns=args.turns, items=args.items, run=run)
            times.append(elapsed)
            cpus.append(cpu)
        merge_s, merge_cpu = statistics.median(times), statistics.median(cpus)
        print(f"A. merge of two stores, {args.turns} turns and {args.items} items each (median of {args.repeat})")
        print(f"   runs (wall / CPU): {', '.join(f'{t:.2f} s / {c:.2f} s' for t, c in zip(times, cpus))}")
        print(f"   target after merge: {json.dumps(check)}")
        print()
        scan_s, scan_cpu, seed_s, proposals, pairs = bench_scan(base, stores=args.stores)
        print(f"B. deterministic merge-scan over {args.stores} registered stores ({pairs} pairs; seeding took"
              f" {seed_s:.1f} s): {proposals} proposals (expected {args.stores // 4})")
        print()
        table(["figure", "wall", "CPU", "target (wall)", ""], [
            [f"merge {args.turns} turns + {args.items} items into the same", f"{merge_s:.2f} s",
             f"{merge_cpu:.2f} s", f"<= {MERGE_TARGET:.0f} s", verdict(merge_s <= MERGE_TARGET)],
            [f"deterministic scan, {args.stores} stores", f"{scan_s:.3f} s", f"{scan_cpu:.3f} s",
             f"<= {SCAN_TARGET:.0f} s", verdict(scan_s <= SCAN_TARGET)],
        ])
        print("\nCPU is this process's processor time; on a busy machine (see the load average above) the wall"
              " figures include waiting for a CPU.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
