"""The prompt never loses text: Enter while a request runs keeps the text, Escape cancels the request
(the turn ends `failed` with its RAW text), Enter on a failed turn's note / `/retry` resend it; Tab accepts the
highlighted `@path` completion; Up/Down walk this repository's prompt history (a private file in
$AUTOPATCH_HOME, never Memory); PageUp/PageDown scroll the chat from the prompt; live steps."""

from __future__ import annotations

import asyncio
import json
import stat
import threading

from autopatch_tui.tui.prompt_history import PromptHistory, history_file
from autopatch_tui.tui.widgets.chat_log import ChatLog, FailedTurnNote, NoteMessage, UserMessage
from autopatch_tui.tui.widgets.prompt import PromptInput, Suggestions
from tests.support.llm_stub import Reply
from tests.support.tui_wait import poll
from tests.tui.test_chat import (
    SIZE,
    make_app,
    model_settings,
    notes,
    type_and_send,
    unreachable_settings,
    wait_idle,
)


def prompt_of(app) -> PromptInput:
    return app.screen.query_one(PromptInput)


def test_enter_while_busy_keeps_the_text_and_escape_cancels_then_enter_on_the_note_retries(repo, llm_stub):
    release = threading.Event()
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", Reply(content="too late", wait_event=release), "second answer")
    app = make_app(repo, model_settings(llm_stub))
    toasts: list[str] = []

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            real_notify = app.screen.notify
            app.screen.notify = lambda message, **kw: (toasts.append(str(message)), real_notify(message, **kw))
            await type_and_send(pilot, "explain the build")
            await poll(pilot, lambda: app.screen.busy and llm_stub.requests_for("chat"))
            prompt = prompt_of(app)
            prompt.insert("a second thought")
            await pilot.press("enter")
            await pilot.pause()
            assert prompt.text == "a second thought"  # kept, not thrown away
            assert any("your text was kept" in t for t in toasts)
            await pilot.press("escape")  # the prompt has focus: Escape still cancels, at once
            await wait_idle(pilot, app)  # the first token is still held back: the request was abandoned
            assert "Cancelled" in notes(app)[-1]
            turns = app.manager.recent_turns()
            assert [(t.user_text, t.state) for t in turns] == [("explain the build", "failed")]
            assert prompt.text == "a second thought"  # still there after the cancel
            # Enter on the failed note (Shift+Tab from the prompt focuses it) resends the RAW text
            await pilot.press("shift+tab")
            await pilot.pause()
            assert isinstance(app.focused, FailedTurnNote)
            await pilot.press("enter")
            await pilot.pause()
            await wait_idle(pilot, app)
            turns = app.manager.recent_turns()
            assert [(t.user_text, t.state) for t in turns] == [("explain the build", "failed"),
                                                               ("explain the build", "completed")]
            assert prompt.text == "a second thought"

    asyncio.run(run())


def test_slash_retry_resends_the_newest_failed_turn_also_after_a_restart(repo, llm_stub, settings):
    mgr = __import__("autopatch_tui.core.manager", fromlist=["MemoryManager"]).MemoryManager.open(repo, settings)
    handle = mgr.begin_turn("why is CI red?")
    mgr.fail_turn(handle)
    mgr.close()
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", "Because of the lint step.")
    app = make_app(repo, model_settings(llm_stub))

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert app.screen.query(FailedTurnNote)  # the restart shows the failed turn as retryable
            await type_and_send(pilot, "/retry")
            await wait_idle(pilot, app)
            turns = app.manager.recent_turns()
            assert [(t.user_text, t.state) for t in turns] == [("why is CI red?", "failed"),
                                                               ("why is CI red?", "completed")]

    asyncio.run(run())


def test_tab_accepts_the_highlighted_path_completion(repo, settings):
    (repo / "src").mkdir()
    (repo / "src" / "widget.py").write_text("x = 1\n", encoding="utf-8")
    (repo / "src" / "window.py").write_text("y = 2\n", encoding="utf-8")
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = prompt_of(app)
            prompt.focus()
            await pilot.press(*"look at @src/wi")
            await pilot.pause()
            box = app.screen.query_one(Suggestions)
            assert box.display and box.option_count == 2
            await pilot.press("down")  # moves the highlight; the prompt keeps focus
            assert app.focused is prompt and box.highlighted == 1
            await pilot.press("tab")
            await pilot.pause()
            assert prompt.text == "look at @src/window.py "
            assert app.focused is prompt and not box.display
            prompt.clear()
            prompt.insert("/patch bogus ID")
            await pilot.press("enter")
            await pilot.pause()
            assert "usage: /patch" in notes(app)[-1] and prompt.text == "/patch bogus ID"  # kept to be fixed

    asyncio.run(run())


def test_up_and_down_walk_this_repositorys_private_prompt_history(repo, settings):
    app = make_app(repo, settings)
    path = history_file(settings.home, repo)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            for line in ("/help", "/memory status"):
                await type_and_send(pilot, line)
                await wait_idle(pilot, app)
            prompt = prompt_of(app)
            prompt.insert("half typed")
            await pilot.press("up")
            assert prompt.text == "/memory status"
            await pilot.press("up")
            assert prompt.text == "/help"
            await pilot.press("up")  # the oldest stays
            assert prompt.text == "/help"
            await pilot.press("down")
            assert prompt.text == "/memory status"
            await pilot.press("down")
            assert prompt.text == "half typed"  # the draft comes back
            await pilot.press("up", "end", *" edited", "down")
            assert prompt.text == "/memory status edited"  # Down never throws an edited entry away
            await pilot.press("up")
            assert prompt.text == "/memory status"
            await pilot.press("down")
            assert prompt.text == "/memory status edited"  # the edit became the draft of the new walk

    asyncio.run(run())
    assert path.is_relative_to(settings.home) and not path.is_relative_to(repo)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == ["/help", "/memory status"]
    assert PromptHistory(path).entries == ["/help", "/memory status"]  # a restart walks the same history
    assert history_file(settings.home, repo / "other") != path  # another repository has its own


def test_page_up_and_down_scroll_the_chat_from_the_prompt(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            log_view = app.screen.query_one(ChatLog)
            for n in range(60):  # more conversation than fits
                await log_view.add_note(f"note {n}")
            app.screen.query_one(PromptInput).focus()
            await pilot.pause()
            bottom = log_view.scroll_y
            assert bottom > 0
            await pilot.press("pageup")
            await pilot.pause()
            assert log_view.scroll_y < bottom and isinstance(app.focused, PromptInput)
            await pilot.press("pagedown")
            await pilot.pause()
            assert log_view.scroll_y == bottom

    asyncio.run(run())


def test_the_turn_shows_its_live_steps_from_the_tool_calls(repo, llm_stub):
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", Reply(tool_calls=[("memory_search", json.dumps({"query": "build"}))]), "It is make.")
    app = make_app(repo, model_settings(llm_stub))

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "how do I build?")
            await wait_idle(pilot, app)
            steps = [str(n.render()) for n in app.screen.query(NoteMessage) if n.has_class("-step")]
            assert steps == ["steps: searching Memory"]
            assert [str(u.render()) for u in app.screen.query(UserMessage)] == ["how do I build?"]

    asyncio.run(run())


def test_an_unreachable_endpoint_says_where_and_why_without_path_or_key(repo):
    settings, port = unreachable_settings("127.0.0.1")
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "hello")
            await wait_idle(pilot, app)
            text = notes(app)[-1]
            assert f"cannot reach the model at 127.0.0.1:{port} (connection refused)" in text
            assert "secret-path" not in text and "SECRET-KEY" not in text and "APIConnectionError" not in text
            assert [(t.user_text, t.state) for t in app.manager.recent_turns()] == [("hello", "failed")]

    asyncio.run(run())


def test_host_port_names_only_host_and_port():
    from autopatch_tui.core.llm.reach import host_port

    assert host_port("https://user:sk-KEY@api.example.test/v1?key=x") == "api.example.test:443"
    assert host_port("http://[::1]:8080/v1") == "[::1]:8080"
    assert host_port("not a url") is None and host_port(None) is None
