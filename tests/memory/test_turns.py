"""Turns: RAW user text before the model call, the shown answer after it, one extraction job per ended
turn, lease recovery, and thread binding across /new ("普通 thread 跨重启延续", "/new")."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import MemoryFencedError, UsageError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import FakeClock, db_path, query, raw_connect, scalar

TURN_COLUMNS = {
    "id", "thread_id", "sequence", "intent", "state", "user_text", "assistant_text", "scope_paths",
    "evidence_keys", "owner", "lease_expires_at", "created_at", "ended_at",
}


def _jobs_for(db: Path, turn_id: str) -> list:
    return query(db, "SELECT * FROM memory_jobs WHERE turn_id = ?", (turn_id,))


def test_turns_table_holds_only_raw_user_and_shown_assistant_text(manager: MemoryManager, repo: Path) -> None:
    db = db_path(repo)
    cols = {r["name"] for r in query(db, "PRAGMA table_info(turns)")}
    assert cols == TURN_COLUMNS
    text_cols = {r["name"] for r in query(db, "PRAGMA table_info(turns)") if r["type"] == "TEXT"}
    # the only free-text content columns; the rest are IDs, enums and JSON path/key lists
    assert text_cols - {"id", "thread_id", "intent", "state", "scope_paths", "evidence_keys", "owner"} == {
        "user_text", "assistant_text"}


def test_begin_turn_stores_raw_text_before_anything_else(manager: MemoryManager, repo: Path) -> None:
    raw = "  Why does `parse()` fail?\n\t<b>not markup</b> [bold]x[/bold] \u4f60\u597d \U0001f600  \n"
    h = manager.begin_turn(raw, intent="code_explain", evidence_keys=["scan-1:F2"])
    rows = query(db_path(repo), "SELECT * FROM turns WHERE id = ?", (h.turn_id,))
    assert len(rows) == 1
    row = rows[0]
    assert row["user_text"] == raw  # byte-for-byte, untrimmed
    assert row["state"] == "open"
    assert row["assistant_text"] is None and row["ended_at"] is None
    assert row["intent"] == "code_explain"
    assert row["thread_id"] == h.thread_id == manager.status().active_thread_id
    assert row["sequence"] == h.sequence == 1
    assert json.loads(row["evidence_keys"]) == ["scan-1:F2"]
    assert row["owner"] == manager.owner
    assert not _jobs_for(db_path(repo), h.turn_id)  # nothing queued before the turn ends


@pytest.mark.parametrize("intent", ["chat", "", "GENERAL_CHAT", "general_chat "])
def test_unknown_intent_is_a_usage_error_and_stores_nothing(intent: str, manager: MemoryManager,
                                                            repo: Path) -> None:
    with pytest.raises(UsageError):
        manager.begin_turn("hi", intent=intent)
    assert scalar(db_path(repo), "SELECT count(*) FROM turns") == 0


@pytest.mark.parametrize("intent", C.INTENTS)
def test_every_known_intent_is_accepted(intent: str, manager: MemoryManager, repo: Path) -> None:
    h = manager.begin_turn("hi", intent=intent)
    assert scalar(db_path(repo), "SELECT intent FROM turns WHERE id = ?", (h.turn_id,)) == intent


def test_scope_paths_are_bounded_to_the_first_ten_in_input_order(manager: MemoryManager, repo: Path) -> None:
    paths = [f"src/z{i:02d}.py" for i in range(14, 0, -1)]  # deliberately not sorted
    h = manager.begin_turn("look at these", scope_paths=paths)
    assert list(h.scope_paths) == paths  # the workflow keeps everything
    assert list(h.stored_scope_paths) == paths[:10]
    stored = json.loads(scalar(db_path(repo), "SELECT scope_paths FROM turns WHERE id = ?", (h.turn_id,)))
    assert stored == paths[:10]


def test_exactly_ten_scope_paths_are_kept_whole(manager: MemoryManager, repo: Path) -> None:
    paths = [f"p{i}" for i in range(10)]
    h = manager.begin_turn("x", scope_paths=paths)
    assert json.loads(scalar(db_path(repo), "SELECT scope_paths FROM turns WHERE id = ?", (h.turn_id,))) == paths


def test_complete_turn_stores_the_shown_answer_verbatim_and_queues_one_job(manager: MemoryManager,
                                                                           repo: Path) -> None:
    db = db_path(repo)
    h = manager.begin_turn("explain")
    answer = "[bold]x[/bold] and [red]y[/] \u2014 \u00e9\u00e8 \u4e2d\u6587 \U0001f680\n```py\nprint(1)\n```\n  "
    manager.complete_turn(h, answer)
    row = query(db, "SELECT * FROM turns WHERE id = ?", (h.turn_id,))[0]
    assert row["assistant_text"] == answer
    assert row["user_text"] == "explain"
    assert row["state"] == "completed"
    assert row["ended_at"] is not None
    assert row["owner"] is None and row["lease_expires_at"] is None
    jobs = _jobs_for(db, h.turn_id)
    assert len(jobs) == 1
    job = jobs[0]
    assert (job["kind"], job["status"], job["thread_id"], job["sequence"]) == (
        "extraction", "pending", h.thread_id, h.sequence)
    assert job["attempts"] == 0 and job["provider_calls"] == 0

    with pytest.raises(MemoryFencedError):
        manager.complete_turn(h, "a second, different answer")
    with pytest.raises(MemoryFencedError):
        manager.fail_turn(h)
    assert len(_jobs_for(db, h.turn_id)) == 1
    assert scalar(db, "SELECT count(*) FROM memory_jobs") == 1
    assert scalar(db, "SELECT assistant_text FROM turns WHERE id = ?", (h.turn_id,)) == answer


def test_empty_answer_is_stored_as_empty_not_null(manager: MemoryManager, repo: Path) -> None:
    h = manager.begin_turn("q")
    manager.complete_turn(h, "")
    assert scalar(db_path(repo), "SELECT assistant_text FROM turns WHERE id = ?", (h.turn_id,)) == ""


def test_fail_turn_keeps_the_user_text_and_queues_one_job(manager: MemoryManager, repo: Path) -> None:
    db = db_path(repo)
    h = manager.begin_turn("RAW question that failed")
    manager.fail_turn(h)
    row = query(db, "SELECT * FROM turns WHERE id = ?", (h.turn_id,))[0]
    assert (row["state"], row["user_text"], row["assistant_text"]) == ("failed", "RAW question that failed", None)
    assert row["ended_at"] is not None
    assert len(_jobs_for(db, h.turn_id)) == 1
    with pytest.raises(MemoryFencedError):
        manager.complete_turn(h, "too late")
    assert scalar(db, "SELECT state FROM turns WHERE id = ?", (h.turn_id,)) == "failed"
    assert len(_jobs_for(db, h.turn_id)) == 1


def test_sequences_continue_within_the_thread(manager: MemoryManager) -> None:
    handles = [manager.begin_turn(f"q{i}") for i in range(3)]
    assert [h.sequence for h in handles] == [1, 2, 3]
    assert len({h.turn_id for h in handles}) == 3


def test_expired_open_turn_is_recovered_as_interrupted_on_next_start(repo: Path, settings: Settings) -> None:
    clock = FakeClock()
    first = MemoryManager.open(repo, settings, clock=clock)
    db = db_path(repo)
    try:
        h = first.begin_turn("the process will die before answering")
        assert scalar(db, "SELECT lease_expires_at FROM turns") == pytest.approx(clock.now() + 2)

        # a second process starting within the lease must not steal the turn
        early = MemoryManager.open(repo, settings, clock=FakeClock(clock.now() + 1.5))
        early.close()
        assert scalar(db, "SELECT state FROM turns") == "open"
        assert not _jobs_for(db, h.turn_id)

        # the owner's heartbeat extends the lease from its current time
        clock.advance(1.5)
        assert first.heartbeat_turns() == 1
        assert scalar(db, "SELECT lease_expires_at FROM turns") == pytest.approx(clock.now() + 2)
        later = MemoryManager.open(repo, settings, clock=FakeClock(clock.now() + 1.0))  # old lease would be over
        later.close()
        assert scalar(db, "SELECT state FROM turns") == "open"
    finally:
        first.close()  # "dies": no complete, no fail

    after = MemoryManager.open(repo, settings, clock=FakeClock(clock.now() + 2.5))
    try:
        row = query(db, "SELECT * FROM turns WHERE id = ?", (h.turn_id,))[0]
        assert row["state"] == "interrupted"
        assert row["user_text"] == "the process will die before answering"
        assert row["ended_at"] is not None and row["owner"] is None
        jobs = _jobs_for(db, h.turn_id)
        assert len(jobs) == 1 and jobs[0]["status"] == "pending"
        assert after.status().jobs.pending == 1
        assert after.recover() == []  # recovering again changes nothing
    finally:
        after.close()
    assert len(_jobs_for(db, h.turn_id)) == 1


def test_recovery_with_real_time_and_short_lease(repo: Path, settings: Settings) -> None:
    import time

    first = MemoryManager.open(repo, settings)
    h = first.begin_turn("open turn")
    first.close()
    time.sleep(settings.lease_seconds + 0.2)
    second = MemoryManager.open(repo, settings)
    try:
        assert scalar(db_path(repo), "SELECT state FROM turns WHERE id = ?", (h.turn_id,)) == "interrupted"
        assert len(_jobs_for(db_path(repo), h.turn_id)) == 1
    finally:
        second.close()


def test_heartbeat_renews_only_the_owners_open_turns(repo: Path, settings: Settings) -> None:
    clock = FakeClock()
    a = MemoryManager.open(repo, settings, clock=clock)
    b = MemoryManager.open(repo, settings, clock=clock)
    db = db_path(repo)
    try:
        ha = a.begin_turn("a's open turn")
        hb = b.begin_turn("b's open turn")
        done = a.begin_turn("a's finished turn")
        a.complete_turn(done, "ok")
        clock.advance(1.0)
        assert a.heartbeat_turns() == 1
        leases = {r["id"]: r["lease_expires_at"] for r in query(db, "SELECT id, lease_expires_at FROM turns")}
        assert leases[ha.turn_id] == pytest.approx(clock.now() + 2)
        assert leases[hb.turn_id] == pytest.approx(clock.now() - 1 + 2)  # untouched
        assert leases[done.turn_id] is None
    finally:
        a.close()
        b.close()


def test_late_completion_of_a_recovered_turn(repo: Path, settings: Settings) -> None:
    """A turn recovered as interrupted whose job has not run yet may still receive its real answer (still one
    job); once its job was processed the late answer is fenced."""
    clock = FakeClock()
    slow = MemoryManager.open(repo, settings, clock=clock)
    db = db_path(repo)
    try:
        h1 = slow.begin_turn("slow one")
        h2 = slow.begin_turn("slow two")
        MemoryManager.open(repo, settings, clock=FakeClock(clock.now() + 10)).close()
        assert [r["state"] for r in query(db, "SELECT state FROM turns ORDER BY sequence")] == [
            "interrupted", "interrupted"]
        slow.complete_turn(h1, "late answer")
        assert query(db, "SELECT state, assistant_text FROM turns WHERE id = ?", (h1.turn_id,))[0][:] == (
            "completed", "late answer")
        assert len(_jobs_for(db, h1.turn_id)) == 1

        conn = raw_connect(db)
        conn.execute("UPDATE memory_jobs SET attempts = 1 WHERE turn_id = ?", (h2.turn_id,))
        conn.close()
        with pytest.raises(MemoryFencedError):
            slow.complete_turn(h2, "too late")
        assert query(db, "SELECT state, assistant_text FROM turns WHERE id = ?", (h2.turn_id,))[0][:] == (
            "interrupted", None)
    finally:
        slow.close()


def test_started_turn_stays_bound_to_its_thread_across_new(manager: MemoryManager, repo: Path) -> None:
    db = db_path(repo)
    h = manager.begin_turn("question asked in thread A")
    thread_a = h.thread_id
    result = manager.new_thread()
    assert result.old_thread_id == thread_a
    thread_b = result.new_thread_id
    assert thread_b != thread_a

    manager.complete_turn(h, "answer shown after /new")

    row = query(db, "SELECT * FROM turns WHERE id = ?", (h.turn_id,))[0]
    assert row["thread_id"] == thread_a and row["state"] == "completed"
    assert query(db, "SELECT status, archived_at IS NOT NULL AS a FROM threads WHERE id = ?",
                 (thread_a,))[0][:] == ("archived", 1)
    assert scalar(db, "SELECT status FROM threads WHERE id = ?", (thread_b,)) == "active"
    assert scalar(db, "SELECT count(*) FROM turns WHERE thread_id = ?", (thread_b,)) == 0
    assert _jobs_for(db, h.turn_id)[0]["thread_id"] == thread_a
    # the next turn starts the new thread at sequence 1
    h2 = manager.begin_turn("first question in B")
    assert (h2.thread_id, h2.sequence) == (thread_b, 1)
    assert manager.status().active_thread_id == thread_b


def test_new_thread_reports_the_old_threads_pending_jobs(manager: MemoryManager) -> None:
    for i in range(3):
        h = manager.begin_turn(f"q{i}")
        manager.complete_turn(h, "a")
    result = manager.new_thread(timeout=0.1)
    assert result.flush.pending == 3 and result.flush.completed == 0
    again = manager.new_thread(timeout=0.1)  # the new thread has no jobs of its own
    assert again.flush.pending == 0
    assert again.old_thread_id == result.new_thread_id
    report = manager.status()
    assert report.threads == 3 and report.jobs.pending == 3


def _check_concurrency_invariants(db: Path, expected: int) -> None:
    assert scalar(db, "SELECT count(*) FROM threads WHERE status = 'active'") == 1
    assert scalar(db, "SELECT count(*) FROM threads") == 1
    seqs = [r[0] for r in query(db, "SELECT sequence FROM turns ORDER BY sequence")]
    assert seqs == list(range(1, expected + 1))
    assert scalar(db, "SELECT count(DISTINCT thread_id) FROM turns") == 1
    assert scalar(db, "SELECT count(*) FROM turns WHERE state = 'completed'") == expected
    assert scalar(db, "SELECT count(*) FROM memory_jobs WHERE kind = 'extraction'") == expected
    assert scalar(db, "SELECT count(DISTINCT turn_id) FROM memory_jobs") == expected
    # every answer landed on its own question
    assert scalar(db, "SELECT count(*) FROM turns WHERE replace(user_text, 'question', 'answer') != assistant_text") == 0


def test_threads_sharing_one_manager_write_concurrently(manager: MemoryManager, repo: Path) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(tag: str) -> None:
        try:
            barrier.wait(timeout=30)
            for i in range(50):
                h = manager.begin_turn(f"{tag} question {i}")
                manager.complete_turn(h, f"{tag} answer {i}")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not errors, errors
    _check_concurrency_invariants(db_path(repo), 200)


@pytest.mark.slow
def test_processes_write_concurrently(repo: Path, settings: Settings) -> None:
    from tests.memory import _workers

    MemoryManager.open(repo, settings).close()
    results = _workers.run_parallel(_workers.write_turns, 4, str(repo), 100, lambda i: f"p{i}")
    assert sum(len(r) for r in results) == 400
    assert len({t for r in results for t in r}) == 400
    _check_concurrency_invariants(db_path(repo), 400)
