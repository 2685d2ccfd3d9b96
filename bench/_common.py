"""Shared helpers for the benchmarks in this folder (not a benchmark itself).

Every benchmark runs standalone from the project root (`.venv/bin/python bench/X.py`), works in a
temporary directory, and talks to nothing but an optional stub server on 127.0.0.1. Figures are
printed, never asserted."""

from __future__ import annotations

import math
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `autopatch_tui` and `tests.support` from the checkout
    sys.path.insert(0, str(ROOT))


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty sequence."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(k, len(ordered)) - 1]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = "  ".join("-" * w for w in widths)
    print("  ".join(h.ljust(w) for h, w in zip(cells[0], widths)))
    print(line)
    for r in cells[1:]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def environment_line(tmp: Path) -> str:
    fs = "?"
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:  # the file system of the temp dir
            best = ""
            for line in fh:
                parts = line.split()
                if len(parts) > 2 and str(tmp).startswith(parts[1]) and len(parts[1]) >= len(best):
                    best, fs = parts[1], parts[2]
    except OSError:
        pass
    load = "/".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPU(s), "
            f"load average {load}, temp dir {tmp} on {fs}")


@contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def bench_settings(home: Path, **overrides: object):  # -> Settings
    """Settings isolated from the caller's environment and config file (AUTOPATCH_HOME = `home`)."""
    from autopatch_tui.core.settings import load_settings

    home.mkdir(parents=True, exist_ok=True)
    return load_settings({"AUTOPATCH_HOME": str(home)}, **overrides)


def make_repo(base: Path, name: str = "project") -> Path:
    """A plain project folder (not a git repository: the folder itself is the repo)."""
    repo = base / name
    repo.mkdir(parents=True, exist_ok=True)
    return repo.resolve()


if __name__ == "__main__":
    print("bench/_common.py holds shared helpers; run bench/turns.py or bench/pipeline.py")
