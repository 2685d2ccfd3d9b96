"""Listings that page (issue 33): `memory list`, `memory review`, `memory audit` and `memory search`
as whole CLI processes, first page (`--limit 50 --json`) against the whole listing (`--json`,
streamed), and `memory export` (streamed), on an empty store and on the synthetic stores of `bench/recall.py` (built there, or
reused from its cache), in one run.

    .venv/bin/python bench/pages.py [--sizes 1000,10000,100000] [--runs 3]

Prints per command and size: wall, CPU (the child's user + system) and peak RSS of the process
(best of `--runs` by CPU), the bytes it printed, the ratio of the first page to the same command on
the empty store (goal: <= 1.5x for list and review), and the growth exponent of the whole listing
and of the audit from the smallest to the largest size (log CPU ratio / log size ratio)."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bench.recall as recall_bench  # noqa: E402
from bench._common import environment_line, make_repo, table  # noqa: E402

COMMANDS = {
    "list, first page": ["memory", "list", "--limit", "50", "--json"],
    "list, everything": ["memory", "list", "--json"],
    "review, first page": ["memory", "review", "--limit", "50", "--json"],
    "review, everything": ["memory", "review", "--json"],
    "audit, first page": ["memory", "audit", "--limit", "50", "--json"],
    "search, first page": ["memory", "search", "config loader", "--limit", "5", "--json"],
    "export (streamed)": ["memory", "export", "--to", "{out}", "--json"],
}


def run(repo: Path, args: list[str], env: dict[str, str]) -> dict[str, float]:
    """One CLI process: wall, its own CPU and peak RSS (`wait4`), the bytes it printed."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "autopatch_tui", *args, "--repo", str(repo)], stdout=out,
                                stderr=err, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        size = out.seek(0, os.SEEK_END)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} exited {proc.returncode}: {err.read().decode(errors='replace')[-300:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024, "bytes": size}


def best(repo: Path, args: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    """The run with the least CPU; `{out}` in `args` is a fresh folder, removed after each run."""
    results = []
    for _ in range(runs):
        out = Path(tempfile.mkdtemp(prefix="autopatch-pages-bench-out-"))
        try:
            results.append(run(repo, [a.replace("{out}", str(out)) for a in args], env))
        finally:
            shutil.rmtree(out, ignore_errors=True)
    return min(results, key=lambda m: m["cpu"])


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    base = Path(tempfile.gettempdir()) / "autopatch-recall-bench" / recall_bench._cache_key()
    base.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="autopatch-pages-bench-home-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_")}
    env["AUTOPATCH_HOME"] = str(home)
    try:
        print(environment_line(home))
        stores: list[tuple[str, Path]] = [("empty", make_repo(home, "empty"))]
        run(stores[0][1], ["memory", "status", "--json"], env)  # create the empty store
        for n in sizes:
            repo, _, secs, reused = recall_bench._store(base, n, args.workers, True)
            print(f"{'reused' if reused else 'built'} {n:,} items ({secs:.1f} s to build)", flush=True)
            stores.append((f"{n:,}", repo))
        results: dict[tuple[str, str], dict[str, float]] = {}
        for name, repo in stores:
            for label, command in COMMANDS.items():
                results[(label, name)] = best(repo, command, env, args.runs)
        rows = []
        for label in COMMANDS:
            empty = results[(label, "empty")]
            for name, _ in stores:
                m = results[(label, name)]
                rows.append([label, name, f"{m['wall'] * 1000:.0f} ms", f"{m['cpu'] * 1000:.0f} ms",
                             f"{m['rss']:.0f} MB", f"{m['bytes'] / 1024:,.0f} KB",
                             f"{m['cpu'] / empty['cpu']:.2f}x", f"{m['wall'] / empty['wall']:.2f}x"])
        table(["command", "store", "wall", "CPU", "peak RSS", "printed", "CPU / empty", "wall / empty"], rows)
        if len(sizes) >= 2:
            lo, hi = f"{sizes[0]:,}", f"{sizes[-1]:,}"
            print(f"\ngrowth exponent from {lo} to {hi} items (log CPU ratio / log size ratio):")
            for label in COMMANDS:
                a, b = results[(label, lo)]["cpu"], results[(label, hi)]["cpu"]
                print(f"  {label:<20} {math.log(b / a) / math.log(sizes[-1] / sizes[0]):.2f}")
        return 0
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
