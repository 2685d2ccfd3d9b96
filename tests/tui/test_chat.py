"""Pilot tests of the chat screen and the app shell, through the stub model server."""

from __future__ import annotations

import asyncio
import json

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.services import Services
from autopatch_tui.tui.widgets.chat_log import AssistantMessage, FailedTurnNote, NoteMessage, UserMessage
from tests.support.fixtures import write_old_store
from tests.support.llm_stub import Reply, free_port
from tests.support.tui_wait import click

SIZE = (110, 34)


def model_settings(stub, **env):
    return load_settings({**__import__("os").environ, "AUTOPATCH_LLM_BASE_URL": stub.base_url,
                          "AUTOPATCH_LLM_MODEL": "gpt-4o", **env}, llm_max_retries=0, llm_timeout_seconds=10)


def unreachable_settings(host: str) -> tuple:
    """Settings for an endpoint on `host` at a port nobody listens on, with a private path and a key
    that must never be shown; returns (settings, port)."""
    port = free_port()
    settings = load_settings({**__import__("os").environ,
                              "AUTOPATCH_LLM_BASE_URL": f"http://{host}:{port}/secret-path/v1",
                              "AUTOPATCH_LLM_MODEL": "gpt-4o", "AUTOPATCH_LLM_API_KEY": "sk-SECRET-KEY"},
                             llm_max_retries=0, llm_timeout_seconds=5)
    return settings, port


def make_app(repo, settings) -> AutopatchApp:
    return AutopatchApp(Services(MemoryManager.open(repo, settings), settings))


async def wait_idle(pilot, app, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        await pilot.pause(0.05)
        screen = app.screen
        if not getattr(screen, "busy", False) and not any(w.is_running for w in app.workers):
            return
    raise AssertionError("the app did not become idle")


def notes(app) -> list[str]:
    return [str(n.render()) for n in app.screen.query(NoteMessage)]


async def type_and_send(pilot, text: str) -> None:
    await click(pilot, "#prompt")
    prompt = pilot.app.screen.query_one("#prompt")
    prompt.insert(text)
    await pilot.press("enter")
    await pilot.pause()  # let the submit reach its handler before anyone waits for idleness


def test_message_streams_saves_turn_and_memory_forms_then_is_forgotten(repo, llm_stub):
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", "Use **tabs**, as you prefer [bold]really[/bold].")
    settings = model_settings(llm_stub)

    def extraction(req):
        body = json.loads(req.body["messages"][-1]["content"])
        turn = body["turns"][0]
        return {"thread_checkpoint": "indentation preference", "candidates": [{
            "kind": "user_preference", "subject": "indentation", "statement": "Always indent with tabs.",
            "content": "", "strength": "hard", "origin": "explicit", "recall_mode": "always",
            "applies_to_paths": [], "aliases": ["tabs"], "keywords": ["indentation"],
            "sources": [{"turn_id": turn["turn_id"], "role": "user", "quote": "always indent with tabs"}]}]}

    def consolidation(req):
        body = json.loads(req.body["messages"][-1]["content"])
        c = body["candidates"][0]
        fields = {k: c[k] for k in ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
                                    "applies_to_paths", "aliases", "keywords")}
        return {"operations": [{"operation": "create", "candidate_ids": [c["candidate_id"]], "target_id": None,
                                **fields}]}

    llm_stub.default("extraction", extraction)
    llm_stub.default("consolidation", consolidation)
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "Please always indent with tabs from now on")
            await wait_idle(pilot, app)
            answer = app.screen.query(AssistantMessage).last()
            assert answer.source == "Use **tabs**, as you prefer [bold]really[/bold]."
            assert [str(u.render()) for u in app.screen.query(UserMessage)] == [
                "Please always indent with tabs from now on"]
            # the stream really went through the SDK's streaming path
            assert any(r.body.get("stream") for r in llm_stub.requests_for("chat"))
            mgr = app.manager
            turns = mgr.recent_turns()
            assert [(t.state, t.assistant_text) for t in turns] == [("completed", answer.source)]
            result = await asyncio.to_thread(mgr.process_pending)
            assert result.succeeded == 2
            items = mgr.list_items()
            assert [i.subject for i in items] == ["indentation"]
            await type_and_send(pilot, f"/memory forget {items[0].id}")
            await wait_idle(pilot, app)
            assert "raw turns it came from are kept" in notes(app)[-1]
            assert mgr.list_items() == []
            await pilot.press("ctrl+q")
            await wait_idle(pilot, app)

    asyncio.run(run())
    mgr2 = MemoryManager.open(repo, settings)
    try:
        from autopatch_tui.core.recall.query import RecallQuery, policy_for
        from autopatch_tui.core.recall.session import RecallSession

        session = RecallSession(mgr2.store.conn, RecallQuery("general_chat"), policy_for("general_chat", None))
        assert session.search("tabs indentation") == []
    finally:
        mgr2.close()


def test_no_model_mode_explains_and_stores_nothing(repo, settings):
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert "No model is configured" in notes(app)[0]
            await type_and_send(pilot, "hello?")
            await wait_idle(pilot, app)
            assert "AUTOPATCH_LLM_BASE_URL" in notes(app)[-1]
            assert app.manager.recent_turns() == []
            await type_and_send(pilot, "/memory status")
            await wait_idle(pilot, app)
            assert "Memory: healthy" in notes(app)[-1]

    asyncio.run(run())


def test_restart_shows_recent_turns_and_markup_literally(repo, settings):
    mgr = MemoryManager.open(repo, settings)
    h = mgr.begin_turn("what is [red]this[/red]?")
    mgr.complete_turn(h, "It is *markdown*.")
    mgr.close()
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            users = [str(u.render()) for u in app.screen.query(UserMessage)]
            assert users == ["what is [red]this[/red]?"]
            assert app.screen.query(AssistantMessage).last().source == "It is *markdown*."

    asyncio.run(run())


def test_new_and_reset(repo, llm_stub):
    llm_stub.default("extraction", {"thread_checkpoint": "c", "candidates": []})
    settings = model_settings(llm_stub)
    mgr = MemoryManager.open(repo, settings)
    h = mgr.begin_turn("first")
    mgr.complete_turn(h, "ok")
    old_thread = h.thread_id
    mgr.close()
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await type_and_send(pilot, "/new")
            await wait_idle(pilot, app)
            text = notes(app)[-1]
            assert text.startswith("New thread") and "1 job(s) done, 0 pending" in text
            assert app.screen.query(UserMessage) == [] or len(app.screen.query(UserMessage)) == 0
            assert app.manager.active_thread_id() != old_thread
            await type_and_send(pilot, "/reset")
            await wait_idle(pilot, app)
            assert "Memory was kept" in notes(app)[-1]
            assert app.manager.paths.db.exists()
            assert len(app.manager.threads()) == 2

    asyncio.run(run())


def test_degraded_store_is_reported_in_chat(repo, settings):
    db = write_old_store(repo, "CREATE TABLE legacy (x)")
    before = db.read_bytes()
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert any("Memory is degraded" in n and "found 3" in n for n in notes(app))
            assert app.health == "degraded"

    asyncio.run(run())
    assert db.read_bytes() == before


def test_worker_error_is_reported_once_by_the_app(repo, llm_stub, monkeypatch):
    settings = model_settings(llm_stub)
    app = make_app(repo, settings)
    seen = []
    monkeypatch.setattr(app, "notify", lambda message, **kw: seen.append((message, kw.get("severity"))))

    class Boom:
        def ask(self, *a, **k):
            raise RuntimeError("secret internal detail")

    monkeypatch.setattr(Services, "chat", property(lambda self: Boom()))

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "hi, keep this line")
            await wait_idle(pilot, app)
            assert app.screen.busy is False
            # the prompt was cleared at submit: the line lives on in a failed note, ready for retry
            [failed] = app.screen.query(FailedTurnNote)
            assert failed.line == "hi, keep this line" and app.screen.failed_line == "hi, keep this line"
            assert "secret internal detail" not in str(failed.render())
            assert not app.screen.query(AssistantMessage)  # no empty answer left behind

    asyncio.run(run())
    errors = [m for m, sev in seen if sev == "error"]
    assert errors == [f"unexpected error (RuntimeError); see the log at {settings.home / 'logs' / 'autopatch.log'}"]


def test_model_failure_keeps_the_user_text(repo, llm_stub):
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", Reply(status=500, error_body={"error": {"message": "PROVIDER-BODY-XYZ"}}))
    settings = model_settings(llm_stub)
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "explain the build")
            await wait_idle(pilot, app)
            text = notes(app)[-1]
            assert "The request failed" in text and "PROVIDER-BODY-XYZ" not in text
            turns = app.manager.recent_turns()
            assert [(t.user_text, t.state) for t in turns] == [("explain the build", "failed")]

    asyncio.run(run())


@pytest.mark.parametrize("name", ["history", "memory", "jobs", "stores"])
def test_screens_are_reachable_by_key_and_back(repo, settings, name):
    from autopatch_tui.tui.app import SCREEN_KEYS

    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await pilot.press(SCREEN_KEYS[name])
            await pilot.pause(0.2)
            assert app.screen.name == name
            await pilot.press("f2")
            await pilot.pause(0.2)
            assert app.screen.name == "chat"

    asyncio.run(run())


def test_user_keymap_and_saved_theme(repo, settings, tmp_path):
    config = settings.home / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('theme = "textual-light"\n[keymap]\n"screen.history" = "f9"\n', encoding="utf-8")
    from autopatch_tui.core.settings import load_settings as load

    custom = load({"AUTOPATCH_HOME": str(settings.home)})
    assert custom.keymap == {"screen.history": "f9"}
    app = make_app(repo, custom)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert app.theme == "textual-light"
            await pilot.press("f9")
            await pilot.pause(0.2)
            assert app.screen.name == "history"
            app.theme = "nord"
            await pilot.pause()

    asyncio.run(run())
    saved = config.read_text(encoding="utf-8")
    assert 'theme = "nord"' in saved and '"screen.history" = "f9"' in saved
    assert load({"AUTOPATCH_HOME": str(settings.home)}).theme == "nord"
