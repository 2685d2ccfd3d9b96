"""The thread restore at start never wipes or buries what was sent or shown meanwhile, draws the last
screenful first and the older turns when the view is scrolled to them (issue 30 item 2, issue 33
item 3)."""

from __future__ import annotations

import asyncio
import threading
import time

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.tui.widgets.chat_log import AssistantMessage, ChatLog, NoteMessage, UserMessage
from tests.support.tui_wait import poll
from tests.tui.test_chat import SIZE, make_app, model_settings, type_and_send, wait_idle


def seed(repo, settings, turns: int) -> None:  # type: ignore[no-untyped-def]
    mgr = MemoryManager.open(repo, settings)
    for n in range(turns):
        mgr.complete_turn(mgr.begin_turn(f"old question {n}"), f"old answer {n}")
    mgr.close()


def on_screen(app, widget) -> bool:  # type: ignore[no-untyped-def]
    """The widget is drawn inside the conversation's visible region."""
    log_region = app.screen.query_one(ChatLog).region
    return widget.is_attached and bool(widget.region.area) and log_region.overlaps(widget.region)


def test_a_message_sent_during_the_restore_stays_on_screen_with_its_answer(repo, llm_stub):
    settings = model_settings(llm_stub)
    seed(repo, settings, 30)
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", "the fresh answer")
    app = make_app(repo, settings)
    release = threading.Event()
    real = app.manager.recent_turns

    def slow_recent(limit: int = 30):  # type: ignore[no-untyped-def]
        release.wait(30)  # the restore is slow (a large thread on a busy machine)
        return real(limit)

    app.manager.recent_turns = slow_recent  # type: ignore[method-assign]

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/memory status")  # shown during the restore: must not vanish
            await poll(pilot, lambda: any("Memory:" in str(n.render()) for n in app.screen.query(NoteMessage)))
            await type_and_send(pilot, "a question sent at once")
            await poll(pilot, lambda: any(a.source == "the fresh answer" for a in app.screen.query(AssistantMessage)))
            release.set()
            await poll(pilot, lambda: any("old question 29" in str(u.render()) for u in app.screen.query(UserMessage)))
            await wait_idle(pilot, app)
            await pilot.pause(0.2)
            users = [str(u.render()) for u in app.screen.query(UserMessage)]
            assert users[-1] == "a question sent at once" and "old question 29" in users  # in order
            assert users.count("a question sent at once") == 1  # the restore does not show it twice
            question = app.screen.query(UserMessage).last()
            answer = next(a for a in app.screen.query(AssistantMessage) if a.source == "the fresh answer")
            status = next(n for n in app.screen.query(NoteMessage) if "Memory:" in str(n.render()))
            assert on_screen(app, question) and on_screen(app, answer)
            entries = list(app.screen.query_one(ChatLog).children)
            restored = max(entries.index(u) for u in app.screen.query(UserMessage) if "old question" in str(u.render()))
            assert restored < entries.index(status) < entries.index(question) < entries.index(answer)
            assert len(app.manager.recent_turns(100)) == 31

    asyncio.run(run())


def test_the_restore_draws_the_last_screenful_and_older_turns_when_scrolled_to(repo, settings):
    seed(repo, settings, 40)
    app = make_app(repo, settings)

    def shown() -> list[str]:
        return [str(u.render()) for u in app.screen.query(UserMessage)]

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            first = shown()
            log_view = app.screen.query_one(ChatLog)
            assert first == [f"old question {n}" for n in range(40 - len(first), 40)] and len(first) <= 13
            # the view is full (older turns come as it scrolls up), once it is laid out
            await poll(pilot, lambda: log_view.max_scroll_y > 0, timeout=10)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # scroll to the top again and again: older turns come, in order
                log_view.scroll_home(animate=False)
                await pilot.pause(0.05)
                await wait_idle(pilot, app)
                if "old question 0" in shown():
                    break
            assert shown() == [f"old question {n}" for n in range(40)]

    asyncio.run(run())
