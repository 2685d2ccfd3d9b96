"""Escape cancels a running request at once, also before the model's first token: the request is
abandoned (its connection closed), the turn is saved failed with its text as before (issue 30,
item 5). The stub holds the first token back for good (a slow server, a local model reading a long
prompt): only an abandoned request lets the turn end."""

from __future__ import annotations

import asyncio
import threading
import time

from autopatch_tui.core.settings import load_settings
from tests.support.llm_stub import Reply
from tests.support.tui_wait import poll
from tests.tui.test_chat import SIZE, make_app, notes, type_and_send, wait_idle


def test_escape_before_the_first_token_abandons_the_request_and_saves_the_turn_failed(repo, llm_stub):
    release = threading.Event()
    llm_stub.default("classify", "general_chat")
    llm_stub.script("chat", Reply(content="too late", wait_event=release), "the next answer")
    settings = load_settings({**__import__("os").environ, "AUTOPATCH_LLM_BASE_URL": llm_stub.base_url,
                              "AUTOPATCH_LLM_MODEL": "gpt-4o"}, llm_max_retries=2, llm_timeout_seconds=120)
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "explain the build")
            await poll(pilot, lambda: app.screen.busy and llm_stub.requests_for("chat"))
            await pilot.pause(0.3)  # the request waits for its first token
            t0 = time.monotonic()
            await pilot.press("escape")
            await poll(pilot, lambda: not app.screen.busy, timeout=10)
            assert time.monotonic() - t0 < 5  # at once: not at a first token that never comes
            assert "Cancelled" in notes(app)[-1]
            turns = app.manager.recent_turns()
            assert [(t.user_text, t.state) for t in turns] == [("explain the build", "failed")]
            await pilot.pause(1.5)  # the SDK's retry would have sent it again by now
            assert len(llm_stub.requests_for("chat")) == 1
            await type_and_send(pilot, "and now?")  # the next turn runs normally
            await wait_idle(pilot, app)
            assert [t.state for t in app.manager.recent_turns()] == ["failed", "completed"]

    try:
        asyncio.run(run())
    finally:
        release.set()
