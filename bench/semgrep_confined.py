"""Semgrep confined against a bare run (issue #33 item 5): the same rule pack on the same files of
one checkout, in the same process, three ways:

- **bare**: `semgrep scan` in the checkout with the user's environment, the files named relative
  to it — what a developer would run by hand (the floor);
- **product**: `SemgrepAnalyzer.analyze` exactly as `/audit` runs it (private HOME, git disabled,
  the repository as working folder, absolute targets, RLIMIT_AS wrapper);
- **private working folder** (the layout before this change, for the before/after in one run):
  the product's argv and environment, run from the private temporary folder.

Prints per way: findings, wall time and the children's CPU (user + system, `os.times()`), and the
ratio of CPU and wall to the bare run. Run:
    .venv/bin/python bench/semgrep_confined.py [CHECKOUT] [--runs N]
Without CHECKOUT a 200-file generated Java tree (bench/scan.py's) is used; the figures quoted in
docs/performance.md are on a clone of jhy/jsoup (197 Java files)."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import environment_line, make_repo, table, temp_dir  # noqa: E402
from bench.scan import java_tree  # noqa: E402
from autopatch_tui.core.repair.analyzers.base import file_args, run_tool  # noqa: E402
from autopatch_tui.core.repair.analyzers.semgrep import (  # noqa: E402
    NAME,
    SemgrepAnalyzer,
    find_semgrep,
    private_env,
)
from autopatch_tui.core.repair.languages import JAVA, language_of  # noqa: E402


def java_files(repo: Path) -> list[str]:
    return sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.java")
                  if ".git" not in p.parts and language_of(p.name) == JAVA)


def measure(fn: Callable[[], int], runs: int) -> dict[str, float]:
    best: dict[str, float] | None = None
    for _ in range(runs):
        t0, c0 = time.perf_counter(), os.times()
        findings = fn()
        t1, c1 = time.perf_counter(), os.times()
        m = {"wall": t1 - t0, "cpu": (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system),
             "findings": findings}
        best = m if best is None or m["cpu"] < best["cpu"] else best
    assert best is not None
    return best


def bare(binary: str, analyzer: SemgrepAnalyzer, repo: Path, files: list[str]) -> Callable[[], int]:
    def run() -> int:
        argv = analyzer.argv(binary, analyzer.configs(files), files)
        out = subprocess.run(argv, cwd=repo, capture_output=True, check=False)
        return len(json.loads(out.stdout)["results"])
    return run


def product(analyzer: SemgrepAnalyzer, repo: Path, files: list[str]) -> Callable[[], int]:
    return lambda: len(analyzer.analyze(repo, files).findings)


def private_cwd(binary: str, analyzer: SemgrepAnalyzer, repo: Path, files: list[str]) -> Callable[[], int]:
    def run() -> int:
        with tempfile.TemporaryDirectory(prefix="autopatch-semgrep-") as private:
            env = private_env(Path(private))
            work = Path(private) / "work"
            work.mkdir()
            n = 0
            for chunk in file_args(files, base=repo):
                out = run_tool(NAME, analyzer.argv(binary, analyzer.configs(files), chunk), cwd=work,
                               timeout=analyzer.timeout, env=env, memory_limit=analyzer.memory_limit)
                n += len(json.loads(out.stdout)["results"])
            return n
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=1, help="runs per way; the lowest CPU is shown")
    args = parser.parse_args()
    binary = find_semgrep()
    if binary is None:
        sys.exit("semgrep is not installed (the `semgrep` extra)")
    with temp_dir("autopatch-bench-semgrep-") as tmp:
        print(environment_line(tmp))
        if args.checkout is not None:
            repo = args.checkout.resolve()
        else:
            repo = make_repo(tmp)
            java_tree(repo, 200, random.Random(7))
        files = java_files(repo)
        analyzer = SemgrepAnalyzer()
        base = measure(bare(binary, analyzer, repo, files), args.runs)
        rows = []
        for name, m in (("bare semgrep in the checkout (floor)", base),
                        ("product: confined, repository as working folder",
                         measure(product(analyzer, repo, files), args.runs)),
                        ("before: confined, private working folder",
                         measure(private_cwd(binary, analyzer, repo, files), args.runs))):
            rows.append([name, int(m["findings"]), f"{m['wall']:.2f} s", f"{m['cpu']:.2f} s",
                         f"{m['cpu'] / base['cpu']:.2f}x", f"{m['wall'] / base['wall']:.2f}x"])
        print(f"{len(files)} Java files in {repo.name}")
        table(["way", "findings", "wall", "CPU (children)", "CPU / bare", "wall / bare"], rows)


if __name__ == "__main__":
    main()
