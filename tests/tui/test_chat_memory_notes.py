"""The chat says what happened to Memory (issue 21.3): once a turn's Memory work lands, a line under
the turn says "remembered · preference · …", "updated" with the old statement struck through, or
"not remembered · <the rule in words>"; nothing while the work is pending; nothing of it in the log.
Through the real pipeline over the stub (a live turn), and snapshots at 80×24 and 120×36 of turns
loaded at start."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from pathlib import Path

import pytest
import time_machine

from autopatch_tui.core import ids
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.refusal_words import RULE_WORDS
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.memory_turn_note import MemoryTurnNote
from autopatch_tui.tui.widgets.steer_notes import RefusedNote
from tests.support.memory_factory import add_item
from tests.tui.test_chat import SIZE, make_app, model_settings, type_and_send, wait_idle

FROZEN = "2026-11-29 12:00:00 +0000"
QUOTE_MARK = "PRIVATE-QUOTE-7781"


def _note_lines(app) -> list[str]:
    return [n.render().plain for n in app.screen.query(MemoryTurnNote)]


def test_a_live_turn_shows_what_its_memory_work_did_once_it_lands(repo, llm_stub, caplog) -> None:
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", "Noted.")
    settings = model_settings(llm_stub)

    def extraction(req):
        turn = json.loads(req.body["messages"][-1]["content"])["turns"][0]
        src = {"turn_id": turn["turn_id"], "role": "user"}
        return {"thread_checkpoint": "preferences", "candidates": [
            {"kind": "user_preference", "subject": "type hints", "statement": "Always use type hints.",
             "content": "", "strength": "hard", "origin": "explicit", "recall_mode": "on_match",
             "applies_to_paths": [], "aliases": [], "keywords": [],
             "sources": [{**src, "quote": f"always use type hints {QUOTE_MARK}"}]},
            {"kind": "user_preference", "subject": "answer length", "statement": "Keep answers short.",
             "content": "", "strength": "soft", "origin": "explicit", "recall_mode": "on_match",
             "applies_to_paths": [], "aliases": [], "keywords": [],
             "sources": [{**src, "quote": "For this answer keep it short"}]}]}

    def consolidation(req):
        c = json.loads(req.body["messages"][-1]["content"])["candidates"][0]
        fields = {k: c[k] for k in ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
                                    "applies_to_paths", "aliases", "keywords")}
        return {"operations": [{"operation": "create", "candidate_ids": [c["candidate_id"]], "target_id": None,
                                **fields}]}

    llm_stub.default("extraction", extraction)
    llm_stub.default("consolidation", consolidation)
    app = make_app(repo, settings)
    caplog.set_level(logging.DEBUG)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, f"From now on always use type hints {QUOTE_MARK}. For this answer keep it short.")
            await wait_idle(pilot, app)
            assert _note_lines(app) == []  # the Memory work has not run yet
            await asyncio.to_thread(app.manager.process_pending)
            for _ in range(200):
                await pilot.pause(0.05)
                if _note_lines(app):
                    break
            [text] = _note_lines(app)
            assert text.splitlines() == ["remembered · preference · Always use type hints.  (F4 to review)"]
            # the refusal is its own line, kept for rescue (issue 31.2): Enter on it keeps it anyway
            [refused] = app.screen.query(RefusedNote)
            words = refused.render().plain.removeprefix("not remembered · ").partition(" · ")[0]
            assert words in RULE_WORDS.values()  # the rule, in words
            assert "Keep answers short." in refused.render().plain
            note = app.screen.query_one(MemoryTurnNote)
            answer = app.screen.query("AssistantMessage").last()
            children = list(note.parent.children)
            assert children.index(note) == children.index(answer) + 1  # right under its turn
            assert children.index(refused) == children.index(note) + 1
            refused.focus()
            await pilot.press("enter")
            for _ in range(200):
                await pilot.pause(0.05)
                if "kept anyway" in refused.render().plain:
                    break
            assert "kept anyway · mem-" in refused.render().plain
            statements = {i.statement for i in app.manager.list_items()}
            assert statements == {"Always use type hints.", "Keep answers short."}
            await pilot.press("ctrl+q")
            await wait_idle(pilot, app)

    asyncio.run(run())
    assert QUOTE_MARK not in caplog.text and "Always use type hints" not in caplog.text


# --------------------------------------------------------------------------- snapshots


@pytest.fixture
def deterministic(monkeypatch):
    counter = itertools.count(1)
    monkeypatch.setattr(ids.os, "urandom", lambda n: next(counter).to_bytes(n, "big"))
    with time_machine.travel(FROZEN, tick=False):
        yield


def _landed(mgr: MemoryManager, turn_id: str, verdict: str | None = None) -> None:
    conn = mgr.store.conn()
    with write_txn(conn):
        conn.execute("UPDATE memory_jobs SET status = 'succeeded', completed_at = updated_at, failure_rule = ?"
                     " WHERE turn_id = ?", (verdict, turn_id))


def populate(mgr: MemoryManager) -> None:
    conn = mgr.store.conn()
    t1 = mgr.begin_turn("From now on always use type hints. For this answer keep it short.")
    mgr.complete_turn(t1, "Understood: type hints everywhere.")
    item = add_item(conn, kind="user_preference", subject="type hints", statement="Always use type hints.",
                    sources=[(t1.turn_id, "user", "always use type hints")])
    _landed(mgr, t1.turn_id, "one_off_scope:1")
    t2 = mgr.begin_turn("Actually, lint with ruff instead of flake8.")
    mgr.complete_turn(t2, "Switching the linter to ruff.")
    old = add_item(conn, subject="linter", statement="Lint with flake8.")
    add_item(conn, subject="linter", statement="Lint with ruff.", logical_id=old.logical_id, revision=2,
             sources=[(t2.turn_id, "user", "lint with ruff instead of flake8")])
    _landed(mgr, t2.turn_id)
    t3 = mgr.begin_turn("Should we maybe try uv some day?")
    mgr.complete_turn(t3, "We could evaluate uv later.")
    _landed(mgr, t3.turn_id, "undecided:1")
    t4 = mgr.begin_turn("How does the parser work?")
    mgr.complete_turn(t4, "It tokenizes, then builds a tree.")  # still pending: no note
    del item


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_chat_memory_notes_snapshot(snap_compare, tmp_path: Path, settings, deterministic, size) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    mgr = MemoryManager.open(repo, settings)
    populate(mgr)
    app = AutopatchApp(Services(mgr, settings))

    async def run_before(pilot) -> None:
        for prompt in pilot.app.screen.query("PromptInput"):
            prompt.cursor_blink = False
        for _ in range(40):
            await pilot.pause(0.05)
            if len(pilot.app.screen.query(MemoryTurnNote)) == 3:
                break
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert len(pilot.app.screen.query(MemoryTurnNote)) == 3

    assert snap_compare(app, terminal_size=size, run_before=run_before)
