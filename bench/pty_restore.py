"""The thread restore at start (issue 33 item 3, issue 30 item 2): how long after the first frame the
last screenful of the previous thread is drawn, for a thread of 30 and of 3,000 turns.

Each case seeds a store (no model configured: the turns are written through `MemoryManager`, each
answer a few lines of Markdown), spawns `python -m autopatch_tui` on a pty of 120x40 and measures
first frame (spawn -> "Quit" in the footer) and the newest turn's text drawn (its unique marker),
both wall; the app's CPU until it exits. The restore figure is "marker drawn - first frame".
Goal: <= 150 ms at any thread length. Figures are printed, never asserted; on a loaded machine they
are direction only.

Run: .venv/bin/python bench/pty_restore.py [--turns 30,3000] [--runs 3]"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pty_start as P

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import bench_settings, environment_line, make_repo  # noqa: E402

ANSWER = ("The parser reads the file in **two passes**:\n\n1. tokens, with their positions;\n"
          "2. the tree, checked against `schema.json`.\n\nSee `src/parser.py` for the details.")


def seed(repo: Path, home: Path, turns: int) -> str:
    from autopatch_tui.core.manager import MemoryManager

    mgr = MemoryManager.open(repo, bench_settings(home))
    try:
        for n in range(turns):
            marker = f"QZX{n:05d}W"
            mgr.complete_turn(mgr.begin_turn(f"question {n}: how does the parser work? {marker}"), ANSWER)
    finally:
        mgr.close()
    return f"QZX{turns - 1:05d}W"


def one(repo: Path, env: dict[str, str], marker: bytes) -> dict[str, float]:
    t0 = time.perf_counter()
    pid, fd = P.spawn_app(repo, env, (120, 40))
    buf = bytearray()
    try:
        first = P._read_until(fd, buf, lambda text: P.MARKER in text, t0 + 60)
        if first is None:
            raise RuntimeError("no first frame within 60 s")
        drawn = P._read_until(fd, buf, lambda text: marker in text, t0 + 60)
        usage = P.quit_app(pid, fd, buf)
        return {"first": first - t0, "restore": (drawn - first) if drawn is not None else float("nan"),
                "cpu": usage.ru_utime + usage.ru_stime}
    finally:
        P.close_app(pid, fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", default="30,3000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-restore-") as tmp:
        base = Path(tmp)
        print(environment_line(base))
        for count in (int(x) for x in args.turns.split(",")):
            repo = make_repo(base, f"repo{count}")
            home = base / f"home{count}"
            t = time.perf_counter()
            marker = seed(repo, home, count).encode()
            seeded = time.perf_counter() - t
            env = P.app_env(home)
            one(repo, env, marker)  # warm-up: bytecode caches, the store's first open
            runs = [one(repo, env, marker) for _ in range(args.runs)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            each = ", ".join(f"{r['restore'] * 1000:.0f}" for r in runs)
            print(f"{count} turns (seeded in {seeded:.1f} s): first frame {med['first'] * 1000:.0f} ms;"
                  f" last screenful drawn {med['restore'] * 1000:.0f} ms after it"
                  f" (runs: {each} ms);"
                  f" app CPU to exit {med['cpu']:.2f} s (median of {args.runs})")


if __name__ == "__main__":
    main()
