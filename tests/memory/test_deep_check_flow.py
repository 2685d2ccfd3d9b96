"""When the deep check runs, and what a fault it finds does (issue 23, deliverable 1; the spec's
"runtime schema 损坏使摘要失效": startup recovery finds SQLite consistency damage).

- the background worker runs it before its first job: a fault degrades the store at once, no job
  is claimed and no model call is made, the summary goes stale, the app hears of it;
- closing the manager, or the exit flush stopping the worker, ends a long check at once;
- a command hands a check it could not finish within its bound to a detached process, which
  remembers the verdict; while another process checks a store, a command starts no second check."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from autopatch_tui.cli import after_answer
from autopatch_tui.core.events import MemoryChanged, Notice
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import deep_check, verdicts
from autopatch_tui.core.memory.verdicts import VerdictMemo, file_state
from tests.memory._hostile import sql
from tests.support.fixtures import bootstrap_healthy, scalar
from tests.support.pipeline_helpers import add_turn, stub_settings

ORPHAN = ("INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, created_at, ended_at)"
          " VALUES ('turn-orphan', 'thr-missing', 1, 'general_chat', 'failed', 'x', 1.0, 2.0)")
ENDLESS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"


def _wait(predicate, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def _slow_check(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The deep check never ends by itself (an endless query inside SQLite): only a cancel stops it."""
    started: list[float] = []

    def endless(conn: sqlite3.Connection):
        started.append(time.monotonic())
        conn.execute(ENDLESS).fetchone()
        return None

    monkeypatch.setattr(deep_check, "deep_problem", endless)
    return started


def test_the_worker_checks_the_store_before_its_first_job(repo: Path, llm_stub, monkeypatch) -> None:
    settings = stub_settings(llm_stub)
    mgr = MemoryManager.open(repo, settings)
    try:
        add_turn(mgr, "we always run the release checklist")  # an extraction job waits
        add_turn(mgr, "and tag the release")
    finally:
        mgr.close()
    sql(repo / ".autopatch-j" / "memory.db", "PRAGMA foreign_keys = OFF", ORPHAN)
    mgr = MemoryManager.open(repo, settings)
    seen: list[object] = []
    mgr.events.subscribe(seen.append)
    try:
        assert mgr.healthy  # the open-time check cannot see a foreign key
        mgr.start_background()
        assert _wait(lambda: not mgr.healthy)
        assert mgr.store.health.cause == "corrupt" and "foreign key" in (mgr.store.health.diagnostic or "")
        assert mgr.status().summary.status in ("stale", "missing") and mgr.summary_stale
        assert any(isinstance(e, MemoryChanged) and e.reason == "degraded" for e in seen)
        assert any(isinstance(e, Notice) and e.level == "error" and "foreign key" in e.text for e in seen)
        time.sleep(0.3)
    finally:
        mgr.close()
    db = repo / ".autopatch-j" / "memory.db"
    assert llm_stub.requests == []  # no model call after (or before) the finding
    assert scalar(db, "SELECT count(*) FROM memory_jobs") == 2
    assert scalar(db, "SELECT count(*) FROM memory_jobs WHERE status != 'pending' OR attempts != 0") == 0


def test_closing_ends_a_long_deep_check_at_once(repo: Path, settings, monkeypatch, tmp_path: Path) -> None:
    bootstrap_healthy(repo, settings)
    started = _slow_check(monkeypatch)
    mgr = MemoryManager.open(repo, settings)
    mgr.start_background()
    assert _wait(lambda: bool(started))
    t = time.monotonic()
    mgr.close()
    assert time.monotonic() - t < 3.0
    assert mgr.store.verified is False
    assert VerdictMemo(settings.home).lookup(mgr.paths.db, file_state(mgr.paths.db)) is None


def test_the_exit_flush_does_not_wait_for_a_deep_check(repo: Path, settings, monkeypatch) -> None:
    from autopatch_tui.core.pipeline.exit_once import ExitFlush

    bootstrap_healthy(repo, settings)
    started = _slow_check(monkeypatch)
    mgr = MemoryManager.open(repo, settings)
    try:
        mgr.start_background()
        assert _wait(lambda: bool(started))
        outcome = ExitFlush(lambda: mgr, limit=10.0).run("test")
        assert outcome is not None and not outcome.timed_out
    finally:
        mgr.close()


def test_a_command_hands_an_unfinished_check_to_a_detached_process(repo: Path, settings, monkeypatch) -> None:
    db = bootstrap_healthy(repo, settings)
    time.sleep(verdicts.SETTLED_SECONDS + 0.05)
    mgr = MemoryManager.open(repo, settings)
    try:
        assert not mgr.store.verified
        _slow_check(monkeypatch)  # this process cannot finish it (the detached one runs the real check)
        pid = after_answer.check_after_answer(mgr, timeout=0.2)
        assert pid is not None
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        mgr.close()
    known = VerdictMemo(settings.home).lookup(db, file_state(db))
    assert known is not None and known.healthy
    mgr = MemoryManager.open(repo, settings)
    try:
        assert mgr.store.verified  # the next command pays nothing
    finally:
        mgr.close()


def test_no_second_check_while_another_process_checks_the_store(repo: Path, settings, monkeypatch) -> None:
    from autopatch_tui.cli.check_later import check_lock

    bootstrap_healthy(repo, settings)
    mgr = MemoryManager.open(repo, settings)
    lock = check_lock(settings.home, mgr.paths.db)  # "another process" (flock is per open file)
    try:
        assert lock is not None and lock >= 0
        ran: list[bool] = []
        monkeypatch.setattr(mgr, "verify_store", lambda timeout=None: ran.append(True))
        assert after_answer.check_after_answer(mgr) is None
        assert ran == [] and not mgr.store.verified
    finally:
        os.close(lock)
        mgr.close()


def test_a_command_checks_a_store_once_however_often_it_is_asked(repo: Path, settings, monkeypatch) -> None:
    """`memory status` checks before its answer and the command's end asks again: one bounded check
    and at most one detached continuation per run, never a second foreground wait."""
    bootstrap_healthy(repo, settings)
    mgr = MemoryManager.open(repo, settings)
    try:
        ran: list[float | None] = []
        handed: list[Path] = []
        monkeypatch.setattr(mgr, "verify_store", lambda timeout=None: ran.append(timeout))  # out of time
        monkeypatch.setattr(after_answer, "continue_later", lambda db, home: handed.append(db) or 4242)
        assert after_answer.check_after_answer(mgr, before_answer=True) == 4242
        assert after_answer.check_after_answer(mgr) is None
        assert ran == [after_answer.AFTER_ANSWER_SECONDS] and handed == [mgr.paths.db]
    finally:
        mgr.close()
