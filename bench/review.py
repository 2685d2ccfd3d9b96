"""Review and audit benchmark (issue 21): `memory audit` and the Memory Map in approval mode.

    .venv/bin/python bench/review.py [--sizes 1000,10000,100000] [--queries 100]

Uses the synthetic stores of `bench/recall.py` (built there, or reused from its cache). For each size:

- **audit**: `MemoryManager.audit()` (duplicates, conflicts, stale paths; what `memory audit` runs),
  3 runs, wall and CPU time. Target: <= 1 s at 10k active items. The synthetic repository has no
  files, so every path entry is checked and found stale (the literal ones by `lstat`, the globs
  against an empty listing): the path check costs its most, the file listing its least.
- **Map, approval auto vs review** in the same process, same requests: `auto` (nothing hidden) and
  `review` with 90 % of the items kept (only kept revisions pass, in both lanes: the policy's
  allow-list), from a warm memo; then `review` right after a keep (the marks changed: they are read
  again and a filtered standing base built) and right after an item write (the memo starts over too).
Wall and CPU p50/p95 per request; ratios review/auto of the CPU p95. Figures are printed, never
asserted; the machine may be shared (a CPU calibration loop is printed before and after).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import recall as recall_bench  # noqa: E402  (bench/recall.py: the stores and the timing helpers)

from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.memory import change_journal, review_marks  # noqa: E402
from autopatch_tui.core.memory.item_writes import insert_revision, unindex  # noqa: E402
from autopatch_tui.core.memory.items import bump_data_version  # noqa: E402
from autopatch_tui.core.memory.sqlite import write_txn  # noqa: E402
from autopatch_tui.core.recall.memory_map import build_map  # noqa: E402
from autopatch_tui.core.recall.query import RecallQuery  # noqa: E402
from autopatch_tui.core.settings import load_settings  # noqa: E402
from tests.support.recall_seed import SyntheticCorpus, fields  # noqa: E402

AUDIT_RUNS = 3
KEPT_SHARE = 0.9
TARGET_AUDIT_S = 1.0


def _stats(wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {"p50": recall_bench._pct(wall, .5), "p95": recall_bench._pct(wall, .95),
            "cpu_p50": recall_bench._pct(cpu, .5), "cpu_p95": recall_bench._pct(cpu, .95)}


def measure_audit(mgr: MemoryManager) -> dict[str, object]:
    wall, cpu = [], []
    report = None
    for _ in range(AUDIT_RUNS):
        dt, report = recall_bench._time(mgr.audit, cpu)
        wall.append(dt)
    assert report is not None
    return {"audit_wall": min(wall), "audit_wall_max": max(wall), "audit_cpu": min(cpu), "checked": report.checked,
            "duplicates": len(report.duplicates), "conflicts": len(report.conflicts),
            "stale": len(report.stale_paths)}


def _requests(mgr: MemoryManager, threads: list[str], queries: int) -> list[tuple[str, RecallQuery, str | None]]:
    conn = mgr.store.conn()
    out = []
    for k, (text, paths) in enumerate(SyntheticCorpus().queries(conn, queries, seed=2)):
        if k % 4 == 3:
            out.append(("code_audit", RecallQuery("code_audit", "", finding_path=(paths or ("src/a.py",))[0],
                                                  finding_message=text), None))
        else:
            out.append(("general_chat", RecallQuery("general_chat", text, paths), threads[k % len(threads)]))
    return out


def _maps(mgr: MemoryManager, requests: list, before_each=None) -> tuple[list[float], list[float]]:
    conn = mgr.store.conn()
    wall: list[float] = []
    cpu: list[float] = []
    for intent, query, thread in requests:
        if before_each is not None:
            before_each()

        def one() -> object:
            policy = mgr.review.policy(intent, thread, conn)  # what a request pays: the policy, then the Map
            return build_map(conn, query, policy, budget_tokens=recall_bench.MAP_BUDGET)

        dt, _ = recall_bench._time(one, cpu)
        wall.append(dt)
    return wall, cpu


def measure_maps(mgr: MemoryManager, threads: list[str], queries: int) -> dict[str, object]:
    conn = mgr.store.conn()
    requests = _requests(mgr, threads, queries)
    ids = [r[0] for r in conn.execute("SELECT id FROM memory_items WHERE status = 'active' ORDER BY row_id")]
    rng = random.Random(3)
    kept = frozenset(i for i in ids if rng.random() < KEPT_SHARE)
    stamp = review_marks.store_stamp(conn)
    review_marks.update_kept(mgr.paths, stamp, lambda _: kept)
    out: dict[str, object] = {"hidden": len(ids) - len(kept)}
    mgr.review.set_approval("auto", persist=False)
    _maps(mgr, requests[:10])  # warm-up
    out["auto"] = _stats(*_maps(mgr, requests))
    mgr.review.set_approval("review", persist=False)
    _maps(mgr, requests[:10])
    out["review"] = _stats(*_maps(mgr, requests))
    spare = [i for i in ids if i not in kept]

    def a_keep() -> None:  # the marks change before every request
        review_marks.update_kept(mgr.paths, stamp, lambda k: k | {spare.pop()} if spare else k)

    out["after_keep"] = _stats(*_maps(mgr, requests, a_keep))
    added: list[int] = []
    n = [0]

    def a_write() -> None:  # one on_match item written (tracked, as a consolidation commit) before every request
        n[0] += 1
        with change_journal.tracked(conn), write_txn(conn):
            row, _ = insert_revision(conn, fields(subject=f"bench review item {n[0]}", statement="A new rule.",
                                                  keywords=("bench",)), logical_id=None, revision=1,
                                     now=recall_bench.NOW + 10_000 + n[0])
            bump_data_version(conn)
        added.append(row)

    out["after_write"] = _stats(*_maps(mgr, requests, a_write))
    with write_txn(conn):  # the cached store stays as it was built
        marks = ",".join("?" * len(added))
        for row_id in added:
            unindex(conn, row_id)
        conn.execute(f"DELETE FROM memory_items WHERE row_id IN ({marks})", added)
        bump_data_version(conn)
    mgr.review.set_approval("auto", persist=False)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    args = ap.parse_args(argv)
    base = Path(tempfile.gettempdir()) / "autopatch-recall-bench" / recall_bench._cache_key()
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="autopatch-review-bench-home-"))
    for var in [v for v in os.environ if v.startswith("AUTOPATCH_")]:
        del os.environ[var]
    os.environ["AUTOPATCH_HOME"] = str(home)
    before = recall_bench._calibrate()
    rows = []
    try:
        for n in (int(s) for s in args.sizes.split(",") if s):
            repo, threads, secs, reused = recall_bench._store(base, n, args.workers, True)
            print(f"{'reused' if reused else 'built'} {n} items ({secs:.1f} s to build)", flush=True)
            mgr = MemoryManager.open(repo, load_settings())
            try:
                row = {"n": n, **measure_audit(mgr), **measure_maps(mgr, threads, args.queries)}
            finally:
                review_marks.reset(mgr.paths, time.time())  # the cached store keeps no marks
                mgr.close()
            rows.append(row)
            print(f"measured {n} items", flush=True)
        after = recall_bench._calibrate()
        print(f"\nCPU calibration: a 1M-iteration Python loop took {before:.0f} ms before and {after:.0f} ms after\n")
        print("memory audit (best of 3; wall, CPU):")
        for r in rows:
            ok = "ok" if r["n"] != 10_000 or r["audit_wall"] <= TARGET_AUDIT_S else "MISSED"
            print(f"  {r['n']:>7} items: wall {r['audit_wall'] * 1000:8.1f} ms (max {r['audit_wall_max'] * 1000:.1f}),"
                  f" CPU {r['audit_cpu'] * 1000:8.1f} ms  — {r['duplicates']} duplicate groups, {r['conflicts']}"
                  f" conflicts, {r['stale']} stale  [{ok} at <= 1 s for 10k]")
        print("\nMap per request, ms (p50 / p95 wall; p50 / p95 CPU); review mode hides the unreviewed 10 %:")
        for r in rows:
            print(f"  {r['n']} items ({r['hidden']} hidden in review mode):")
            for key in ("auto", "review", "after_keep", "after_write"):
                s = r[key]
                ratio = s["cpu_p95"] / r["auto"]["cpu_p95"] if r["auto"]["cpu_p95"] else float("nan")
                print(f"    {key:<11} {s['p50']:7.2f} / {s['p95']:7.2f}   CPU {s['cpu_p50']:7.2f} / {s['cpu_p95']:7.2f}"
                      f"   CPU p95 x{ratio:.2f} of auto")
        return 0
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())



