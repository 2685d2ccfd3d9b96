"""The real app on a pseudo-terminal, a paste typed as keystrokes (no bracketed paste, as tmux
`paste-buffer` without `-p` types it: line breaks as CR): nothing is sent to the model, and every
line break is kept — ctrl+c then clears the prompt into the prompt history, whose file must hold
the paste exactly (issue 30, item 1)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import pytest

from autopatch_tui.tui.prompt_history import history_file

ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78NOMc]")
ROOT = Path(__file__).resolve().parents[2]


def read_until(fd: int, buf: bytearray, found, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found():
            return True
        ready, _, _ = select.select([fd], [], [], 0.02)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return found()
            if not chunk:
                return found()
            buf += chunk
    return found()


def write_all(fd: int, data: bytes, buf: bytearray) -> None:
    view = memoryview(data)
    while view:
        _, ready, _ = select.select([], [fd], [], 0.01)
        if ready:
            view = view[os.write(fd, view[:4096]):]
        read_until(fd, buf, lambda: False, 0.001)  # a full pty blocks both ways: keep reading


def paste_text(lines: int) -> str:
    return "\n".join(f"{n:04d} def handler(request): return render(request, 'page.html', ctx)  # see the note on it"
                     for n in range(lines)) + "\n"


@pytest.mark.parametrize("lines", [20, 1600])
def test_a_multi_line_paste_typed_as_keystrokes_sends_nothing_and_keeps_every_line_break(repo, llm_stub, tmp_path,
                                                                                       lines):
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", "an answer")
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_")}
    env.update({"AUTOPATCH_HOME": str(home), "AUTOPATCH_LLM_BASE_URL": llm_stub.base_url,
                "AUTOPATCH_LLM_MODEL": "gpt-4o", "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none",
                "PYTHONPATH": str(ROOT)})
    text = paste_text(lines)
    assert len(text) > 140_000 or lines == 20  # the 1,600-line paste is the 141 KB
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(repo)
        os.execve(sys.executable, [sys.executable, "-m", "autopatch_tui"], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    os.set_blocking(fd, False)
    buf = bytearray()
    try:
        assert read_until(fd, buf, lambda: b"Quit" in ANSI.sub(b"", bytes(buf)), 60), "no first frame"
        read_until(fd, buf, lambda: False, 1.0)
        write_all(fd, text.replace("\n", "\r").encode(), buf)  # as tmux paste-buffer types it
        read_until(fd, buf, lambda: False, 1.0)  # quiet
        os.write(fd, b"\x03")  # ctrl+c: the prompt goes into the history file, as it is
        saved = history_file(home, repo)

        def cleared() -> bool:
            try:
                return json.loads(saved.read_text().splitlines()[-1]) == text
            except (OSError, IndexError, ValueError):
                return False

        assert read_until(fd, buf, cleared, 120), "the prompt did not hold the paste, line breaks and all"
        assert llm_stub.requests_for("chat") == [] and llm_stub.requests_for("classify") == []
        os.write(fd, b"\x11")  # ctrl+q
        for _ in range(300):
            read_until(fd, buf, lambda: False, 0.05)
            if os.waitpid(pid, os.WNOHANG)[0]:
                pid = 0
                break
    finally:
        os.close(fd)
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert llm_stub.requests_for("chat") == []
