"""A FIFO (named pipe) in the repository never hangs a tool: every reader skips anything that is
not a regular file before opening it (`core.confine.is_regular` / `read_regular`), and `read_file`
on one is a clear tool error. Each call runs in a thread joined with a timeout, so a regression
fails here instead of hanging the suite (the blocked thread is a daemon; the FIFO is opened for
writing afterwards to release it)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from autopatch_tui.core.agent.scoped_files import scoped_files
from autopatch_tui.core.agent.source_tools import SourceToolError, SourceTools
from autopatch_tui.core.confine import NotRegularFileError, read_regular
from autopatch_tui.core.repair.analyzers.base import Analysis
from autopatch_tui.core.repair.languages import GO, JAVA, JAVASCRIPT, TSX, TYPESCRIPT
from autopatch_tui.core.repair.scanner import Scanner

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")

TIMEOUT = 5.0


def _release(fifo: Path) -> None:
    """Unblock a reader stuck on `fifo` (only reached when the code under test regressed)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


def prompt(fn: Callable[[], Any], fifo: Path) -> Any:
    """fn() — or a test failure when it does not return within TIMEOUT seconds."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out.append(("err", exc))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TIMEOUT)
    if t.is_alive():
        _release(fifo)
        t.join(1)
        pytest.fail(f"{fn} blocked on a FIFO for more than {TIMEOUT:g} s")
    kind, value = out[0]
    if kind == "err":
        raise value
    return value


@pytest.fixture
def fifo_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("x = 1\nneedle = 2\n", encoding="utf-8")
    (repo / "src" / "B.java").write_text("class B {\n    int f() { return 1; }\n}\n", encoding="utf-8")
    fifo = repo / "src" / "pipe.py"  # named like a source file, so the scanner picks it up
    os.mkfifo(fifo)
    os.mkfifo(repo / "src" / "Pipe.java")
    return repo, fifo


def test_scoped_files_skips_a_fifo(fifo_repo: tuple[Path, Path]) -> None:
    repo, fifo = fifo_repo
    files = prompt(lambda: scoped_files(repo, ["src"], 5000), fifo)
    assert "src/a.py" in files.included and "src/pipe.py" not in files.included
    assert files.omitted == 2  # the two FIFOs: counted as left out, never opened
    files = prompt(lambda: scoped_files(repo, ["src/pipe.py"], 5000), fifo)
    assert files.included == () and files.omitted == 1


def test_search_text_skips_a_fifo(fifo_repo: tuple[Path, Path]) -> None:
    repo, fifo = fifo_repo
    out = prompt(lambda: SourceTools(repo).search_text("needle", "src", budget=TIMEOUT - 1), fifo)
    assert out == "src/a.py:2: needle = 2"
    assert prompt(lambda: SourceTools(repo).search_text("x", "src/pipe.py", budget=TIMEOUT - 1), fifo) == "no matches"


def test_read_file_on_a_fifo_is_a_clear_tool_error(fifo_repo: tuple[Path, Path]) -> None:
    repo, fifo = fifo_repo
    with pytest.raises(SourceToolError, match="not a regular file"):
        prompt(lambda: SourceTools(repo).read_file("src/pipe.py"), fifo)
    with pytest.raises(SourceToolError, match="no such file"):
        SourceTools(repo).read_file("src/missing.py")


def test_list_files_lists_a_fifo_without_opening_it(fifo_repo: tuple[Path, Path]) -> None:
    repo, fifo = fifo_repo
    out = prompt(lambda: SourceTools(repo).list_files("src"), fifo)
    assert "a.py" in out.splitlines()


def test_read_regular_refuses_a_fifo_without_blocking(fifo_repo: tuple[Path, Path]) -> None:
    _, fifo = fifo_repo
    with pytest.raises(NotRegularFileError):
        prompt(lambda: read_regular(fifo), fifo)


class Stand:
    """An in-process analyzer for every non-Python language: reports nothing, records its files."""

    name = "stand"
    languages = frozenset({JAVA, JAVASCRIPT, TYPESCRIPT, TSX, GO})

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def analyze(self, repo: Path, files: Sequence[str]) -> Analysis:
        self.calls.append(list(files))
        return Analysis([])


def test_scanner_skips_a_fifo_named_like_a_source_file(fifo_repo: tuple[Path, Path]) -> None:
    repo, fifo = fifo_repo
    scanner = Scanner(repo, [Stand()])
    assert prompt(lambda: scanner.files(["src"]), fifo) == ["src/B.java", "src/a.py"]
    stand = Stand()
    report = prompt(lambda: Scanner(repo, [stand]).scan(["src"]), fifo)
    assert stand.calls == [["src/B.java"]] and report.unparsed == []
    # _unparseable itself, handed a FIFO's path directly, reports it unparsed instead of blocking
    assert prompt(lambda: scanner._unparseable(["src/Pipe.java"]), repo / "src" / "Pipe.java") == {"src/Pipe.java"}
