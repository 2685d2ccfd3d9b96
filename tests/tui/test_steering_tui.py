"""Memory the user steers, in the app (issue 31): `/remember` answers with a receipt under the line
(live, over the stub); Enter on its "not remembered" line keeps the candidate anyway; the quiet
"Memory used: N · F4" line under an answer expands to the items with their quotes; History shows per
turn what reached the answer; the browser's "Not remembered" list keeps on Enter and opens the turn
on `j`. Snapshots at 80×24 and 120×36 of the receipt, the expanded line and the list."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest
import time_machine

from autopatch_tui.core import ids
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import memory_used, refused_store, steering
from autopatch_tui.core.memory.memory_used import UsedItem
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.screens.memory_refused import RefusedView
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.steer_notes import (
    MemoryUsedNote,
    ReceiptNote,
    RefusedNote,
)
from tests.support.memory_factory import add_item
from tests.tui.test_chat import SIZE, make_app, model_settings, type_and_send, wait_idle

FROZEN = "2026-12-07 12:00:00 +0000"
FIELDS = ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode", "applies_to_paths",
          "aliases", "keywords")


async def poll(pilot, pred, timeout: float = 15.0):
    for _ in range(int(timeout / 0.05)):
        value = pred()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError("condition not met")


def _cand(turn_id: str, quote: str, statement: str, kind: str = "user_preference") -> dict:
    return {"kind": kind, "subject": statement.lower()[:30], "statement": statement, "content": "",
            "strength": "soft", "origin": "explicit", "recall_mode": "on_match", "applies_to_paths": [],
            "aliases": [], "keywords": [], "sources": [{"turn_id": turn_id, "role": "user", "quote": quote}]}


def _create_all(req) -> dict:
    cands = json.loads(req.body["messages"][-1]["content"])["candidates"]
    return {"operations": [{"operation": "create", "candidate_ids": [c["candidate_id"]], "target_id": None,
                            **{k: c[k] for k in FIELDS}} for c in cands]}


def test_remember_receipt_and_keeping_a_refusal_anyway(repo, llm_stub) -> None:
    def extraction(req):
        turn = json.loads(req.body["messages"][-1]["content"])["turns"][-1]
        return {"thread_checkpoint": "rules", "candidates": [
            _cand(turn["turn_id"], "always use pnpm for installs", "Use pnpm for installs.", "project_decision"),
            _cand(turn["turn_id"], "the lockfile lives in the repo root", "The lockfile lives in the repo root.",
                  "project_decision")]}

    llm_stub.default("extraction", extraction)
    llm_stub.default("consolidation", _create_all)
    app = make_app(repo, model_settings(llm_stub))

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/remember From now on always use pnpm for installs; the lockfile lives in "
                                       "the repo root")
            receipt = await poll(pilot, lambda: app.screen.query(ReceiptNote))
            text = receipt.first().render().plain
            assert text.startswith("remembered · decision · Use pnpm for installs. · mem-")
            [refused] = app.screen.query(RefusedNote)
            assert refused.render().plain.startswith("not remembered · a fact about the code, not a decision")
            [turn] = app.manager.recent_turns()
            assert turn.user_text.startswith("/remember From now on")  # the RAW turn, as typed
            refused.focus()
            await pilot.press("enter")
            await poll(pilot, lambda: "kept anyway" in refused.render().plain)
            statements = {i.statement for i in app.manager.list_items()}
            assert statements == {"Use pnpm for installs.", "The lockfile lives in the repo root."}
            [kept] = [i for i in app.manager.list_items() if i.statement.startswith("The lockfile")]
            assert [k.rule for k in steering.kept_over(app.manager, kept.id)] == ["code_fact"]
            await pilot.press("ctrl+q")
            await wait_idle(pilot, app)

    asyncio.run(run())


def test_memory_used_line_expands_and_history_shows_it(repo, llm_stub) -> None:
    mgr = MemoryManager.open(repo, model_settings(llm_stub))
    t0 = mgr.begin_turn("From now on answer in English, please.")
    mgr.complete_turn(t0, "Sure.")
    add_item(mgr.store.conn(), kind="user_preference", subject="answers", statement="Answer in English.",
             recall_mode="always", sources=[(t0.turn_id, "user", "answer in English")])
    mgr.close()
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", "Hello.")
    app = make_app(repo, model_settings(llm_stub))

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "hi there")
            note = await poll(pilot, lambda: app.screen.query(MemoryUsedNote))
            note = note.first()
            assert note.render().plain.startswith("Memory used: 1 · F4")
            note.focus()
            await pilot.press("enter")
            await poll(pilot, lambda: note.expanded)
            text = note.render().plain
            assert "standing · preference · Answer in English. · “answer in English”" in text
            await pilot.press("enter")  # folds again
            assert not note.expanded and "Answer in English" not in note.render().plain
            turn_id = note.turn_id
            await pilot.press("f3")
            await wait_idle(pilot, app)
            app.screen.show_turn(turn_id)

            def detail() -> str:
                return app.screen.query_one("#detail-text").render().plain

            await poll(pilot, lambda: "Memory used: 1 · standing mem-" in detail())
            await pilot.press("ctrl+q")
            await wait_idle(pilot, app)

    asyncio.run(run())


def test_the_not_remembered_list_keeps_on_enter(repo, llm_stub) -> None:
    mgr = MemoryManager.open(repo, model_settings(llm_stub))
    t = mgr.begin_turn("for this release keep the old API around")
    mgr.complete_turn(t, "ok")
    refused_store.add(mgr.paths, mgr.store.conn(), [refused_store.for_file(
        "one_off_scope", t.turn_id, _cand(t.turn_id, "for this release keep the old API around",
                                          "Keep the old API."), key="ref-1", at=1.0)])
    mgr.close()
    llm_stub.default("consolidation", _create_all)
    app = make_app(repo, model_settings(llm_stub))

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f4")
            await wait_idle(pilot, app)
            app.screen.show_view("refused")
            view = app.screen.query_one(RefusedView)
            await poll(pilot, lambda: view.entries)
            await pilot.press("enter")
            await poll(pilot, lambda: app.manager.list_items())
            [item] = app.manager.list_items()
            assert item.statement == "Keep the old API."
            await poll(pilot, lambda: not view.entries)
            app.screen.show_view("items")  # the item's history says what it was kept over
            app.screen.select_item(item.id, force=True)
            await poll(pilot, lambda: "Kept over rule: one-off request (one_off_scope)" in app.screen.query_one(
                "#mb-history").render().plain)
            await pilot.press("f2")
            await pilot.press("ctrl+q")
            await wait_idle(pilot, app)

    asyncio.run(run())


# --------------------------------------------------------------------------- snapshots


@pytest.fixture
def deterministic(monkeypatch):
    counter = itertools.count(1)
    monkeypatch.setattr(ids.os, "urandom", lambda n: next(counter).to_bytes(n, "big"))
    with time_machine.travel(FROZEN, tick=False):
        yield


def _seed(repo: Path, settings) -> tuple[MemoryManager, str, str]:
    mgr = MemoryManager.open(repo, settings)
    conn = mgr.store.conn()
    t1 = mgr.begin_turn("From now on answer in English, and keep replies short.")
    mgr.complete_turn(t1, "Understood.")
    a = add_item(conn, kind="user_preference", subject="answers", statement="Answer in English.",
                 recall_mode="always", sources=[(t1.turn_id, "user", "answer in English")])
    b = add_item(conn, subject="parser", statement="Keep the parser recursive descent.",
                 sources=[(t1.turn_id, "user", "keep replies short")])
    t2 = mgr.begin_turn("How does the parser work?")
    mgr.complete_turn(t2, "It is a recursive descent parser.")
    memory_used.record(mgr.paths, t2.turn_id, [UsedItem(a.logical_id, 1, "standing"),
                                               UsedItem(b.logical_id, 1, "matched", None)])
    conn.execute("UPDATE memory_jobs SET status = 'succeeded', completed_at = updated_at")
    refused_store.add(mgr.paths, conn, [
        refused_store.for_file("one_off_scope", t1.turn_id, _cand(t1.turn_id, "keep replies short",
                                                                  "Keep replies short."), key="ref-1", at=1.0),
        refused_store.for_file("code_fact", t2.turn_id, _cand(t2.turn_id, "How does the parser work?",
                                                              "The parser works."), key="ref-2", at=2.0)])
    return mgr, t1.turn_id, t2.turn_id


def _quiet(pilot) -> None:
    for prompt in pilot.app.screen.query("PromptInput"):
        prompt.cursor_blink = False


async def _notes_landed(pilot) -> None:
    """The chat's Memory notes of the loaded turns are shown (they come on a timer after the start)."""
    screen = pilot.app.screen
    for _ in range(100):
        await pilot.pause(0.05)
        if len(screen.query("MemoryTurnNote")) == 1 and not screen._memory_watch:
            break
    await pilot.app.workers.wait_for_complete()
    assert not screen._memory_watch


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_receipt_snapshot(snap_compare, tmp_path: Path, settings, deterministic, size) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    mgr, t1, _ = _seed(repo, settings)
    item = mgr.list_items(kind="user_preference")[0]
    app = AutopatchApp(Services(mgr, settings))

    async def run_before(pilot) -> None:
        _quiet(pilot)
        await _notes_landed(pilot)
        screen = pilot.app.screen
        await screen.log_view.add_user("/remember From now on answer in English, and keep replies short.")
        receipt = steering.Receipt(t1, [item], [steering.Refusal("one_off_scope", "one-off request")])
        await screen._show_receipt(receipt, steering.refused_of_turn(mgr, t1))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_memory_used_expanded_snapshot(snap_compare, tmp_path: Path, settings, deterministic, size) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    mgr, _, _ = _seed(repo, settings)
    memory_used._recent.clear()  # as after a restart: the line comes from the file
    app = AutopatchApp(Services(mgr, settings))

    async def run_before(pilot) -> None:
        _quiet(pilot)
        await _notes_landed(pilot)
        note = pilot.app.screen.query_one(MemoryUsedNote)
        note.focus()
        await pilot.press("enter")
        for _ in range(60):
            await pilot.pause(0.05)
            if note.expanded:
                break
        await pilot.app.workers.wait_for_complete()
        assert note.expanded
        note.scroll_visible(animate=False)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_not_remembered_list_snapshot(snap_compare, tmp_path: Path, settings, deterministic, size) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    mgr, _, _ = _seed(repo, settings)
    app = AutopatchApp(Services(mgr, settings))

    async def run_before(pilot) -> None:
        _quiet(pilot)
        await pilot.press("f4")
        await pilot.app.workers.wait_for_complete()
        pilot.app.screen.show_view("refused")
        view = pilot.app.screen.query_one(RefusedView)
        for _ in range(60):
            await pilot.pause(0.05)
            if view.entries:
                break
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert len(view.entries) == 2

    assert snap_compare(app, terminal_size=size, run_before=run_before)
