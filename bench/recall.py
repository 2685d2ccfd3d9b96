"""Recall benchmark: Memory Map building and `memory_search` over synthetic bilingual stores.

    .venv/bin/python bench/recall.py [--sizes 1000,10000,100000] [--queries 200] [--no-cache]

For each size it builds a store of that many active items in a temporary folder (kept under the system
temp folder and reused by later runs while the generator, writer, tokenizer and schema are unchanged;
`--no-cache` builds fresh ones and deletes them), written through the
Store's own writer (`item_writes.insert_revision`, one transaction per shard; the 100k store is built
in parallel shards that are then copied row for row into one database), from a deterministic
English + Chinese vocabulary with Zipf-like word frequencies (see `tests/support/recall_seed.py`:
subjects, statements, contents, aliases, keywords, identifiers, check IDs, ~0.5 % `always` items
capped at ~100, ~30 % path-scoped, 10 % discussions over three threads).

It then times, over ~200 varied queries (English and unspaced Chinese sentences, saved aliases,
keywords and check IDs, mixed text, some scoped to a file, some that hit nothing; ordinary and repair
intents alternate):
- `build_map` (both lanes, 2000-token Map budget), and
- `RecallSession.search` (a fresh request each time),
and a NAIVE full-scan baseline in the same run: every active item loaded and matched in Python with
the same term functions (no memo), on a subset of the queries (it is slow). The baseline's results
are compared with the indexed ones: they must be identical.

Targets (issue 4): Map and search p95 <= 5 ms at 100k items; >= 20x faster than the baseline at 10k.
Timings depend on the machine and its load: the table prints a CPU calibration figure. The size of
these stores, before and after issue 23's recall index, is `bench/store_size.py`'s.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import change_journal
from autopatch_tui.core.memory.item_writes import insert_revision, unindex
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn
from autopatch_tui.core.recall import matching, postings
from autopatch_tui.core.recall import memo as recall_memo
from autopatch_tui.core.recall import standing_carry
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from autopatch_tui.core.settings import load_settings
from tests.support import recall_seed
from autopatch_tui.core.recall.terms import is_check_id, phrase_terms
from tests.support.recall_seed import SyntheticCorpus, map_keys, naive_map, naive_search

MAP_BUDGET = 2000
TARGET_P95_MS = 5.0
TARGET_RATIO = 20.0
TARGET_APP_MAP_MS = 10.0
BASELINE_QUERIES = {1_000: 30, 10_000: 8, 100_000: 1}
ALWAYS_SHARE = 0.05  # of all items (discussions are never `always`, so the rate among the others is higher)
ALWAYS_RATE = ALWAYS_SHARE / 0.9
NAMED_QUERIES = 80
NAMED_MAX_SHARED = 8  # an item is "named" when at most this many active items carry the phrase
SHARD_THRESHOLD = 5_000
NOW = 1_800_000_000.0


# --------------------------------------------------------------------------- building


def _bootstrap(folder: Path) -> tuple[Path, Path, list[str]]:
    """An empty healthy v4 store with three threads (one active). Returns (repo, db, thread IDs)."""
    repo = folder / "project"
    repo.mkdir(parents=True)
    mgr = MemoryManager.open(repo, load_settings())
    try:
        conn = mgr.store.conn()
        threads = [recall_seed.active_thread(conn)]
        with write_txn(conn):
            for n in range(2):
                tid = f"thr-bench{n}"
                conn.execute("INSERT INTO threads (id, status, created_at, archived_at) VALUES (?, 'archived', ?, ?)",
                             (tid, NOW, NOW))
                threads.append(tid)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        mgr.close()
    return repo, repo / ".autopatch-j" / "memory.db", threads


def _fast(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA cache_size = -400000")
    conn.execute("PRAGMA synchronous = OFF")


def _build_shard(args: tuple[str, int, int, list[str], float]) -> None:
    db, n, seed, threads, always_rate = args
    conn = open_readwrite(Path(db))
    _fast(conn)
    with write_txn(conn):
        SyntheticCorpus().insert_items(conn, n, seed=seed, thread_ids=threads, now=NOW, always_rate=always_rate)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def build_store(folder: Path, n: int, workers: int) -> tuple[Path, list[str], float]:
    repo, db, threads = _bootstrap(folder)
    t0 = time.perf_counter()
    if n < SHARD_THRESHOLD or workers < 2:
        _build_shard((str(db), n, 1, threads, ALWAYS_RATE))
    else:
        shards = []
        for k in range(workers):
            path = folder / f"shard{k}.db"
            shutil.copy(db, path)
            shards.append((str(path), n // workers + (k < n % workers), 100 + k, threads, ALWAYS_RATE))
        with mp.get_context("spawn").Pool(workers) as pool:
            pool.map(_build_shard, shards)
        _merge(db, [Path(s[0]) for s in shards], n, threads)
    return repo, threads, time.perf_counter() - t0


def _copy_index(conn: sqlite3.Connection, shard: str, offset: int) -> None:
    """Inside a write txn: a shard's recall index, as insert_revision wrote it, for the shard's items
    the target took (row IDs shifted by `offset`): its dictionary entries the target lacks get the
    target's next IDs, and every posting and packed record is rewritten with the target's IDs."""
    last = conn.execute("SELECT last_term_id FROM recall_meta WHERE id = 1").fetchone()[0]
    conn.execute(f"INSERT INTO main.recall_dict (term, id) SELECT s.term, ? + row_number() OVER (ORDER BY s.term)"
                 f" FROM {shard}.recall_dict s WHERE NOT EXISTS (SELECT 1 FROM main.recall_dict d WHERE d.term = s.term)",
                 (last,))
    conn.execute("UPDATE recall_meta SET last_term_id = (SELECT max(id) FROM recall_dict) WHERE id = 1")
    ids = dict(conn.execute(f"SELECT s.id, d.id FROM {shard}.recall_dict s JOIN main.recall_dict d ON d.term = s.term"))
    taken = f"EXISTS (SELECT 1 FROM main.memory_items m WHERE m.row_id = {{c}} + {int(offset)})"
    rows = conn.execute(f"SELECT term_id, field, item_row_id, phrase, need FROM {shard}.recall_postings"
                        f" WHERE {taken.format(c='item_row_id')}")
    conn.executemany("INSERT INTO recall_postings (term_id, field, item_row_id, phrase, need) VALUES (?, ?, ?, ?, ?)",
                     ((ids[t], f, item + offset, p, need) for t, f, item, p, need in rows))
    mask = (1 << postings.FIELD_BITS) - 1
    records = conn.execute(f"SELECT item_row_id, postings FROM {shard}.recall_item_postings"
                           f" WHERE {taken.format(c='item_row_id')}")
    conn.executemany("INSERT INTO recall_item_postings (item_row_id, postings) VALUES (?, ?)",
                     ((item + offset, postings.pack(ids[c >> postings.FIELD_BITS] << postings.FIELD_BITS | c & mask
                                                    for c in postings.unpack(blob))) for item, blob in records))


def _merge(db: Path, shards: list[Path], n: int, threads: list[str]) -> None:
    """Copy every shard's item rows and recall index, exactly as insert_revision wrote them, into one
    store (row IDs shifted, term IDs mapped by their text; an item whose subject + applicability is
    already active in the target is skipped), then top up to exactly `n` items with insert_revision."""
    conn = open_readwrite(db)
    _fast(conn)
    cols = ("id, logical_id, revision, status, kind, subject, statement, content, strength, origin, recall_mode,"
            " applies_to_paths, aliases, keywords, thread_id, identity_key, replaced_by, origin_store, created_at,"
            " updated_at")
    for k, shard in enumerate(shards):
        conn.execute(f"ATTACH DATABASE ? AS s{k}", (str(shard),))
    with write_txn(conn):
        for k in range(len(shards)):
            offset = conn.execute("SELECT coalesce(max(row_id), 0) FROM memory_items").fetchone()[0]
            conn.execute(
                f"INSERT INTO memory_items (row_id, {cols}) SELECT row_id + ?, {cols} FROM s{k}.memory_items"
                " WHERE identity_key NOT IN (SELECT identity_key FROM main.memory_items WHERE status = 'active')",
                (offset,))
            _copy_index(conn, f"s{k}", offset)
        missing = n - conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
        if missing > 0:
            SyntheticCorpus().insert_items(conn, missing, seed=999, thread_ids=threads, now=NOW + n,
                                           always_rate=ALWAYS_RATE)
    for k in range(len(shards)):
        conn.execute(f"DETACH DATABASE s{k}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for shard in shards:
        shard.unlink(missing_ok=True)


# --------------------------------------------------------------------------- measuring


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))] * 1000.0


def _time(fn: Callable[[], object], cpu: list[float] | None = None) -> tuple[float, object]:
    """Wall time of `fn()` (and, into `cpu`, this process's CPU time: steadier on a busy machine)."""
    c = time.process_time()
    t = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t
    if cpu is not None:
        cpu.append(time.process_time() - c)
    return wall, out


def _calibrate() -> float:
    t = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i
    return (time.perf_counter() - t) * 1000.0


def named_queries(conn: sqlite3.Connection, count: int, seed: int = 5) -> list[tuple[str, str, str, str | None]]:
    """`count` queries that each name one active on_match item: (text, item logical ID, phrase field,
    thread of a discussion). The phrase (subject, alias, keyword or check ID, tokenized as the index
    does) is carried by at most NAMED_MAX_SHARED active items, counted by a full pass over the store."""
    import random

    shared: dict[tuple[str, ...], int] = {}
    rows = conn.execute("SELECT logical_id, kind, subject, aliases, keywords, recall_mode, thread_id, applies_to_paths"
                        " FROM memory_items WHERE status = 'active'").fetchall()

    def phrases(r: sqlite3.Row) -> list[tuple[str, str]]:
        out = [("subject", r["subject"])] + [("alias", a) for a in json.loads(r["aliases"])]
        out += [("check_id" if is_check_id(k.strip()) else "keyword", k) for k in json.loads(r["keywords"])]
        return out

    for r in rows:
        for _, text in phrases(r):
            key = tuple(phrase_terms(text))
            if key:
                shared[key] = shared.get(key, 0) + 1
    rng = random.Random(seed)
    pool = [r for r in rows if r["recall_mode"] == "on_match" and r["applies_to_paths"] == "[]"]
    out: list[tuple[str, str, str, str | None]] = []
    fields = ["subject", "alias", "keyword", "check_id"]
    tries = 0
    while len(out) < count and tries < 100 * count:
        tries += 1
        r = rng.choice(pool)
        want = fields[tries % len(fields)]  # a field that names nothing at this size (check IDs repeat) is skipped
        cands = [(f, t) for f, t in phrases(r) if f == want and 0 < shared.get(tuple(phrase_terms(t)), 0)
                 <= NAMED_MAX_SHARED]
        if not cands:
            continue
        f, phrase = rng.choice(cands)
        if f == "subject" and not phrase.isascii():
            text = "我们之前关于" + phrase + "是怎么决定的"
        elif f in ("keyword", "check_id"):
            text = f"why does {phrase} fail here"
        else:
            text = f"what did we decide about {phrase}"
        out.append((text, r["logical_id"], f, r["thread_id"]))
    return out


def measure_named(mgr: MemoryManager, conn: sqlite3.Connection, threads: list[str], count: int) -> dict[str, object]:
    """Named-item recall: is the named item in the Map (either lane) and in the search results?"""
    qs = named_queries(conn, count)
    in_map = in_search = 0
    by_field: dict[str, list[int]] = {}
    for text, logical_id, f, thread in qs:
        policy = policy_for("general_chat", thread or threads[0])
        mm = build_map(conn, RecallQuery("general_chat", text), policy, budget_tokens=MAP_BUDGET)
        session = RecallSession(mgr.store.conn, RecallQuery("general_chat", ""), policy)
        found = [r["id"] for r in session.search(text)]
        m, q = logical_id in mm.ids, logical_id in found
        in_map += m
        in_search += q
        tally = by_field.setdefault(f, [0, 0, 0])
        tally[0] += 1
        tally[1] += m
        tally[2] += q
    return {"named": len(qs), "named_map": in_map, "named_search": in_search, "named_by_field": by_field}


def measure_app_map(mgr: MemoryManager, conn: sqlite3.Connection, requests: list) -> dict[str, float]:
    """The Map as the app pays it: `ChatService.ask` writes the turn (`begin_turn`) and then builds
    the Map, on the same connection, one request after the other, starting from an empty memo."""
    wall: list[float] = []
    cpu: list[float] = []
    recall_memo.clear()  # a fresh app session: every new scope pays for its standing lane once
    standing_carry.clear()
    for _, query, policy, text in requests:
        handle = mgr.begin_turn(text or "bench", intent=query.intent)
        dt, _ = _time(partial(build_map, conn, query, policy, budget_tokens=MAP_BUDGET), cpu)
        wall.append(dt)
        mgr.complete_turn(handle, "ok")
    return {"app_p50": _pct(wall, .5), "app_p95": _pct(wall, .95), "app_cpu_p50": _pct(cpu, .5),
            "app_cpu_p95": _pct(cpu, .95)}


def measure_after_commit(conn: sqlite3.Connection, requests: list) -> dict[str, float]:
    """The Map right after a consolidation commit: before each request one `on_match` item is written
    in a tracked transaction with a version bump, as the worker's consolidation writes it. The memo
    starts over (the document frequencies are read again); the standing caches are carried over
    (`standing_carry`: no `always` row changed). The items are deleted afterwards (the cached store
    stays as built)."""
    wall: list[float] = []
    cpu: list[float] = []
    recall_memo.clear()
    standing_carry.clear()
    for _, query, policy, _text in requests:  # the session's lanes, as a running app has them
        build_map(conn, query, policy, budget_tokens=MAP_BUDGET)
    added: list[int] = []
    before = dict(standing_carry.stats)
    try:
        for k, (_, query, policy, _text) in enumerate(requests):
            with change_journal.tracked(conn), write_txn(conn):
                row_id, _ = insert_revision(conn, ItemFields("project_decision", f"bench commit {k}",
                                                             f"Decided {k} in the bench.", "", "soft", "explicit",
                                                             "on_match"), logical_id=None, revision=1, now=time.time())
                bump_data_version(conn)
            added.append(row_id)
            dt, _ = _time(partial(build_map, conn, query, policy, budget_tokens=MAP_BUDGET), cpu)
            wall.append(dt)
    finally:
        with write_txn(conn):
            marks = ",".join("?" * len(added))
            for row_id in added:
                unindex(conn, row_id)
            conn.execute(f"DELETE FROM memory_items WHERE row_id IN ({marks})", added)
            bump_data_version(conn)
    return {"commit_p50": _pct(wall, .5), "commit_p95": _pct(wall, .95), "commit_cpu_p95": _pct(cpu, .95),
            "commit_carried": standing_carry.stats["carried"] - before["carried"], "commit_requests": len(requests)}


def measure(repo: Path, threads: list[str], n: int, queries: int, baseline: bool = True) -> dict[str, object]:
    mgr = MemoryManager.open(repo, load_settings())
    try:
        conn = mgr.store.conn()
        corpus = SyntheticCorpus()
        qs = corpus.queries(conn, queries, seed=2)
        requests = []
        for k, (text, paths) in enumerate(qs):
            if k % 4 == 3:  # a repair request: no user text, the finding drives the query
                intent, query = "code_audit", RecallQuery("code_audit", "", finding_path=(paths or ("src/a.py",))[0],
                                                          finding_message=text)
                policy = policy_for("code_audit", None)
            else:
                intent, query = "general_chat", RecallQuery("general_chat", text, paths)
                policy = policy_for("general_chat", threads[k % len(threads)])
            requests.append((intent, query, policy, text))
        for _, query, policy, text in requests[:10]:  # warm-up: a running app has a warm page cache
            build_map(conn, query, policy, budget_tokens=MAP_BUDGET)
        map_t, search_t, map_out, search_out, cold_t = [], [], [], [], []
        map_cpu: list[float] = []
        search_cpu: list[float] = []
        cold_cpu: list[float] = []
        for _, query, policy, text in requests:  # cold: as if every request came right after a Memory write
            recall_memo.clear()  # that changed an `always` item (or in a new process): nothing carried
            standing_carry.clear()
            dt, _ = _time(partial(build_map, conn, query, policy, budget_tokens=MAP_BUDGET), cold_cpu)
            cold_t.append(dt)
        for _, query, policy, text in requests:
            dt, mm = _time(partial(build_map, conn, query, policy, budget_tokens=MAP_BUDGET), map_cpu)
            map_t.append(dt)
            map_out.append(map_keys(mm))
            session = RecallSession(mgr.store.conn, RecallQuery(query.intent, "", query.scope_paths,
                                                                finding_path=query.finding_path), policy)
            dt, res = _time(partial(session.search, text), search_cpu)
            search_t.append(dt)
            search_out.append(res)
        # the naive baseline on every k-th query, with the same requests
        recall_seed.NAIVE_MEMO = None
        count = min(BASELINE_QUERIES.get(n, 10) if baseline else 0, len(requests))
        step = max(1, len(requests) // max(count, 1))
        picked = list(range(0, len(requests), step))[:count]
        base_map_t, base_search_t = [], []
        base_map_cpu: list[float] = []
        base_search_cpu: list[float] = []
        identical = True
        for i in picked:
            _, query, policy, text = requests[i]
            dt, mm = _time(partial(naive_map, conn, query, policy, budget_tokens=MAP_BUDGET), base_map_cpu)
            base_map_t.append(dt)
            identical &= map_keys(mm) == map_out[i]
            sq = RecallQuery(query.intent, "", query.scope_paths, finding_path=query.finding_path)
            dt, res = _time(partial(naive_search, conn, sq, policy, text), base_search_cpu)
            base_search_t.append(dt)
            identical &= res == search_out[i]
        hits = sum(1 for r in search_out if r)
        named = measure_named(mgr, conn, threads, NAMED_QUERIES)
        app = measure_app_map(mgr, conn, requests)
        app.update(measure_after_commit(conn, requests))
        always = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active' AND recall_mode = 'always'"
                              ).fetchone()[0]
        return {"n": n, **named, **app, "always": always,
                "cold_cpu_p95": _pct(cold_cpu, .95), "base_map_cpu_p95": _pct(base_map_cpu, .95),
                "base_search_cpu_p95": _pct(base_search_cpu, .95), "queries": len(requests), "baseline_queries": len(picked), "identical": identical,
                "map_p50": _pct(map_t, .5), "map_p95": _pct(map_t, .95),
                "cold_p50": _pct(cold_t, .5), "cold_p95": _pct(cold_t, .95),
                "search_p50": _pct(search_t, .5), "search_p95": _pct(search_t, .95),
                "map_cpu_p95": _pct(map_cpu, .95), "search_cpu_p95": _pct(search_cpu, .95),
                "base_map_p50": _pct(base_map_t, .5), "base_map_p95": _pct(base_map_t, .95),
                "base_search_p50": _pct(base_search_t, .5), "base_search_p95": _pct(base_search_t, .95),
                "search_hit_rate": hits / len(requests)}
    finally:
        mgr.close()


def report(rows: list[dict[str, object]], builds: dict[int, float], calib: tuple[float, float]) -> None:
    print()
    print(f"CPU calibration: a 1M-iteration Python loop took {calib[0]:.0f} ms before and {calib[1]:.0f} ms after "
          "(measured in this run; compare runs by it)")
    print(f"common-term limit: {matching.COMMON_TERM_ITEMS} items; Map budget {MAP_BUDGET} tokens")
    print()
    head = (f"{'items':>7} {'build s':>8} {'q':>4} {'what':<7} {'p50 ms':>8} {'p95 ms':>8} {'cpu p95':>8} "
            f"{'naive p50':>10} {'naive p95':>10} {'naive cpu':>10} {'ratio p95':>10} {'same':>5}  targets")
    print(head)
    print("-" * len(head))
    for r in rows:
        n = int(r["n"])
        for what in ("map", "search"):
            p50, p95 = float(r[f"{what}_p50"]), float(r[f"{what}_p95"])
            b50, b95 = float(r[f"base_{what}_p50"]), float(r[f"base_{what}_p95"])
            ratio = b95 / p95 if p95 else float("inf")
            targets = []
            if n >= 100_000:
                targets.append(f"p95<={TARGET_P95_MS:g}ms {'OK' if p95 <= TARGET_P95_MS else 'MISS'}")
            if n == 10_000:
                targets.append(f">={TARGET_RATIO:g}x {'OK' if ratio >= TARGET_RATIO else 'MISS'}")
            cpu95 = float(r[f"{what}_cpu_p95"])
            bcpu = float(r[f"base_{what}_cpu_p95"])
            print(f"{n:>7} {builds[n]:>8.1f} {r['queries']!s:>4} {what:<7} {p50:>8.2f} {p95:>8.2f} {cpu95:>8.2f} "
                  f"{b50:>10.1f} {b95:>10.1f} {bcpu:>10.1f} {ratio:>9.0f}x {'yes' if r['identical'] else 'NO':>5}  "
                  + ", ".join(targets))
    print()
    print("Map as the app pays it (a turn written with begin_turn before each Map, same connection, from an empty memo): "
          + ", ".join(f"{r['n']}: p50 {float(r['app_p50']):.2f} ms, p95 {float(r['app_p95']):.2f} ms "
                      f"(cpu p50 {float(r['app_cpu_p50']):.2f}, p95 {float(r['app_cpu_p95']):.2f})" for r in rows)
          + f"  [target at 100k: cpu p95 <= {TARGET_APP_MAP_MS:g} ms]")
    print("Map right after a consolidation commit (one on_match item written, tracked, before each Map): "
          + ", ".join(f"{r['n']}: p50 {float(r['commit_p50']):.2f} ms, p95 {float(r['commit_p95']):.2f} ms "
                      f"(cpu p95 {float(r['commit_cpu_p95']):.2f}; standing caches carried"
                      f" {r['commit_carried']}/{r['commit_requests']})" for r in rows))
    print("Map with the recall memo and the standing caches dropped before every request (as right after a"
          " write that changed an always item, or in a new process; before standing_carry, every Memory write): "
          + ", ".join(f"{r['n']}: p50 {float(r['cold_p50']):.2f} ms, p95 {float(r['cold_p95']):.2f} ms "
                      f"(cpu p95 {float(r['cold_cpu_p95']):.2f})" for r in rows))
    print(f"named-item recall ({NAMED_QUERIES} queries naming one on_match item by a phrase at most "
          f"{NAMED_MAX_SHARED} active items carry): "
          + ", ".join(f"{r['n']}: Map {r['named_map']}/{r['named']}, search {r['named_search']}/{r['named']}"
                      for r in rows))
    for r in rows:
        print(f"  {r['n']}: by field (queries, in Map, in search): "
              + ", ".join(f"{f} {v[0]}/{v[1]}/{v[2]}" for f, v in sorted(r['named_by_field'].items())))
    print("always items: " + ", ".join(f"{r['n']}: {r['always']}" for r in rows))
    print("p50/p95 are wall-clock; cpu p95 is this process's CPU time (steadier when other processes compete).")
    print("naive = full scan of every active item with the same term functions, measured in this run on "
          + ", ".join(f"{r['baseline_queries']} queries at {r['n']}" for r in rows) + ".")
    print("search hit rate (queries with >= 1 result): "
          + ", ".join(f"{r['n']}: {float(r['search_hit_rate']):.0%}" for r in rows))


def _cache_key() -> str:
    """Stores are rebuilt whenever what shapes them changes: the generator, the writer, the
    tokenizer, the schema or the build code."""
    h = hashlib.sha256()
    for rel in ("tests/support/recall_seed.py", "autopatch_tui/core/memory/item_writes.py",
                "autopatch_tui/core/recall/terms.py", "autopatch_tui/core/recall/paths.py",
                "autopatch_tui/core/recall/postings.py", "autopatch_tui/core/recall/phrase_index.py",
                "autopatch_tui/core/memory/schema.py"):
        h.update((ROOT / rel).read_bytes())
    for fn in (_bootstrap, _build_shard, build_store, _merge, _copy_index):
        h.update(inspect.getsource(fn).encode())
    h.update(repr((NOW, ALWAYS_RATE, SHARD_THRESHOLD)).encode())
    return h.hexdigest()[:16]


def _store(base: Path, n: int, workers: int, cache: bool) -> tuple[Path, list[str], float, bool]:
    folder = base / f"store-{n}"
    marker = folder / "built.json"
    if cache and marker.exists():
        info = json.loads(marker.read_text())
        return Path(info["repo"]), info["threads"], info["seconds"], True
    shutil.rmtree(folder, ignore_errors=True)
    repo, threads, secs = build_store(folder, n, workers)
    marker.write_text(json.dumps({"repo": str(repo), "threads": threads, "seconds": secs}))
    return repo, threads, secs, False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--no-cache", action="store_true",
                    help="build fresh stores in a temporary folder and delete them afterwards (by default "
                         "built stores are kept under the system temp folder and reused while their inputs "
                         "are unchanged)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the naive full-scan baseline (slow at 100k)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    cache = not args.no_cache
    base = (Path(tempfile.gettempdir()) / "autopatch-recall-bench" / _cache_key() if cache
            else Path(tempfile.mkdtemp(prefix="autopatch-recall-bench-")))
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="autopatch-recall-bench-home-"))
    for var in [v for v in os.environ if v.startswith("AUTOPATCH_")]:
        del os.environ[var]
    os.environ["AUTOPATCH_HOME"] = str(home)
    started = time.perf_counter()
    before = _calibrate()
    rows, builds = [], {}
    try:
        for n in sizes:
            repo, threads, secs, reused = _store(base, n, args.workers, cache)
            builds[n] = secs
            print(f"{'reused' if reused else 'built'} {n} items ({secs:.1f} s to build)", flush=True)
            rows.append(measure(repo, threads, n, args.queries, baseline=not args.no_baseline))
            print(f"measured {n} items", flush=True)
        report(rows, builds, (before, _calibrate()))
        print(f"\ntotal {time.perf_counter() - started:.0f} s (stores in {base})")
        return 0 if all(r["identical"] for r in rows) else 1
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if not cache:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
