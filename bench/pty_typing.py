"""Typing latency of the real app in a pseudo-terminal, with the Memory worker busy and idle
(used by bench/startup.py).

Each run spawns a fresh `python -m autopatch_tui` on a pty in a repository whose thread holds 120
turns, waits for the first frame and a settle time, then types keys at a human pace (one every
`gap` seconds) and records, per key, the time from writing it to the pty until the terminal shows
it (ANSI stripped; the last typed characters must appear in what was drawn after the write).
- busy: the 120 turns' extraction jobs are pending, and a model server in another process answers
  each after 50 ms, so the worker processes jobs all the while the keys are typed;
- idle: the same turns with every job already processed (same chat log on screen, same model).
The worker cost is busy minus idle, per percentile, over all runs' keys."""

from __future__ import annotations

import math
import os
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pty_start as P

ALPHABET = "qwertyuiopasdfghjklzxcvbnm"


def type_keys(repo: Path, env: dict[str, str], *, keys: int = 60, gap: float = 0.05, settle: float = 1.0,
              size: tuple[int, int] = (120, 40)) -> list[float]:
    """Milliseconds from each key's write to its echo (NaN when it never showed within 5 s)."""
    pid, fd = P.spawn_app(repo, env, size)
    buf = bytearray()
    out: list[float] = []
    try:
        t0 = time.perf_counter()
        if P._read_until(fd, buf, lambda text: P.MARKER in text, t0 + 20) is None:
            raise RuntimeError("the app drew no first frame within the timeout")
        P._read_until(fd, buf, lambda text: False, time.perf_counter() + settle)
        typed = ""
        for i in range(keys):
            typed += ALPHABET[i % len(ALPHABET)]
            start = len(buf)
            tail = typed[-4:].encode()

            def shown(_text: bytes, start: int = start, tail: bytes = tail) -> bool:
                return tail in P.ANSI.sub(b"", bytes(buf[start:]))

            t = time.perf_counter()
            os.write(fd, typed[-1].encode())
            echoed = P._read_until(fd, buf, shown, t + 5)
            out.append((echoed - t) * 1000 if echoed is not None else float("nan"))
            P._read_until(fd, buf, lambda text: False, time.perf_counter() + gap)
        P.quit_app(pid, fd, buf)
        return out
    finally:
        P.close_app(pid, fd)


def jobs_done(repo: Path) -> int:
    with sqlite3.connect(repo / ".autopatch-j" / "memory.db") as conn:
        return conn.execute("SELECT count(*) FROM memory_jobs WHERE kind = 'extraction'"
                            " AND status LIKE 'succeeded%'").fetchone()[0]


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(x for x in samples if not math.isnan(x))
    return {"n": len(s), "p50": statistics.median(s), "p95": s[max(0, int(len(s) * 0.95) - 1)], "max": s[-1]}


def measure(make_repo: Callable[[str, bool], Path], env: dict[str, str], *, runs: int = 3) -> dict[str, dict]:
    """Busy and idle runs interleaved (a busy machine hits both alike). `make_repo(name, processed)`
    seeds a fresh repository per run (a copy would be a duplicate store): its 120 turns' jobs
    pending, or already processed."""
    busy: list[float] = []
    idle: list[float] = []
    done: list[int] = []
    for n in range(runs):
        for kind in ("busy", "idle"):
            repo = make_repo(f"typing-{kind}-{n}", kind == "idle")
            samples = type_keys(repo, env)
            (busy if kind == "busy" else idle).extend(samples)
            if kind == "busy":
                done.append(jobs_done(repo))
    return {"busy": percentiles(busy), "idle": percentiles(idle), "jobs_done": (min(done), max(done))}
