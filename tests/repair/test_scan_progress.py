"""A running scan says how far it is (issue 30 item 14): files done of the total and the time so
far, also while one analyzer works through a whole repository."""

from __future__ import annotations

import threading
from pathlib import Path

from autopatch_tui.core.repair.analyzers.base import Analysis, AnalyzerError
from autopatch_tui.core.repair.scan_progress import ScanTicker
from autopatch_tui.core.repair.scanner import Scanner
from tests.support.fixtures import make_git_repo


class _Tool:
    def __init__(self, name: str, languages: set[str], *, fail: bool = False, gate: threading.Event | None = None):
        self.name, self.languages, self.fail, self.gate = name, frozenset(languages), fail, gate

    def analyze(self, repo: Path, files):  # type: ignore[no-untyped-def]
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail:
            raise AnalyzerError(f"{self.name} crashed")
        return Analysis()


def _repo(tmp_path: Path) -> Path:
    repo = make_git_repo(tmp_path / "r")
    for name in ("a.py", "b.py", "c.py"):
        (repo / name).write_text("x = 1\n")
    (repo / "A.java").write_text("class A {}\n")
    return repo


def test_steps_count_files_done_of_the_total_per_analyzer(tmp_path: Path) -> None:
    steps: list[tuple[int, int, str]] = []
    scanner = Scanner(_repo(tmp_path), [_Tool("ruff", {"python"}), _Tool("semgrep", {"java"}, fail=True)])
    scanner.scan(step=lambda *s: steps.append(s))
    # a failed analyzer's files count as done (not analyzed, and the summary says so)
    assert steps == [(0, 4, "ruff"), (3, 4, ""), (3, 4, "semgrep")]


def test_the_ticker_says_files_and_elapsed_time_and_keeps_ticking(tmp_path: Path) -> None:
    now = [100.0]
    lines: list[str] = []
    gate = threading.Event()
    ticked, first = threading.Event(), threading.Event()

    def progress(text: str) -> None:
        lines.append(text)
        first.set()
        if len(lines) >= 3 and text.endswith("12 s"):
            ticked.set()

    scanner = Scanner(_repo(tmp_path), [_Tool("ruff", {"python"}, gate=gate)])
    with ScanTicker(progress, interval=0.01, clock=lambda: now[0]) as ticker:
        worker = threading.Thread(target=scanner.scan, kwargs={"step": ticker.step})
        worker.start()
        assert first.wait(5)
        now[0] = 112.4
        assert ticked.wait(5)  # ticks while the analyzer is still running
        gate.set()
        worker.join(5)
    assert lines[0] == "scanning: 0 of 3 files done (ruff) · 0 s"
    assert "scanning: 0 of 3 files done (ruff) · 12 s" in lines
    assert "scanning: 3 of 3 files done · 12 s" in lines


def test_a_progress_callback_that_raises_stops_only_the_ticker() -> None:
    calls = []

    def cancelled(text: str) -> None:
        calls.append(text)
        raise RuntimeError("cancelled")

    with ScanTicker(cancelled, interval=0.01) as ticker:
        try:
            ticker.step(1, 2, "ruff")  # the scan's own step raises to the scan
        except RuntimeError:
            pass
        threading.Event().wait(0.1)
    assert len(calls) == 2  # one tick more, then the ticker stopped — no crash, no endless retries
