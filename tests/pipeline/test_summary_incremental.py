"""The incremental review summary equals a fresh full render after every change, and it never trusts
its state across what the change journal cannot vouch for (another connection's raw write, an
untracked retirement, a clear, a restart)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from autopatch_tui.core.memory import change_journal
from autopatch_tui.core.memory.item_writes import insert_revision, retire_revision
from autopatch_tui.core.memory.items import ItemFields, bump_data_version, forget_item
from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn
from autopatch_tui.core.pipeline import summary, summary_state
from tests.support.recall_seed import active_thread

KINDS = ("user_preference", "project_decision", "discussion_context")
WORDS = ("tabs", "Tabs", "cache", "retry", "éclair", "Zeta", "alpha", "向后兼容", "loader", "beta")


@pytest.fixture(autouse=True)
def _fresh_state():
    summary_state.reset()
    yield
    summary_state.reset()


class Writer:
    """Random tracked writes, as consolidation and forget do them (clock sometimes going back)."""

    def __init__(self, conn: sqlite3.Connection, thread: str, rng: random.Random) -> None:
        self.conn, self.thread, self.rng = conn, thread, rng
        self.n = 0
        self.now = 1000.0

    def fields(self, kind: str | None = None) -> ItemFields:
        self.n += 1
        kind = kind or self.rng.choice(KINDS)
        return ItemFields(
            kind=kind, subject=f"{self.rng.choice(WORDS)} {self.n}", statement=f"Statement {self.n}.", content="",
            strength=self.rng.choice(("hard", "soft")), origin="explicit",
            recall_mode=self.rng.choice(("always", "on_match")),
            applies_to_paths=tuple(self.rng.sample(["src/a.py", "docs", "lib/**"], self.rng.randint(0, 2))),
            thread_id=self.thread if kind == "discussion_context" else None)

    def tick(self) -> float:
        # mostly forward, sometimes equal (ties broken by row ID), sometimes backwards
        self.now += self.rng.choice((1.0, 1.0, 0.0, -50.0))
        return self.now

    def active(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT row_id, logical_id, revision, kind FROM memory_items"
                                 " WHERE status = 'active' ORDER BY row_id").fetchall()

    def commit(self, creates: int, revises: int) -> None:
        conn = self.conn
        with change_journal.tracked(conn), write_txn(conn):
            now = self.tick()
            for _ in range(creates):
                insert_revision(conn, self.fields(), logical_id=None, revision=1, now=now)
            for r in self.rng.sample(self.active(), min(revises, len(self.active()))):
                retire_revision(conn, r["row_id"], status="superseded", replaced_by=None, now=now)
                insert_revision(conn, self.fields(r["kind"]), logical_id=r["logical_id"],
                                revision=r["revision"] + 1, now=now)
            bump_data_version(conn)

    def forget(self) -> None:
        rows = self.active()
        if rows:
            forget_item(self.conn, self.rng.choice(rows)["logical_id"], now=self.tick())


def check(conn: sqlite3.Connection, now: float) -> None:
    got, version = summary_state.render(conn, now=now)
    want, want_version = summary.render(conn, now=now)
    assert (got, version) == (want, want_version)


@pytest.mark.parametrize(("seed", "limit"), [(1, 4), (2, 9), (3, summary.MAX_ITEMS_PER_KIND)])
def test_random_commits_revisions_and_forgets_match_a_full_render(manager, monkeypatch, seed: int, limit: int) -> None:
    monkeypatch.setattr(summary, "MAX_ITEMS_PER_KIND", limit)  # small lists: the cut-off and refill paths run
    conn = manager.store.conn()
    w = Writer(conn, active_thread(conn), random.Random(seed))
    check(conn, 1.0)  # empty store, full render
    before = dict(summary_state.stats)
    for step in range(70):
        action = w.rng.random()
        if action < 0.45:
            w.commit(w.rng.randint(0, 3), w.rng.randint(0, 2))
        elif action < 0.8:
            w.forget()
        else:
            w.commit(0, w.rng.randint(1, 3))  # revisions only: listed rows leave, their next revisions enter
        if w.rng.random() < 0.7:  # sometimes several writes between two refreshes
            check(conn, 2.0 + step)
    check(conn, 100.0)
    assert summary_state.stats["full"] == before["full"]  # every refresh after the first was incremental
    assert summary_state.stats["incremental"] - before["incremental"] >= 40
    counts = dict(conn.execute("SELECT kind, count(*) FROM memory_items WHERE status = 'active' GROUP BY kind"))
    assert any(n > limit for n in counts.values()) or limit == summary.MAX_ITEMS_PER_KIND


def test_what_the_journal_cannot_vouch_for_forces_a_full_render(manager, repo, monkeypatch) -> None:
    monkeypatch.setattr(summary, "MAX_ITEMS_PER_KIND", 3)
    conn = manager.store.conn()
    w = Writer(conn, active_thread(conn), random.Random(7))
    w.commit(8, 0)
    check(conn, 1.0)

    def full_renders() -> int:
        return summary_state.stats["full"]

    # another process forgets a listed item with raw SQL (no journal entry here): a version gap
    other = open_readwrite(repo / ".autopatch-j" / "memory.db")
    try:
        victim = conn.execute("SELECT row_id FROM memory_items WHERE status = 'active'"
                              " ORDER BY updated_at DESC, row_id DESC LIMIT 1").fetchone()[0]
        with write_txn(other):
            other.execute("UPDATE memory_items SET status = 'forgotten' WHERE row_id = ?", (victim,))
            other.execute("UPDATE memory_meta SET data_version = data_version + 1 WHERE id = 1")
    finally:
        other.close()
    n = full_renders()
    check(conn, 2.0)
    assert full_renders() == n + 1

    # an untracked retirement (no version bump of its own) followed by a tracked commit: poisoned
    w.commit(1, 0)
    check(conn, 3.0)
    with write_txn(conn):
        row = conn.execute("SELECT row_id FROM memory_items WHERE status = 'active' LIMIT 1").fetchone()[0]
        retire_revision(conn, row, status="superseded", replaced_by=None, now=5.0)
    w.commit(1, 0)
    n = full_renders()
    check(conn, 4.0)
    assert full_renders() == n + 1

    # a tracked transaction that retires a row without bumping the version: no version range covers
    # the retirement, so it poisons the journal like an untracked one (a careless one drops the row)
    w.commit(1, 0)
    check(conn, 4.5)
    with change_journal.tracked(conn), write_txn(conn):
        row = conn.execute("SELECT row_id FROM memory_items WHERE status = 'active'"
                           " ORDER BY updated_at DESC, row_id DESC LIMIT 1").fetchone()[0]
        retire_revision(conn, row, status="superseded", replaced_by=None, now=5.5)
    w.commit(1, 0)
    n = full_renders()
    check(conn, 4.75)
    assert full_renders() == n + 1

    # a rolled-back tracked transaction publishes nothing, and the next commit is still incremental
    with pytest.raises(RuntimeError), change_journal.tracked(conn), write_txn(conn):
        row = conn.execute("SELECT row_id FROM memory_items WHERE status = 'active' LIMIT 1").fetchone()[0]
        retire_revision(conn, row, status="superseded", replaced_by=None, now=6.0)
        bump_data_version(conn)
        raise RuntimeError("rolled back")
    w.forget()
    n = full_renders()
    check(conn, 5.0)
    assert full_renders() == n

    # items written without a version bump (a seed, a tool) are read by row ID all the same
    with write_txn(conn):
        insert_revision(conn, w.fields(), logical_id=None, revision=1, now=w.tick())
    w.commit(0, 1)
    check(conn, 6.0)

    # a clear deletes every row (row IDs start again below the highest one seen) and bumps the generation
    from autopatch_tui.core.memory.clear import clear_healthy

    clear_healthy(conn, now=w.tick())
    w.thread = active_thread(conn)
    w.commit(3, 0)
    n = full_renders()
    check(conn, 7.0)
    assert full_renders() == n + 1
    w.commit(1, 1)
    check(conn, 8.0)


def test_a_restart_never_trusts_a_state_it_did_not_build(manager) -> None:
    conn = manager.store.conn()
    w = Writer(conn, active_thread(conn), random.Random(9))
    w.commit(5, 0)
    check(conn, 1.0)
    summary_state.reset()  # the process died: its state and journal are gone
    change_journal._journal.clear()
    w.forget()
    w.commit(2, 1)
    n = summary_state.stats["full"]
    check(conn, 2.0)  # the summary on disk (or none) is not read back: a full render
    assert summary_state.stats["full"] == n + 1
    manager.runner.refresh_summary()
    text = manager.paths.summary.read_text(encoding="utf-8")
    want, _ = summary.render(conn, now=manager.runner.clock.now())
    assert text.split("\n", 3)[3] == want.split("\n", 3)[3]  # the same items and counts (header time aside)


def test_a_rare_kinds_most_recent_rows_are_the_same_whichever_way_they_are_read(manager, monkeypatch) -> None:
    # a rare kind is read whole and cut in Python, a common one through the (status, updated_at) index
    monkeypatch.setattr(summary, "MAX_ITEMS_PER_KIND", 3)
    conn = manager.store.conn()
    w = Writer(conn, active_thread(conn), random.Random(11))
    with write_txn(conn):
        for n in range(45):
            kind = "user_preference" if n % 9 == 0 else "project_decision"
            insert_revision(conn, w.fields(kind), logical_id=None, revision=1, now=w.rng.choice((5.0, 9.0, 1.0, 9.0)))
        bump_data_version(conn)
    got, _ = summary_state.render(conn, now=1.0)
    assert summary_state.stats["full"] >= 1
    assert got == summary.render(conn, now=1.0)[0]
    assert "## User preferences (5)" in got and "… and 2 more" in got


def test_the_runner_refreshes_incrementally_after_its_own_commits_and_forgets(make_manager, llm_stub) -> None:
    from tests.support.pipeline_helpers import add_turn, cand, create_all, ext_reply, src

    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    for text, subject in (("From now on always use tabs.", "indentation style"),
                          ("Keep lines under 100 characters.", "line length")):
        t = add_turn(mgr, text, "ok")
        llm_stub.script("extraction", ext_reply(cand(src(t, "user", text.rstrip(".")), subject=subject,
                                                     statement=text)))
        while mgr.runner.step(force=True) is not None:
            pass
        before = dict(summary_state.stats)
        mgr.runner.summary_schedule.flush()
    assert summary_state.stats["incremental"] == before["incremental"] + 1  # the second refresh
    assert summary_state.stats["full"] == before["full"]
    mgr.forget(mgr.list_items()[0].id)  # a forget through the manager is journaled too
    before = dict(summary_state.stats)
    mgr.runner.refresh_summary()
    assert summary_state.stats["incremental"] == before["incremental"] + 1
    body = mgr.paths.summary.read_text(encoding="utf-8").split("\n", 3)[3]
    assert body == summary.render(mgr.store.conn(), now=0.0)[0].split("\n", 3)[3]
    assert "(1)" in body and mgr.status().summary.status == "current"
