"""Every exit of the app flushes Memory exactly once (issue 10, deliverable 5): the command
palette's built-in "Quit" (it once skipped the flush), ctrl+q while a reply is still streaming (it
once exited with the turn's job left pending), SIGTERM and SIGHUP, and several of them at once."""

from __future__ import annotations

import asyncio
import json
import os
import signal

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.tui.screens.exit_flush import ExitFlushScreen
from tests.support.fixtures import db_path, query
from tests.support.llm_stub import CapturedRequest, Reply
from tests.tui.test_chat import SIZE, make_app, model_settings, type_and_send

DONE = ("succeeded", "succeeded_no_output")


def extraction_ok(request: CapturedRequest) -> dict:
    payload = json.loads(request.messages[-1]["content"])
    return {"thread_checkpoint": f"after {len(payload['turns'])} turn(s)", "candidates": []}


def jobs(repo) -> list[tuple[str, str]]:
    return [(r["kind"], r["status"]) for r in query(db_path(repo), "SELECT kind, status FROM memory_jobs")]


def seed_pending_turn(repo, settings) -> None:
    """One completed turn whose extraction job is pending (the app's worker is kept off below, so
    only the exit flush can process it)."""
    mgr = MemoryManager.open(repo, settings)
    try:
        handle = mgr.begin_turn("remember: we ship on Fridays")
        mgr.complete_turn(handle, "Noted.")
    finally:
        mgr.close()
    assert jobs(repo) == [("extraction", "pending")]


def counting_flush(app) -> list[int]:
    calls: list[int] = []
    mgr = app.manager
    original = mgr.process_pending

    def counted():
        calls.append(1)
        return original()

    mgr.process_pending = counted  # type: ignore[method-assign]
    mgr.start_background = lambda: None  # type: ignore[method-assign]  # no worker: the flush does the work
    return calls


async def wait_exit(pilot, app, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if app.return_code is not None:
            return
        await pilot.pause(0.05)
    raise AssertionError("the app did not exit")


def test_palette_quit_flushes(repo, llm_stub) -> None:
    llm_stub.default("extraction", extraction_ok)
    settings = model_settings(llm_stub)
    seed_pending_turn(repo, settings)
    app = make_app(repo, settings)
    calls = counting_flush(app)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            [quit_cmd] = [c for c in app.get_system_commands(app.screen) if c.title == "Quit"]
            await pilot.press("ctrl+p", "wait:200")  # the palette, as a user opens it
            await pilot.press(*"Quit", "wait:200")
            await pilot.press("enter")
            await wait_exit(pilot, app)
            assert quit_cmd.callback == app.action_quit

    asyncio.run(run())
    assert calls == [1]
    assert jobs(repo)[0][1] in DONE
    assert len(llm_stub.requests_for("extraction")) == 1


def test_ctrl_q_while_a_reply_streams_saves_the_turn_and_flushes_its_job(repo, llm_stub) -> None:
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", Reply(content="Fridays it is.", delay=0.8))
    llm_stub.default("extraction", extraction_ok)
    settings = model_settings(llm_stub)
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "we ship on Fridays")
            assert await asyncio.to_thread(llm_stub.wait_for_requests, 1, task="chat", timeout=20)
            await pilot.press("ctrl+q")
            await wait_exit(pilot, app)

    asyncio.run(run())
    [turn] = query(db_path(repo), "SELECT state, assistant_text FROM turns")
    assert tuple(turn) == ("completed", "Fridays it is.")
    assert [s for _, s in jobs(repo)] and all(s in DONE for _, s in jobs(repo)), jobs(repo)


def test_two_exit_paths_at_once_flush_once_and_sigterm_is_one_of_them(repo, llm_stub) -> None:
    llm_stub.default("extraction", Reply(content=json.dumps({"thread_checkpoint": "c", "candidates": []}),
                                         delay=0.3))
    settings = model_settings(llm_stub)
    seed_pending_turn(repo, settings)
    app = make_app(repo, settings)
    calls = counting_flush(app)
    pushed: list[object] = []
    before = signal.getsignal(signal.SIGTERM)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            original_push = app.push_screen

            def spy(screen, *a, **k):
                if isinstance(screen, ExitFlushScreen):
                    pushed.append(screen)
                return original_push(screen, *a, **k)

            app.push_screen = spy  # type: ignore[method-assign]
            # a real SIGTERM to this process (only once the app's loop handles it: never kill the test run)
            assert signal.SIGTERM in getattr(app, "_signals_installed", ())
            os.kill(os.getpid(), signal.SIGTERM)
            await pilot.pause(0.1)
            await pilot.press("ctrl+q")
            await app.run_action("quit")
            os.kill(os.getpid(), signal.SIGTERM)
            await wait_exit(pilot, app)
        assert signal.getsignal(signal.SIGTERM) == before  # the handler left with the app

    asyncio.run(run())
    assert calls == [1] and len(pushed) == 1
    assert app.exit_flush.outcome is not None and app.exit_flush.outcome.reason == "SIGTERM"
    assert jobs(repo)[0][1] in DONE
    assert len(llm_stub.requests_for("extraction")) == 1
