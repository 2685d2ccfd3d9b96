"""An SQLite error that `write_txn` does not convert (a read-only database, a disk I/O error, a
closed connection) never kills the heartbeat thread: the turn keeper logs the error's type only and
keeps renewing on the next beat, and nothing reaches `threading.excepthook` (no traceback)."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

import pytest

from autopatch_tui.core.pipeline.heartbeat import Heartbeat
from autopatch_tui.core.pipeline.turn_keeper import TurnKeepers

SECRET = "/home/someone/private/memory.db"


def wait_for(cond, timeout: float = 3.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


@pytest.fixture
def hooked(monkeypatch: pytest.MonkeyPatch) -> list[threading.ExceptHookArgs]:
    seen: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", seen.append)
    return seen


def test_the_turn_keeper_keeps_renewing_after_an_sqlite_error(
        hooked: list, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []

    def renew(turn_id: str) -> bool:
        calls.append(turn_id)
        if len(calls) == 1:
            raise sqlite3.OperationalError(f"attempt to write a readonly database {SECRET}")
        return True

    keepers = TurnKeepers(renew, 0.01, release_connection=lambda: None)
    with caplog.at_level(logging.WARNING), keepers.keep("t1") as hb:
        assert wait_for(lambda: len(calls) >= 4), calls
        assert hb.running and not hb.fenced
        assert keepers.running() == ["t1"]
    assert hb.beats >= 3
    assert hooked == []
    assert capsys.readouterr().err == ""
    warned = [r.getMessage() for r in caplog.records if "heartbeat" in r.getMessage()]
    assert warned == ["memory heartbeat failed: OperationalError"]
    assert SECRET not in caplog.text


@pytest.mark.parametrize("error", [sqlite3.ProgrammingError("Cannot operate on a closed database."),
                                   sqlite3.DatabaseError("disk I/O error")])
def test_a_heartbeat_survives_any_sqlite_error_and_beats_again(hooked: list, error: sqlite3.Error) -> None:
    beats: list[int] = []

    def beat() -> bool:
        beats.append(1)
        if len(beats) == 1:
            raise error
        return True

    with Heartbeat(beat, lambda: None, 0.01) as hb:
        assert wait_for(lambda: hb.beats >= 2)
        assert hb.running
    assert not hb.fenced and hb.damage is None
    assert hooked == []
