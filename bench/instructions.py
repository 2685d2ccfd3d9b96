"""Instruction files: what they add to building a prompt, and `memory promote` as a whole process.

Prints:
- building one request's prompt through the request door (`RequestContext.prompt`: instruction
  files, checkpoint, Memory Map, history) on a store of 1000 items, in a repository without
  instruction files and in one with 20 nested `AGENTS.md` (the request scoped to the deepest
  folder), interleaved in the same process: median and p95 wall and CPU per request, and what the
  files add (target: <= 2 ms). Steady state (files unchanged since the last request: one stat per
  candidate, no read) and with every file changed before each request (all read again);
- `memory promote` of 50 items as a whole process (fresh `python -m autopatch_tui` processes),
  writing a new `AGENTS.md` and re-running with nothing to write, beside `python -c "import sqlite3"`
  and `memory list --json` measured in the same run, interleaved (target: <= 200 ms): median wall
  and CPU (the children's user + system time), and the ratios.

The machine may be shared: compare the ratios measured in the same run, not figures across runs.
Run: .venv/bin/python bench/instructions.py [--requests 300] [--runs 9]"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, bench_settings, environment_line, ms, percentile, table, temp_dir, verdict

from autopatch_tui.core.agent import context as ctx
from autopatch_tui.core.agent.request_context import RequestContext
from autopatch_tui.core.instructions import files as inst
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.recall.query import RecallQuery
from tests.support.recall_seed import seed_many

DEPTH = 20
ITEMS = 1000
PROMOTED = 50
RULE = "Run `make check` before proposing a patch; keep functions short; log with the module logger.\n"


def make_store(repo: Path, home: Path, nested: bool) -> MemoryManager:
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    folder = repo
    for depth in range(DEPTH + 1):
        if nested:
            (folder / "AGENTS.md").write_text(f"# Rules at depth {depth}\n" + RULE * 4, "utf-8")
        if depth < DEPTH:
            folder = folder / f"d{depth + 1}"
            folder.mkdir()
    (folder / "code.py").write_text("x = 1\n", "utf-8")
    settings = bench_settings(home, llm_base_url="http://127.0.0.1:9/v1", llm_model="gpt-4o")
    mgr = MemoryManager.open(repo, settings)
    words = ("cache", "retry", "parser", "logging", "tests", "build", "deploy", "schema", "queue", "config")
    seed_many(mgr.store.conn(), [
        {"subject": f"{words[n % 10]} rule {n}", "statement": f"The {words[n % 10]} rule number {n} applies.",
         "keywords": [words[n % 10], words[(n + 3) % 10]], "recall_mode": "always" if n % 20 == 0 else "on_match"}
        for n in range(ITEMS)])
    return mgr


def scope(repo: Path) -> str:
    return "/".join(f"d{n}" for n in range(1, DEPTH + 1)) + "/code.py"


def one_prompt(mgr: MemoryManager, rel: str) -> tuple[float, float]:
    thread = mgr.active_thread_id()
    handle = turn_ops.TurnHandle("turn-bench", thread, 10**9, "general_chat", (rel,), (rel,))
    query = RecallQuery("general_chat", "how does the retry cache work in the parser?", (rel,))
    wall, cpu = time.perf_counter(), time.thread_time()
    req = RequestContext(mgr, handle, "general_chat", query)
    req.prompt(ctx.system_text("general_chat"), query.user_text, schemas=[])
    req.close()
    return time.perf_counter() - wall, time.thread_time() - cpu


def touch_all(repo: Path, n: int) -> None:
    """Every instruction file changed (new content and size): the next request reads each again."""
    for path in repo.rglob("AGENTS.md"):
        path.write_text(f"# Rules, version {n}\n" + RULE * (4 + n % 2), "utf-8")


def bench_prompt(base: Path, requests: int) -> bool:
    plain = make_store(base / "plain", base / "home-a", nested=False)
    nested = make_store(base / "nested", base / "home-b", nested=True)
    rel = scope(nested.repo)
    got = RequestContext(nested, turn_ops.TurnHandle("t", nested.active_thread_id(), 10**9, "general_chat",
                                                     (rel,), (rel,)), "general_chat",
                         RecallQuery("general_chat", "x", (rel,)))
    got.prompt("system", "x", schemas=[])
    print(f"instruction files loaded for {rel}: {len(got.instructions.files)} "
          f"({sum(len(f.text.encode()) for f in got.instructions.files)} bytes)")
    got.close()
    for mgr in (plain, nested):  # warm: imports, the recall memo, the standing lane
        for _ in range(20):
            one_prompt(mgr, rel)
    runs: dict[str, list[tuple[float, float]]] = {"none": [], "20 nested": [], "20 nested, all changed": []}
    for n in range(requests):
        runs["none"].append(one_prompt(plain, rel))
        runs["20 nested"].append(one_prompt(nested, rel))
        touch_all(nested.repo, n)
        runs["20 nested, all changed"].append(one_prompt(nested, rel))
    plain.close()
    nested.close()
    rows = []
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    for name, values in runs.items():
        walls, cpus = [w for w, _ in values], [c for _, c in values]
        rows.append([name, ms(med[name][0]), ms(percentile(walls, 95)), ms(med[name][1]), ms(percentile(cpus, 95)),
                     f"{med[name][1] / med['none'][1]:.2f}x"])
    table(["instruction files", "wall p50", "wall p95", "CPU p50", "CPU p95", "CPU vs none"], rows)
    added = med["20 nested"][1] - med["none"][1]
    added_changed = med["20 nested, all changed"][1] - med["none"][1]
    print(f"added by 20 nested AGENTS.md (CPU p50): {ms(added)} unchanged files, {ms(added_changed)} all changed "
          f"— target <= 2 ms: {verdict(added <= 0.002)}")
    return added <= 0.002


def child_times() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), child_times()
    proc = subprocess.run(argv, env=env, capture_output=True)
    return time.perf_counter() - wall, child_times() - cpu, proc.returncode


def bench_promote(base: Path, runs: int) -> bool:
    repo = base / "promote"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    home = base / "home-p"
    mgr = MemoryManager.open(repo, bench_settings(home))
    handle = mgr.begin_turn("please keep these fifty rules")
    mgr.complete_turn(handle, "ok")
    seeded = seed_many(mgr.store.conn(), [
        {"subject": f"rule {n}", "statement": f"Rule number {n} of the team applies everywhere.",
         "sources": [(handle.turn_id, "user", f"rule {n} applies everywhere")]} for n in range(PROMOTED)])
    mgr.close()
    ids = [s.logical_id for s in seeded]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_")}
    env.update(AUTOPATCH_HOME=str(home), PYTHONPATH=str(ROOT))
    py = sys.executable
    cli = [py, "-m", "autopatch_tui", "--repo", str(repo)]
    commands = {
        'python -c "import sqlite3"': [py, "-c", "import sqlite3"],
        "memory list --json": [*cli, "memory", "list", "--json"],
        f"memory promote ({PROMOTED} items, new file) --yes": [*cli, "memory", "promote", *ids, "--yes", "--json"],
        f"memory promote ({PROMOTED} items, nothing to write)": [*cli, "memory", "promote", *ids, "--yes", "--json"],
    }
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    agents = repo / "AGENTS.md"
    for n in range(runs + 1):
        for name, argv in commands.items():
            if "new file" in name:
                agents.unlink(missing_ok=True)
            wall, cpu, rc = run(argv, env)
            if rc != 0:
                raise SystemExit(f"{name} failed with rc {rc}")
            if n:  # the first round warms the file cache
                results[name].append((wall, cpu))
    doc = json.loads(subprocess.run(commands[f"memory promote ({PROMOTED} items, nothing to write)"], env=env,
                                    capture_output=True, text=True).stdout)
    assert doc["written"] is False and len(doc["promoted"]) == PROMOTED
    base_wall = statistics.median(w for w, _ in results['python -c "import sqlite3"'])
    list_cpu = statistics.median(c for _, c in results["memory list --json"])
    rows = []
    for name, values in results.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        rows.append([name, ms(wall), ms(cpu), f"{wall / base_wall:.1f}x", f"{cpu / list_cpu:.2f}x"])
    table(["whole process (median)", "wall", "CPU", "wall vs import sqlite3", "CPU vs memory list"], rows)
    worst = max(statistics.median(w for w, _ in v) for k, v in results.items() if "promote" in k)
    print(f"memory promote of {PROMOTED} items, whole process: {ms(worst)} wall (the slower case) — "
          f"target <= 200 ms: {verdict(worst <= 0.2)}")
    return worst <= 0.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with temp_dir("bench-instructions-") as base:
        print(environment_line(base))
        print()
        inst.clear_cache()
        bench_prompt(base, args.requests)
        print()
        bench_promote(base, args.runs)


if __name__ == "__main__":
    main()
