"""Memory the user steers (issue 31): two figures.

    .venv/bin/python bench/steering.py [--runs 10] [--items 12]

- **remember**: `memory remember TEXT` end to end with the stub model (127.0.0.1, scripted
  extraction and consolidation replies): in process (`steering.remember`: RAW turn, completion,
  extraction and consolidation steps, the receipt, the review mark) and as the CLI command (a fresh
  process, as a user runs it). The model's own time is measured around every provider call
  (`MemoryModel.call`); "beyond the model" = total - model time. Target: <= 1 s beyond the model.
  The CLI's figure also carries the process start; `memory status` in a fresh process is printed
  beside it as the baseline.
- **memory used record**: what the turn path pays for issue 31.3 when a request ends — the revision
  lookup of the items that reached it (`RequestContext.memory_used`) and the one `O_APPEND` write
  (`memory_used.record`) — for a request that saw `--items` items; baseline in the same run:
  `complete_turn` (the turn's own SQLite write). Target: <= 1 ms.

Wall and CPU, medians and p95; figures only, nothing asserted. On a shared machine these are
direction only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.memory import memory_used, steering  # noqa: E402
from autopatch_tui.core.memory.memory_used import UsedItem  # noqa: E402
from autopatch_tui.core.pipeline import model_io  # noqa: E402
from tests.support.llm_stub import StubLLMServer  # noqa: E402
from tests.support.memory_factory import add_item  # noqa: E402
from tests.support.pipeline_helpers import create_all, stub_settings  # noqa: E402


def _extraction(req) -> dict:
    turn = json.loads(req.messages[-1]["content"])["turns"][-1]
    return {"thread_checkpoint": "rules", "candidates": [{
        "kind": "project_decision", "subject": "package manager", "statement": "Use pnpm for installs.",
        "content": "", "strength": "hard", "origin": "explicit", "recall_mode": "always", "applies_to_paths": [],
        "aliases": [], "keywords": [], "sources": [{"turn_id": turn["turn_id"], "role": "user",
                                                   "quote": "always use pnpm for installs"}]}]}


def stats(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, int(round(0.95 * len(ordered))) - 1)]
    return f"median {statistics.median(values) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


def bench_remember(runs: int) -> None:
    model_time = [0.0]
    real_call = model_io.MemoryModel.call

    def timed(self, *a, **kw):
        t0 = time.perf_counter()
        try:
            return real_call(self, *a, **kw)
        finally:
            model_time[0] += time.perf_counter() - t0

    model_io.MemoryModel.call = timed  # type: ignore[method-assign]
    with StubLLMServer() as stub, tempfile.TemporaryDirectory() as tmp:
        stub.default("extraction", _extraction)
        stub.default("consolidation", create_all)
        os.environ["AUTOPATCH_HOME"] = str(Path(tmp) / "home")
        repo = Path(tmp) / "repo"
        repo.mkdir()
        mgr = MemoryManager(repo, stub_settings(stub))
        walls, cpus, beyond = [], [], []
        try:
            for n in range(runs + 1):
                model_time[0] = 0.0
                w0, c0 = time.perf_counter(), time.process_time()
                receipt = steering.remember(mgr, f"From now on always use pnpm for installs (run {n}).")
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
                assert receipt.remembered or receipt.refused is not None
                for item in receipt.remembered:
                    mgr.forget(item.id)  # the next run creates again (no identity clash)
                if n:  # the first run imports the pipeline and the SDK: reported apart
                    walls.append(wall)
                    cpus.append(cpu)
                    beyond.append(wall - model_time[0])
                else:
                    print(f"remember, first call in the process (imports): {wall * 1000:.1f} ms wall")
        finally:
            mgr.close()
        model_io.MemoryModel.call = real_call  # type: ignore[method-assign]
        print(f"remember in process, {runs} runs: wall {stats(walls)}; CPU {stats(cpus)}")
        print(f"  beyond the model's time: {stats(beyond)}  (target <= 1000 ms)")
        env = {**os.environ, "AUTOPATCH_LLM_BASE_URL": stub.base_url, "AUTOPATCH_LLM_MODEL": "gpt-4o",
               "AUTOPATCH_HOME": str(Path(tmp) / "home")}
        cli, base = [], []
        for n in range(3):
            for target, args in ((cli, ["memory", "remember", f"Always use pnpm for installs, take {n}."]),
                                 (base, ["memory", "status"])):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-I", "-m", "autopatch_tui", "--repo", str(repo), *args],
                               env=env, cwd=tmp, capture_output=True, check=False)
                target.append(time.perf_counter() - t0)
        print(f"CLI `memory remember` (fresh process): {stats(cli)}; baseline `memory status`: {stats(base)};"
              f" ratio {statistics.median(cli) / statistics.median(base):.2f}")


def bench_record(runs: int, items: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AUTOPATCH_HOME"] = str(Path(tmp) / "home")
        repo = Path(tmp) / "repo"
        repo.mkdir()
        from autopatch_tui.core.settings import load_settings

        mgr = MemoryManager(repo, load_settings({**os.environ}))
        conn = mgr.store.conn()
        seeded = [add_item(conn, subject=f"subject {i}", statement=f"Statement number {i}.") for i in range(items)]
        revs = {r[0]: r[1] for r in conn.execute("SELECT logical_id, id FROM memory_items")}
        used = [(s.logical_id, revs[s.logical_id], "matched", None) for s in seeded]
        rec, base = [], []
        rec_cpu = []
        for n in range(runs):
            h = mgr.begin_turn(f"question {n}")
            w0, c0 = time.perf_counter(), time.process_time()
            number = dict(conn.execute("SELECT id, revision FROM memory_items WHERE id IN (SELECT value FROM"
                                       " json_each(?))", (json.dumps([u[1] for u in used]),)).fetchall())
            memory_used.record(mgr.paths, h.turn_id, memory_used.merge(
                [UsedItem(lid, number[rev], how, via) for lid, rev, how, via in used]))
            rec.append(time.perf_counter() - w0)
            rec_cpu.append(time.process_time() - c0)
            t0 = time.perf_counter()
            mgr.complete_turn(h, "answer")
            base.append(time.perf_counter() - t0)
        mgr.close()
        print(f"memory used record ({items} items), {runs} requests: wall {stats(rec)}; CPU {stats(rec_cpu)}"
              "  (target <= 1 ms)")
        print(f"  baseline complete_turn: wall {stats(base)}; ratio record/complete_turn "
              f"{statistics.median(rec) / statistics.median(base):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--items", type=int, default=12)
    args = ap.parse_args()
    bench_remember(args.runs)
    bench_record(max(args.runs * 20, 100), args.items)


if __name__ == "__main__":
    main()
