"""100 KB typed as keystrokes into the real app through a pseudo-terminal (issue 20, item 5).

A terminal without bracketed paste delivers a paste as keystrokes, one after another as fast as it
can write them. 122 KB delivered that way once froze the app for over 20 minutes (each key re-wrapped
the whole prompt line, and the completion scan copied it). This bench spawns a fresh
`python -m autopatch_tui` on a pty in an empty repository (no model configured), waits for the first
frame, and then, per run:

- typing: writes 100 KB of words in chunks of `--chunk` bytes (every chunk ends with a unique
  marker word); each chunk is written when the previous marker is on the terminal. Key latency is
  a chunk's last key written -> that marker drawn (ANSI stripped), wall and the app's CPU over it;
  total is first key -> last marker; CPU is the app's user+system time (/proc/PID/stat);
- flood: writes the same 100 KB without waiting (as fast as the pty takes it), then measures until
  its last marker is drawn, and the echo of one more key typed after it (is the app responsive?);
- baseline, in the same process: the same text as one bracketed paste (what a terminal with
  bracketed paste sends), until its last marker is drawn; the flood's ratio to it is printed;
- exit: ctrl+q right after a flood, and SIGTERM right after a flood (a backlog of keys still
  queued): the time until the process has ended (the exit flush bound is 30 s);
- multi-line (issue 30, item 1): `--lines` lines of code (~88 B each; 1,600 lines = 141 KB) typed
  as keystrokes the way tmux `paste-buffer` without `-p` types them (line breaks as CR), without
  waiting, until the note under the prompt says the prompt holds all of them ("(N lines)": every
  line break kept, nothing sent); lines/s and KB/s and the app's CPU, printed beside the
  single-line flood's KB/s of the same run.

Figures are printed, never asserted. Run: .venv/bin/python bench/pty_keystrokes.py [--kb 100]
[--chunk 1024] [--runs 1] [--lines 1600]"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import pty_start as P

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import environment_line, percentile  # noqa: E402

WORDS = ("parser", "config", "retry", "lease", "schema", "thread", "worker", "export", "layout", "budget",
         "memory", "index", "query", "deploy", "build", "tests")
SIZE = (120, 40)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def text_chunks(kb: int, chunk: int) -> list[bytes]:
    """`kb` KiB of printable words in chunks of about `chunk` bytes, each ending with a marker word."""
    out: list[bytes] = []
    total = 0
    n = 0
    while total < kb * 1024:
        words: list[str] = []
        size = 0
        marker = f" k{n:05d}x "
        while size + len(marker) < chunk:
            w = WORDS[(n * 7 + len(words)) % len(WORDS)] + " "
            words.append(w)
            size += len(w)
        data = ("".join(words) + marker).encode()
        out.append(data)
        total += len(data)
        n += 1
    return out


def marker_of(n: int) -> bytes:
    return f"k{n:05d}x".encode()


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15 of the whole line)


def write_all(fd: int, data: bytes, buf: bytearray, deadline: float) -> bool:
    """Write `data` to the pty, reading what the app draws meanwhile (a full pty blocks both ways)."""
    view = memoryview(data)
    while view:
        if time.perf_counter() > deadline:
            return False
        try:
            n = os.write(fd, view[:4096])
            view = view[n:]
        except BlockingIOError:
            pass
        P._read_until(fd, buf, lambda _t: False, time.perf_counter() + 0.001)
    return True


def shown_after(buf: bytearray, start: int, marker: bytes):
    def found(_text: bytes) -> bool:
        return marker in P.ANSI.sub(b"", bytes(buf[start:]))
    return found


def start(repo: Path, env: dict[str, str]) -> tuple[int, int, bytearray]:
    pid, fd = P.spawn_app(repo, env, SIZE)
    os.set_blocking(fd, False)
    buf = bytearray()
    if P._read_until(fd, buf, lambda text: P.MARKER in text, time.perf_counter() + 30) is None:
        P.close_app(pid, fd)
        raise RuntimeError("the app drew no first frame within 30 s")
    P._read_until(fd, buf, lambda _t: False, time.perf_counter() + 1.0)  # settle
    return pid, fd, buf


def wait_exit(pid: int, fd: int, buf: bytearray, timeout: float) -> float | None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        P._read_until(fd, buf, lambda _t: False, time.perf_counter() + 0.02)
        done, _status, _usage = os.wait4(pid, os.WNOHANG)
        if done:
            return time.perf_counter() - t0
    return None


def typing_run(repo: Path, env: dict[str, str], chunks: list[bytes], limit: float) -> dict[str, float]:
    pid, fd, buf = start(repo, env)
    try:
        lat: list[float] = []
        lat_cpu: list[float] = []
        cpu0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        for n, data in enumerate(chunks):
            mark = len(buf)
            deadline = t0 + limit
            if not write_all(fd, data, buf, deadline):
                break
            t, c = time.perf_counter(), cpu_seconds(pid)
            if P._read_until(fd, buf, shown_after(buf, mark, marker_of(n)), deadline) is None:
                break
            lat.append(time.perf_counter() - t)
            lat_cpu.append(cpu_seconds(pid) - c)
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(pid) - cpu0
        done = len(lat) == len(chunks)
        os.write(fd, b"\x11")
        exit_s = wait_exit(pid, fd, buf, 30)
        return {"done": done, "chunks": len(lat), "wall": wall, "cpu": cpu, "p50": percentile(lat, 50) if lat else 0,
                "p95": percentile(lat, 95) if lat else 0, "max": max(lat) if lat else 0,
                "cpu_max": max(lat_cpu) if lat_cpu else 0, "cpu_p50": percentile(lat_cpu, 50) if lat_cpu else 0,
                "exit": exit_s if exit_s is not None else float("nan")}
    finally:
        P.close_app(pid, fd)


def flood_run(repo: Path, env: dict[str, str], chunks: list[bytes], limit: float, then: str) -> dict[str, float]:
    pid, fd, buf = start(repo, env)
    try:
        data = b"".join(chunks)
        cpu0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        mark = len(buf)
        wrote = write_all(fd, data, buf, t0 + limit)
        written = time.perf_counter() - t0
        out: dict[str, float] = {"written": written}
        if then == "sigterm":  # a backlog of keys may still be queued: the app must still end
            os.kill(pid, signal.SIGTERM)
            t_exit = wait_exit(pid, fd, buf, 60)
            out["exit"] = t_exit if t_exit is not None else float("nan")
            return out
        last = marker_of(len(chunks) - 1)
        drawn = P._read_until(fd, buf, shown_after(buf, mark, last), t0 + limit) if wrote else None
        out["drawn"] = (drawn - t0) if drawn is not None else float("nan")
        out["cpu"] = cpu_seconds(pid) - cpu0
        probe_at = len(buf)
        t = time.perf_counter()
        os.write(fd, b"QZJ")
        echoed = P._read_until(fd, buf, lambda _t: b"QZJ" in P.ANSI.sub(b"", bytes(buf[probe_at:])), t + 30)
        out["probe"] = (echoed - t) if echoed is not None else float("nan")
        t = time.perf_counter()
        os.write(fd, b"\x11")
        t_exit = wait_exit(pid, fd, buf, 60)
        out["exit"] = t_exit if t_exit is not None else float("nan")
        return out
    finally:
        P.close_app(pid, fd)


def paste_run(repo: Path, env: dict[str, str], chunks: list[bytes], limit: float) -> dict[str, float]:
    """The baseline: the same text as one bracketed paste."""
    pid, fd, buf = start(repo, env)
    try:
        cpu0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        mark = len(buf)
        write_all(fd, b"\x1b[200~" + b"".join(chunks) + b"\x1b[201~", buf, t0 + limit)
        drawn = P._read_until(fd, buf, shown_after(buf, mark, marker_of(len(chunks) - 1)), t0 + limit)
        out = {"drawn": (drawn - t0) if drawn is not None else float("nan"), "cpu": cpu_seconds(pid) - cpu0}
        os.write(fd, b"\x11")
        wait_exit(pid, fd, buf, 60)
        return out
    finally:
        P.close_app(pid, fd)


def code_lines(count: int) -> bytes:
    """`count` lines of code typed as tmux types a paste (CR between lines, one after the last)."""
    return "".join(f"{n:04d} def handler(request): return render(request, 'page.html', ctx)  # see the note on it\r"
                   for n in range(count)).encode()


def sent_lines(home: Path) -> int:
    """Lines sent so far (every sent line goes into the prompt history)."""
    return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in (home / "prompt-history").glob("*.jsonl"))


def multiline_run(repo: Path, env: dict[str, str], count: int, limit: float) -> dict[str, float]:
    sent_before = sent_lines(Path(env["AUTOPATCH_HOME"]))
    pid, fd, buf = start(repo, env)
    try:
        data = code_lines(count)
        cpu0 = cpu_seconds(pid)
        t0 = time.perf_counter()
        mark = len(buf)
        wrote = write_all(fd, data, buf, t0 + limit)
        done = f"({count + 1} lines:".encode()  # the note under the prompt: all line breaks kept
        drawn = P._read_until(fd, buf, shown_after(buf, mark, done), t0 + limit) if wrote else None
        out = {"bytes": len(data), "drawn": (drawn - t0) if drawn is not None else float("nan"),
               "cpu": cpu_seconds(pid) - cpu0}
        os.write(fd, b"\x11")
        wait_exit(pid, fd, buf, 60)
        out["sent"] = float(sent_lines(Path(env["AUTOPATCH_HOME"])) > sent_before)
        return out
    finally:
        P.close_app(pid, fd)


def ms(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 1000:.0f} ms"


def s(x: float) -> str:
    return "did not end" if math.isnan(x) else f"{x:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--limit", type=float, default=300.0, help="seconds before a run gives up")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: typing,flood,paste,sigterm,multiline")
    ap.add_argument("--lines", type=int, default=1600, help="lines of the multi-line keystroke paste")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    chunks = text_chunks(args.kb, args.chunk)
    size = sum(len(c) for c in chunks)
    with tempfile.TemporaryDirectory(prefix="bench-keys-") as tmp:
        base = Path(tmp)
        repo = base / "repo"
        repo.mkdir()
        env = P.app_env(base / "home")
        print(environment_line(base))
        print(f"{size} bytes as keystrokes, {len(chunks)} chunks of ~{args.chunk} B, terminal {SIZE[0]}x{SIZE[1]}")
        P.one_run(repo, env)  # warm-up: bytecode caches and the store, as a second start finds them
        for run in range(args.runs):
            if "typing" not in skip:
                r = typing_run(repo, env, chunks, args.limit)
                print(f"typing run {run + 1}: {'all' if r['done'] else 'ONLY'} {r['chunks']} chunks drawn;"
                      f" total wall {s(r['wall'])}, app CPU {s(r['cpu'])};"
                      f" key latency (chunk end -> drawn) wall p50 {ms(r['p50'])}, p95 {ms(r['p95'])},"
                      f" worst {ms(r['max'])}; app CPU p50 {ms(r['cpu_p50'])}, worst {ms(r['cpu_max'])};"
                      f" ctrl+q then exit after {s(r['exit'])}")
            flood = None
            if "flood" not in skip:
                flood = r = flood_run(repo, env, chunks, args.limit, "ctrl+q")
                print(f"flood run {run + 1}: written in {s(r['written'])}, all drawn after {s(r['drawn'])},"
                      f" app CPU {s(r['cpu'])}; next key echoed after {ms(r['probe'])};"
                      f" ctrl+q then exit after {s(r['exit'])}")
            if "paste" not in skip:
                r = paste_run(repo, env, chunks, args.limit)
                ratio = ""
                if flood is not None and not math.isnan(r["drawn"]) and r["cpu"] > 0:
                    ratio = (f"; keystrokes / bracketed paste: wall x{flood['drawn'] / r['drawn']:.1f},"
                             f" CPU x{flood['cpu'] / r['cpu']:.1f}")
                print(f"baseline run {run + 1}: one bracketed paste drawn after {s(r['drawn'])},"
                      f" app CPU {s(r['cpu'])}{ratio}")
            if "multiline" not in skip:
                r = multiline_run(repo, env, args.lines, args.limit)
                kb = r["bytes"] / 1024
                beside = ""
                if flood is not None and not math.isnan(flood["drawn"]):
                    beside = f"; single-line flood of the same run: {size / 1024 / flood['drawn']:.0f} KB/s"
                rate = "n/a" if math.isnan(r["drawn"]) else f"{args.lines / r['drawn']:.0f} lines/s, {kb / r['drawn']:.0f} KB/s"
                print(f"multi-line run {run + 1}: {args.lines} lines ({kb:.0f} KB) as keystrokes, all in the prompt"
                      f" after {s(r['drawn'])}: {rate}, app CPU {s(r['cpu'])};"
                      f" {'A LINE WAS SENT' if r['sent'] else 'nothing sent'}{beside}")
            if "sigterm" not in skip:
                r = flood_run(repo, env, chunks, args.limit, "sigterm")
                print(f"sigterm run {run + 1}: flood written in {s(r['written'])}, SIGTERM at once:"
                      f" exit after {s(r['exit'])}")


if __name__ == "__main__":
    main()
