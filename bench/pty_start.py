"""Start-up of the real app in a pseudo-terminal, from process start (used by bench/startup.py).

Each run spawns a fresh `python -m autopatch_tui` on a pty of a fixed size, reads its output, and
records (ANSI escape sequences stripped from what it drew):
- first frame: the first time the chat screen's footer ("Quit") is on the terminal;
- key echo: a key typed right after the first frame, until the terminal shows it;
then quits the app (ctrl+q, then SIGTERM if it has not exited) and records its CPU time (os.wait4).
Bytecode caches are used as an installed package uses them (a warm-up run writes them)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import statistics
import struct
import sys
import termios
import time
from pathlib import Path

ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78NOMc]")
MARKER = b"Quit"
KEY = b"Z"


def _read_until(fd: int, buf: bytearray, found, deadline: float) -> float | None:
    while time.perf_counter() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.005)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
            if found(ANSI.sub(b"", bytes(buf))):
                return time.perf_counter()
    return None


APP_ARGV = ("-m", "autopatch_tui")
MINIMAL_ARGV = (str(Path(__file__).resolve().parent / "minimal_textual.py"),)


def spawn_app(repo: Path, env: dict[str, str], size: tuple[int, int] = (120, 40),
              argv: tuple[str, ...] = APP_ARGV) -> tuple[int, int]:
    """`python -m autopatch_tui` (or `argv`) in `repo` on a fresh pty of `size`: (pid, the pty's fd)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the app, as a user starts it
        os.chdir(repo)
        os.execve(sys.executable, [sys.executable, *argv], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    return pid, fd


def quit_app(pid: int, fd: int, buf: bytearray, timeout: float = 10.0):  # -> resource.struct_rusage
    """Ctrl+Q, reading what the app draws meanwhile; SIGTERM if it has not exited within `timeout`.
    Returns the app's resource usage (os.wait4)."""
    os.write(fd, b"\x11")  # ctrl+q
    for sig in (signal.SIGTERM, signal.SIGKILL, None):
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:  # keep reading: an app whose terminal is full cannot exit
            _read_until(fd, buf, lambda text: False, time.perf_counter() + 0.05)
            done, _status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return usage
        if sig is not None:
            os.kill(pid, sig)
    return os.wait4(pid, 0)[2]


def close_app(pid: int, fd: int) -> None:
    """Close the pty and make sure the app is gone (a run that failed half-way included)."""
    try:
        os.close(fd)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def one_run(repo: Path, env: dict[str, str], size: tuple[int, int] = (120, 40), timeout: float = 60.0,
            argv: tuple[str, ...] = APP_ARGV) -> dict[str, float]:
    t0 = time.perf_counter()
    pid, fd = spawn_app(repo, env, size, argv)
    out: dict[str, float] = {}
    buf = bytearray()
    try:
        first = _read_until(fd, buf, lambda text: MARKER in text, t0 + timeout)
        if first is None:
            raise RuntimeError("the app drew no first frame within the timeout")
        out["first_frame_ms"] = (first - t0) * 1000
        seen = len(ANSI.sub(b"", bytes(buf)))
        t_key = time.perf_counter()
        os.write(fd, KEY)
        echoed = _read_until(fd, buf, lambda text: KEY in text[seen:], t_key + timeout)
        if echoed is not None:
            out["key_echo_ms"] = (echoed - t_key) * 1000
            out["key_at_ms"] = (echoed - t0) * 1000
        usage = quit_app(pid, fd, buf)
        out["cpu_ms"] = (usage.ru_utime + usage.ru_stime) * 1000
        return out
    finally:
        close_app(pid, fd)


TREE = Path(__file__).resolve().parents[1]  # the source tree the app and CLI run from (`--tree`)


def app_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The app's environment: this machine's, without AUTOPATCH_* except `home` and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"AUTOPATCH_HOME": str(home), "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none",
                "PYTHONPATH": str(TREE), **(extra or {})})
    return env


def measure(repo: Path, home: Path, runs: int = 5, extra_env: dict[str, str] | None = None) -> dict[str, float]:
    env = app_env(home, extra_env)
    one_run(repo, env)  # warm-up: writes bytecode caches and the store, as a second start finds them
    results = [one_run(repo, env) for _ in range(runs)]
    med = {k: statistics.median(r[k] for r in results if k in r) for k in results[0]}
    med["runs"] = runs
    return med


def command_times(repo: Path, home: Path, argv: list[str], runs: int = 10) -> dict[str, float]:
    """Whole-process wall and CPU time (os.wait4) of `python -m autopatch_tui ARGV` in `repo`,
    median and best of `runs` fresh processes after one warm-up (bytecode caches written)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"AUTOPATCH_HOME": str(home), "PYTHONPATH": str(TREE)})
    cmd = [sys.executable, "-m", "autopatch_tui", *argv]
    subprocess.run(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    walls, cpus = [], []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        walls.append((time.perf_counter() - t) * 1000)
        cpus.append((usage.ru_utime + usage.ru_stime) * 1000)
        proc.returncode = 0
    return {"wall_median": statistics.median(walls), "wall_min": min(walls),
            "cpu_median": statistics.median(cpus), "cpu_min": min(cpus)}


def interleaved_frames(cases: list[tuple[str, Path, dict[str, str], tuple[str, ...]]], runs: int) -> dict[str, dict]:
    """First frames of several apps, interleaved: (label, folder, env, argv) each run once per
    round, `runs` rounds after one warm-up round; per label the median and the runs."""
    for _label, repo, env, argv in cases:
        one_run(repo, env, argv=argv)  # warm-up: bytecode caches, the store's first open
    results: dict[str, list[dict[str, float]]] = {label: [] for label, *_ in cases}
    for _ in range(runs):
        for label, repo, env, argv in cases:
            results[label].append(one_run(repo, env, argv=argv))
    return {label: {"first_frame_ms": statistics.median(r["first_frame_ms"] for r in rs),
                    "cpu_ms": statistics.median(r["cpu_ms"] for r in rs), "runs": rs}
            for label, rs in results.items()}


def process_times(cases: list[tuple[str, list[str], Path, dict[str, str]]], runs: int) -> dict[str, dict]:
    """Whole-process wall and CPU time (os.wait4) of several commands, interleaved: (label, argv,
    cwd, env) each run once per round, `runs` rounds after one warm-up round; medians per label."""
    import subprocess

    def once(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        return (time.perf_counter() - t) * 1000, (usage.ru_utime + usage.ru_stime) * 1000

    for _label, argv, cwd, env in cases:
        once(argv, cwd, env)
    walls: dict[str, list[float]] = {label: [] for label, *_ in cases}
    cpus: dict[str, list[float]] = {label: [] for label, *_ in cases}
    for _ in range(runs):
        for label, argv, cwd, env in cases:
            w, c = once(argv, cwd, env)
            walls[label].append(w)
            cpus[label].append(c)
    return {label: {"wall_median": statistics.median(walls[label]), "wall_min": min(walls[label]),
                    "cpu_median": statistics.median(cpus[label]), "cpu_min": min(cpus[label])} for label in walls}


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"AUTOPATCH_HOME": str(home), "PYTHONPATH": str(TREE)})
    return env
