"""The first frame and the first key after it (issue 33, item 2), in a real pseudo-terminal.

Fresh processes of a minimal Textual app (`minimal_textual.py`, the floor) and of the app on an
empty store and on a 10k-turn store, interleaved round by round, after one warm-up each. Per run:
- first frame: process start until the footer's "Quit" is drawn (`pty_start`);
- a key ("Z") written DELAY ms after the first frame, and the time until the terminal shows it —
  one fresh process per delay, so each key meets the app exactly that long after its first frame;
- process CPU to exit and its peak RSS (os.wait4's ru_maxrss), after ctrl+q.
Prints medians, the app's ratios to the minimal app of the same run, and per delay the median and
worst echo (target: <= 50 ms at any delay). Times on a shared machine are noisy: compare ratios.
`--before PATH` adds the app from another source tree (an older commit's files) to the same rounds:
before/after figures from one run.
Run: .venv/bin/python bench/pty_first_key.py [--runs 3] [--delays 0,50,150,300,600] [--tree PATH]
     [--before PATH]"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pty_start as P  # noqa: E402


def one_run(repo: Path, env: dict[str, str], argv: tuple[str, ...], delay_ms: float,
            timeout: float = 60.0) -> dict[str, float]:
    t0 = time.perf_counter()
    pid, fd = P.spawn_app(repo, env, argv=argv)
    buf = bytearray()
    out: dict[str, float] = {}
    try:
        first = P._read_until(fd, buf, lambda text: P.MARKER in text, t0 + timeout)
        if first is None:
            raise RuntimeError("no first frame within the timeout")
        out["first_frame_ms"] = (first - t0) * 1000
        P._read_until(fd, buf, lambda text: False, first + delay_ms / 1000)  # keep reading what it draws
        seen = len(P.ANSI.sub(b"", bytes(buf)))
        t_key = time.perf_counter()
        os.write(fd, P.KEY)
        echoed = None if argv == P.MINIMAL_ARGV else P._read_until(fd, buf, lambda text: P.KEY in text[seen:],
                                                                   t_key + timeout)  # it echoes no key
        out["echo_ms"] = (echoed - t_key) * 1000 if echoed is not None else float("nan")
        usage = P.quit_app(pid, fd, buf)
        out["cpu_ms"] = (usage.ru_utime + usage.ru_stime) * 1000
        out["rss_mb"] = usage.ru_maxrss / 1024
        return out
    finally:
        P.close_app(pid, fd)


def seeded_repo(base: Path, home: Path, turns: int) -> Path:
    import startup  # the same stores as bench/startup.py
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.settings import load_settings

    repo = startup.make_repo(base)
    mgr = MemoryManager.open(repo, load_settings({"AUTOPATCH_HOME": str(home)}))
    if turns:
        startup.seed(mgr, turns, 0)
    mgr.close()
    return repo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--delays", default="0,50,150,300,600", help="ms after the first frame, comma-separated")
    ap.add_argument("--tree", type=Path, default=None, help="run the app from this source tree")
    ap.add_argument("--before", type=Path, default=None, help="also run the app from this tree, interleaved")
    args = ap.parse_args()
    if args.tree is not None:
        P.TREE = args.tree.resolve()
    delays = [float(d) for d in args.delays.split(",")]
    base = Path(tempfile.mkdtemp(prefix="autopatch-firstkey-"))
    try:
        home = base / "home"
        env = P.app_env(home)
        stores = {"empty store": seeded_repo(base / "empty", home, 0), "10k turns": seeded_repo(base / "big", home, 10_000)}
        cases = [("minimal Textual app", base, P.MINIMAL_ARGV, env)]
        cases += [(f"app, {name}", repo, P.APP_ARGV, env) for name, repo in stores.items()]
        if args.before is not None:
            old = P.app_env(home, {"PYTHONPATH": str(args.before.resolve())})
            cases += [(f"before, {name}", repo, P.APP_ARGV, old) for name, repo in stores.items()]
        print(f"code under test: {P.TREE}; before: {args.before}; load average"
              f" {'/'.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        for _label, repo, argv, case_env in cases:
            one_run(repo, case_env, argv, 0)  # warm-up: bytecode caches, the store's first open
        res: dict[str, list[dict[str, float]]] = {label: [] for label, *_ in cases}
        for _ in range(args.runs):
            for delay in delays:
                for label, repo, argv, case_env in cases:
                    r = one_run(repo, case_env, argv, delay)
                    r["delay"] = delay
                    res[label].append(r)
        n = args.runs * len(delays)
        floor = {k: statistics.median(r[k] for r in res["minimal Textual app"]) for k in ("first_frame_ms", "cpu_ms",
                                                                                        "rss_mb")}
        print(f"first frame, process CPU to exit, peak RSS: median of {n} fresh processes each, interleaved:")
        for label, rs in res.items():
            med = {k: statistics.median(r[k] for r in rs) for k in ("first_frame_ms", "cpu_ms", "rss_mb")}
            ratio = "" if label.startswith("minimal") else (
                f"   {med['first_frame_ms'] / floor['first_frame_ms']:4.2f}x wall [<= 1.3x],"
                f" {med['cpu_ms'] / floor['cpu_ms']:4.2f}x CPU [<= 1.5x], {med['rss_mb'] / floor['rss_mb']:4.2f}x RSS"
                " [<= 1.5x]")
            print(f"  {label:<22} frame {med['first_frame_ms']:6.0f} ms  CPU {med['cpu_ms']:6.0f} ms"
                  f"  RSS {med['rss_mb']:5.1f} MB{ratio}")
        print(f"a key written N ms after the first frame -> drawn (median / worst of {args.runs}) [target <= 50 ms]:")
        for label, rs in res.items():
            cells = []
            for delay in delays:
                e = [r["echo_ms"] for r in rs if r["delay"] == delay]
                if all(x != x for x in e):
                    continue
                cells.append(f"{delay:4.0f}: {statistics.median(e):5.0f}/{max(e):5.0f}")
            print(f"  {label:<22} " + "  ".join(cells))
        print(f"load average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
