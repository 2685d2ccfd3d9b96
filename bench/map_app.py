"""The Memory Map as the app pays it, alone: a turn written (`begin_turn`) before every Map, on one
connection, each session starting from an empty recall memo — with a per-phase CPU breakdown.

    .venv/bin/python bench/map_app.py [--size 100000] [--queries 100] [--sessions 5]

It reuses (or builds once) the store `bench/recall.py` builds for `--size` (same cache folder and
key), and the same request mix (English and Chinese queries, scoped and unscoped, ordinary and repair
intents alternating). Sessions alternate between:

- *new*: `build_map` as shipped (the standing lane's scope index, line costs and skip bytes shared
  per base, the fill's byte scan);
- *old path*: the same `build_map` with the standing lane computed and filled the way it was before
  — every path-scoped `always` row's applicability tested for each new scope, exact line costs per
  lane, every item of a lane walked — patched in for that session only, in this process.

Both must give the same Maps (checked: same lanes, same rendered text). Prints wall and CPU
p50/p95 per variant, the old/new ratio, and the mean CPU per phase over all requests and over the
slowest tenth (the first three requests of a session, which read the standing bases, excluded)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall as recall_bench  # noqa: E402  (its store builder and cache)
from _common import percentile  # noqa: E402

from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.recall import matching, memory_map  # noqa: E402
from autopatch_tui.core.recall import memo as recall_memo  # noqa: E402
from autopatch_tui.core.recall.query import RecallQuery, policy_for  # noqa: E402
from autopatch_tui.core.settings import load_settings  # noqa: E402
from tests.support.recall_seed import SyntheticCorpus, map_keys  # noqa: E402

BUDGET = recall_bench.MAP_BUDGET
PHASES = {  # label -> (owner, attribute)
    "standing lane (memo hit or new scope)": (memory_map, "_standing_lane"),
    "lexical gate (query + SQL + ranking)": (memory_map, "lexical_matches"),
    "  of which document frequencies": (matching, "common_terms"),
    "lane fills": (memory_map._Lane, "fill"),
    "query terms": (RecallQuery, "base_terms"),
}


def _old_specificities(self: memory_map._ScopeIndex, paths: tuple[str, ...]) -> dict[int, int]:
    """The pre-index way: every path-scoped row tested against the scope (cached per applies-to list)."""
    spec_of = matching._Specificity(paths)
    out = {}
    for i, r in enumerate(self.rows):
        s = spec_of(r["applies_to_paths"])
        if s >= 0:
            out[i] = s
    return out


@contextmanager
def old_path():
    init = memory_map._ScopeIndex.__init__
    lane_init = memory_map._Lane.__init__

    def keep_rows(self, rows):
        init(self, rows)
        self.rows = rows

    def own_exact(self, matches, bounds=None, min_bound=None, exact=None, segments=None):
        lane_init(self, matches, bounds, min_bound, None)  # one part, a fresh exact-cost dict per lane

    with mock.patch.object(memory_map._ScopeIndex, "__init__", keep_rows), \
            mock.patch.object(memory_map._ScopeIndex, "specificities", _old_specificities), \
            mock.patch.object(memory_map._Lane, "__init__", own_exact), \
            mock.patch.object(memory_map, "SKIP_SCAN_MIN", 10**9):  # every item walked
        yield


class Phases:
    def __init__(self) -> None:
        self.acc: dict[str, float] = {}
        self._patches = []

    def __enter__(self) -> "Phases":
        for label, (owner, name) in PHASES.items():
            fn = getattr(owner, name)

            def timed(*a, _fn=fn, _label=label, **k):
                c = time.process_time()
                try:
                    return _fn(*a, **k)
                finally:
                    self.acc[_label] = self.acc.get(_label, 0.0) + time.process_time() - c
            p = mock.patch.object(owner, name, timed)
            p.start()
            self._patches.append(p)
        return self

    def __exit__(self, *exc) -> None:
        for p in reversed(self._patches):
            p.stop()


def requests(conn, threads: list[str], n: int) -> list[tuple[RecallQuery, object, str]]:
    out = []
    for k, (text, paths) in enumerate(SyntheticCorpus().queries(conn, n, seed=2)):
        if k % 4 == 3:
            out.append((RecallQuery("code_audit", "", finding_path=(paths or ("src/a.py",))[0], finding_message=text),
                        policy_for("code_audit", None), text))
        else:
            out.append((RecallQuery("general_chat", text, paths), policy_for("general_chat", threads[k % len(threads)]),
                        text))
    return out


def session(mgr: MemoryManager, conn, reqs, per: list) -> list[tuple]:
    recall_memo.clear()
    maps = []
    for i, (query, policy, text) in enumerate(reqs):
        handle = mgr.begin_turn(text or "bench", intent=query.intent)
        with Phases() as ph:
            c = time.process_time()
            t = time.perf_counter()
            mm = memory_map.build_map(conn, query, policy, budget_tokens=BUDGET)
            wall = time.perf_counter() - t
            cpu = time.process_time() - c
        per.append((cpu, wall, i, ph.acc))
        maps.append((map_keys(mm), mm.render()))
        mgr.complete_turn(handle, "ok")
    return maps


def summarize(name: str, per: list) -> None:
    cpu = [p[0] for p in per]
    wall = [p[1] for p in per]
    print(f"{name:<9} {len(per):>5}  wall p50 {percentile(wall, 50) * 1000:6.2f} p95 {percentile(wall, 95) * 1000:6.2f} ms"
          f"   cpu p50 {percentile(cpu, 50) * 1000:6.2f} p95 {percentile(cpu, 95) * 1000:6.2f} ms")


def phases(name: str, per: list) -> None:
    rest = [p for p in per if p[2] > 2]
    cut = sorted(p[0] for p in rest)[int(0.9 * len(rest))]
    slow = [p for p in rest if p[0] >= cut]
    for title, sel in (("all requests", per), ("slowest tenth", slow)):
        total = sum(p[0] for p in sel) / len(sel) * 1000
        parts = ", ".join(f"{label.strip()} {sum(p[3].get(label, 0.0) for p in sel) / len(sel) * 1000:.2f}"
                          for label in PHASES)
        print(f"  {name}, {title} ({len(sel)}): mean cpu {total:.2f} ms = {parts}")


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--sessions", type=int, default=5, help="per variant; the variants alternate")
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    args = ap.parse_args()
    base = Path(tempfile.gettempdir()) / "autopatch-recall-bench" / recall_bench._cache_key()
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="autopatch-map-bench-home-"))
    for var in [v for v in os.environ if v.startswith("AUTOPATCH_")]:
        del os.environ[var]
    os.environ["AUTOPATCH_HOME"] = str(home)
    repo, threads, secs, reused = recall_bench._store(base, args.size, args.workers, True)
    print(f"{'reused' if reused else 'built'} the {args.size}-item store of bench/recall.py ({secs:.1f} s to build)")
    mgr = MemoryManager.open(repo, load_settings())
    try:
        conn = mgr.store.conn()
        reqs = requests(conn, threads, args.queries)
        for query, policy, _ in reqs[:10]:  # warm page cache, as in bench/recall.py
            memory_map.build_map(conn, query, policy, budget_tokens=BUDGET)
        calib = recall_bench._calibrate()
        new: list = []
        old: list = []
        same = True
        reference = None
        for _ in range(args.sessions):
            with old_path():
                got_old = session(mgr, conn, reqs, old)
            got_new = session(mgr, conn, reqs, new)
            reference = reference or got_new
            same &= got_old == got_new == reference
        print(f"CPU calibration: a 1M-iteration Python loop took {calib:.0f} ms (measured in this run)")
        print(f"Map after a turn write, {args.size} items, {args.queries} requests x {args.sessions} sessions per variant"
              " (each session from an empty memo; variants alternate):")
        summarize("old path", old)
        summarize("new", new)
        ratio = percentile([p[0] for p in old], 95) / percentile([p[0] for p in new], 95)
        print(f"old/new cpu p95: x{ratio:.2f}; same Maps (lanes and text, every session): {'yes' if same else 'NO'}"
              f"  [target: cpu p95 <= {recall_bench.TARGET_APP_MAP_MS:g} ms at 100k]")
        print("per-phase mean CPU (ms):")
        phases("old path", old)
        phases("new", new)
        return 0 if same else 1
    finally:
        mgr.close()
        import shutil

        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
