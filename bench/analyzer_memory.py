"""The smallest address-space limit (RLIMIT_AS, to 64 MiB) with which each analyzer still audits a
real repository exactly as without a limit — the figure behind RUFF_MEMORY_LIMIT and
SEMGREP_MEMORY_LIMIT (docs/repair.md).

    .venv/bin/python bench/analyzer_memory.py PYTHON_CHECKOUT JAVA_CHECKOUT

e.g. clones of pallets/click and jhy/jsoup. Without arguments it says so and measures nothing."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from autopatch_tui.core.repair.analyzers.base import Analyzer, AnalyzerError
from autopatch_tui.core.repair.analyzers.ruff import RuffAnalyzer
from autopatch_tui.core.repair.analyzers.semgrep import SemgrepAnalyzer
from autopatch_tui.core.repair.scanner import Scanner


def outcome(make: Callable[[int | None], Analyzer], repo: Path, files: list[str], limit: int | None) -> object:
    try:
        analysis = make(limit).analyze(repo, files)
    except AnalyzerError:
        return None
    return len(analysis.findings), len(analysis.unparsed)


def smallest_limit(name: str, make: Callable[[int | None], Analyzer], repo: Path, suffix: str) -> None:
    files = [f for f in Scanner(repo, []).files() if f.endswith(suffix)]
    wall, cpu = time.perf_counter(), time.process_time()
    unlimited = outcome(make, repo, files, None)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    low, high = 64, 16384  # MiB
    while high - low > 64:
        mid = (low + high) // 2
        if outcome(make, repo, files, mid << 20) == unlimited:
            high = mid
        else:
            low = mid
    print(f"{name}: {len(files)} files, (findings, unparsed) {unlimited}, unlimited run {wall:.1f} s wall "
          f"({cpu:.2f} s CPU in this process); smallest RLIMIT_AS giving the same result: ~{high} MiB", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("analyzer_memory: give a Python and a Java checkout (e.g. pallets/click, jhy/jsoup); nothing measured")
        return 0
    smallest_limit("ruff", lambda limit: RuffAnalyzer(memory_limit=limit), Path(argv[0]), ".py")
    smallest_limit("semgrep", lambda limit: SemgrepAnalyzer(memory_limit=limit), Path(argv[1]), ".java")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
