"""Issue 20, items 1, 2 and 5: the chat follows new output like every chat app, text typed anywhere
on the chat screen reaches the prompt, and input costs bounded work per key.

1. PageUp then PageDown back to the bottom (the last press at the bottom, which changed nothing)
   left the chat unanchored for good: a sent message and its answer landed off-screen. Now reaching
   the bottom, sending anything, a slash command's output and ctrl+end all follow again; a marker
   says "↓ new output" while it does not.
2. "hello", Tab, " world" lost " world" (Tab moved focus); with a failed turn's note focused,
   typing "great" resent the turn (`r`); F2 did nothing on chat; `@path` completion did not open
   after `/audit ` or `/explain `.
5. A paste typed as keystrokes cost one whole-line re-wrap per key (a 122 KB paste froze the app
   for minutes) and a SIGTERM that found asyncio's self-pipe full of those keys was lost."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

from textual import events

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.tui.typing import TypedText
from autopatch_tui.tui.widgets.chat_log import ChatLog, FailedTurnNote, FollowMarker
from autopatch_tui.tui.widgets.prompt import LONG_LINE, PromptInput, Suggestions
from tests.support.tui_wait import poll
from tests.tui.test_chat import SIZE, make_app, notes, type_and_send, wait_idle


def log_of(app) -> ChatLog:
    return app.screen.query_one(ChatLog)


def at_bottom(log: ChatLog) -> bool:
    return round(log.scroll_y) == log.max_scroll_y


def marker(app) -> FollowMarker:
    return log_of(app).query_one(FollowMarker)


async def fill(log: ChatLog, n: int = 60) -> None:
    for i in range(n):
        await log.add_note(f"note {i}")
    deadline = time.monotonic() + 10
    while log.max_scroll_y == 0 and time.monotonic() < deadline:  # until laid out: more than a screenful
        await asyncio.sleep(0.02)


# --------------------------------------------------------------------------- 1. follow mode


def test_scrolling_back_to_the_bottom_follows_again_even_when_the_last_page_changed_nothing(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            log = log_of(app)
            await fill(log)
            await pilot.pause()
            assert at_bottom(log) and not marker(app).display
            await pilot.press("pageup")
            await pilot.pause()
            assert not at_bottom(log) and not log.following
            assert marker(app).display and "more below" in str(marker(app).render())
            await log.add_note("arrived while reading")
            await pilot.pause()
            assert "↓ new output" in str(marker(app).render())
            for _ in range(6):  # the six PageDowns: the last ones are at the bottom already
                await pilot.press("pagedown")
                await pilot.pause()
            assert at_bottom(log) and log.following and not marker(app).display
            await log.add_note("new output after coming back")
            await pilot.pause()
            await pilot.pause()
            assert at_bottom(log), (log.scroll_y, log.max_scroll_y)

    asyncio.run(run())


def test_sending_follows_again_and_a_slash_commands_output_comes_into_view(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            log = log_of(app)
            await fill(log)
            log.scroll_home(animate=False)
            await poll(pilot, lambda: not log.following, timeout=10)  # the scroll event lands, following stops
            await type_and_send(pilot, "/memory status")
            await wait_idle(pilot, app)
            await pilot.pause()
            assert "Memory: healthy" in notes(app)[-1]
            assert log.following and at_bottom(log) and not marker(app).display
            # scrolled away again, ctrl+end from the prompt follows
            await pilot.press("pageup", "pageup")
            await pilot.pause()
            assert not log.following
            await pilot.press("ctrl+end")
            await pilot.pause()
            assert log.following and at_bottom(log)
            # and so does a click on the marker
            await pilot.press("pageup")
            await pilot.pause()
            assert marker(app).display
            await pilot.click(marker(app))
            await pilot.pause()
            assert log.following and at_bottom(log)

    asyncio.run(run())


def test_a_slash_commands_error_comes_into_view_and_keeps_the_line(repo, settings):
    """The answer to a bad slash line is its error note: shown even when the user had scrolled away
    (the line stays in the prompt to be corrected, so nothing else would bring the note into view)."""
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            log = log_of(app)
            await fill(log)
            log.scroll_home(animate=False)
            await poll(pilot, lambda: not log.following, timeout=10)  # the scroll event lands, following stops
            await type_and_send(pilot, "/memory status bogus")
            await wait_idle(pilot, app)
            await pilot.pause()
            assert notes(app)[-1] == "/memory status takes no arguments: bogus"
            assert log.following and at_bottom(log) and not marker(app).display
            assert app.screen.query_one(PromptInput).text == "/memory status bogus"

    asyncio.run(run())


def test_output_of_a_slow_command_comes_into_view_even_if_the_user_scrolled_away(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            log = log_of(app)
            await fill(log)
            await pilot.pause()
            screen = app.screen
            screen.commands._in_thread(lambda: "the answer of a slow command")
            log.scroll_home(animate=False)
            await wait_idle(pilot, app)
            await pilot.pause()
            assert notes(app)[-1] == "the answer of a slow command"
            assert log.following and at_bottom(log)

    asyncio.run(run())


# --------------------------------------------------------------------------- 2. typed text reaches the prompt


def test_tab_without_a_completion_loses_nothing(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = app.screen.query_one(PromptInput)
            await pilot.press(*"hello", "tab", *" world")
            await pilot.pause()
            assert prompt.text == "hello world"
            assert app.focused is prompt

    asyncio.run(run())


def test_letters_typed_on_a_focused_failed_note_go_to_the_prompt_and_resend_nothing(repo, settings):
    mgr = MemoryManager.open(repo, settings)
    mgr.fail_turn(mgr.begin_turn("why is CI red?"))
    mgr.close()
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            note = app.screen.query_one(FailedTurnNote)
            note.focus()
            await pilot.pause()
            assert app.focused is note
            await pilot.press(*"great")  # `r` used to resend the failed turn here
            await wait_idle(pilot, app)
            prompt = app.screen.query_one(PromptInput)
            assert prompt.text == "great" and app.focused is prompt
            assert [t.state for t in app.manager.recent_turns()] == ["failed"]
            # the log itself focused (a click): typing still reaches the prompt, in order
            log_of(app).focus()
            await pilot.press(*" work")
            await pilot.pause()
            assert prompt.text == "great work"

    asyncio.run(run())


def test_f2_puts_focus_back_in_the_prompt(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await log_of(app).add_note("a note")
            log_of(app).focus()
            await pilot.pause()
            assert not isinstance(app.focused, PromptInput)
            await pilot.press("f2")
            await pilot.pause()
            assert isinstance(app.focused, PromptInput)

    asyncio.run(run())


def test_path_completion_opens_anywhere_in_the_line_after_a_slash_command_too(repo, settings):
    (repo / "src").mkdir()
    (repo / "src" / "parser.py").write_text("x = 1\n", encoding="utf-8")
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = app.screen.query_one(PromptInput)
            box = app.screen.query_one(Suggestions)
            for line in ("/audit @src/pa", "/explain how does @src/pa", "look at @src/pa"):
                prompt.clear()
                await pilot.press(*line)
                await poll(pilot, lambda: box.display and box.option_count == 1)
                await pilot.press("tab")
                await pilot.pause()
                assert prompt.text == line.rsplit("@", 1)[0] + "@src/parser.py ", line
            prompt.clear()
            await pilot.press(*"mail me@src/pa")  # an e-mail's @ is not a mention
            await pilot.pause(0.1)
            assert not box.display
            prompt.clear()
            await pilot.press(*"/memory st")  # a slash command being typed still completes
            await poll(pilot, lambda: box.display)
            assert box.get_option_at_index(0).id == "/memory status"

    asyncio.run(run())


def test_tab_on_a_folder_keeps_the_path_open_for_its_files(repo, settings):
    """Accepting `@src/` must not end the word: what is typed next continues the path, and the
    completion offers the folder's files (a trailing space made "core.py" a separate word)."""
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "core.py").write_text("x = 1\n", encoding="utf-8")
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = app.screen.query_one(PromptInput)
            box = app.screen.query_one(Suggestions)
            await pilot.press(*"/audit @src/p")
            await poll(pilot, lambda: box.display and box.get_option_at_index(0).id == "@src/pkg/")
            await pilot.press("tab")
            await poll(pilot, lambda: box.display and box.get_option_at_index(0).id == "@src/pkg/core.py")
            assert prompt.text == "/audit @src/pkg/"
            await pilot.press("tab")
            await pilot.pause()
            assert prompt.text == "/audit @src/pkg/core.py "

    asyncio.run(run())


# --------------------------------------------------------------------------- 5. bounded work per key


def test_a_burst_of_keystrokes_is_inserted_in_a_few_edits_in_order(repo, settings, monkeypatch):
    app = make_app(repo, settings)
    edits: list[int] = []
    original = PromptInput.edit

    def counting(self, edit):  # type: ignore[no-untyped-def]
        edits.append(len(edit.text))
        return original(self, edit)

    monkeypatch.setattr(PromptInput, "edit", counting)
    text = ("parser config retry lease schema " * 200)[:5000]

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = app.screen.query_one(PromptInput)
            for ch in text:  # as a terminal without bracketed paste delivers a paste: queued keys
                app.post_message(events.Key("space" if ch == " " else ch, ch))
            app.post_message(events.Key("ctrl+j", None))  # a non-printable key comes after them
            app.post_message(events.Key("x", "x"))
            await poll(pilot, lambda: prompt.text.endswith("\nx"))
            assert prompt.text == text + "\nx"
            assert len(edits) <= 10, len(edits)  # one per burst, not one per key (5002 before)

    asyncio.run(run())


def test_a_long_line_is_shown_unwrapped_until_the_prompt_is_cleared(repo, settings):
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = app.screen.query_one(PromptInput)
            assert prompt.soft_wrap
            prompt.post_message(TypedText("x" * (LONG_LINE + 1)))
            await poll(pilot, lambda: not prompt.soft_wrap)
            prompt.clear()
            assert prompt.soft_wrap
            await pilot.press(*"short again")
            await pilot.pause()
            assert prompt.soft_wrap and prompt.text == "short again"

    asyncio.run(run())


def test_sigterm_is_not_lost_when_a_flood_of_keys_fills_asyncios_self_pipe(repo, settings):
    """asyncio's `add_signal_handler` learns of a signal through its self-pipe, which every key of a
    flood also writes to (Textual's input thread posts each with `call_soon_threadsafe`); a signal
    finding it full was dropped."""
    app = make_app(repo, settings)
    before = signal.getsignal(signal.SIGTERM)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            assert signal.SIGTERM in getattr(app, "_signals_installed", ())  # never kill the test run
            loop = asyncio.get_running_loop()
            flooded = threading.Event()

            def flood() -> None:  # what the input thread does with a paste typed as keystrokes
                for _ in range(5_000):
                    loop.call_soon_threadsafe(lambda: None)
                flooded.set()

            threading.Thread(target=flood, daemon=True).start()
            assert flooded.wait(120)  # the loop is busy (blocked here): nothing drains the self-pipe
            os.kill(os.getpid(), signal.SIGTERM)  # its wakeup byte finds the pipe full
            await poll(pilot, lambda: app.exit_flush.started, timeout=60)
            for _ in range(600):
                if not app.is_running:
                    break
                await asyncio.sleep(0.05)

    asyncio.run(run())
    assert app.exit_flush.outcome is not None and app.exit_flush.outcome.reason == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) == before


# --------------------------------------------------------------------------- key bursts from the driver


class _RecordingDriver:
    """What `with_key_bursts` needs of a Textual driver: `_loop`, `_app` and `process_message`."""

    def __init__(self, loop, app) -> None:  # type: ignore[no-untyped-def]
        self._loop = loop
        self._app = app
        self.sent: list[object] = []

    def process_message(self, message) -> None:  # type: ignore[no-untyped-def]
        self.sent.append(message)


def test_the_driver_sends_printable_keys_read_together_as_one_burst_in_order():
    from autopatch_tui.tui.key_bursts import KeyBurst, with_key_bursts

    async def run() -> list[object]:
        driver = with_key_bursts(_RecordingDriver)(asyncio.get_running_loop(), object())  # type: ignore[arg-type]

        def input_thread() -> None:  # the loop is not running meanwhile: nothing is sent early
            for ch in "abc":
                driver.process_message(events.Key(ch, ch))
            driver.process_message(events.Key("escape", "\x1b"))  # not text: the burst before it goes first
            time.sleep(0.05)  # a person's key (one within 20 ms of another is part of a run)
            driver.process_message(events.Key("d", "d"))

        thread = threading.Thread(target=input_thread)
        thread.start()
        thread.join()
        await asyncio.sleep(0.05)  # the loop runs: the held "d" is sent, alone, as a key
        return driver.sent

    sent = asyncio.run(run())
    assert [type(m).__name__ for m in sent] == ["KeyBurst", "Key", "Key"]
    assert isinstance(sent[0], KeyBurst) and sent[0].text == "abc"
    assert (sent[1].key, sent[2].key) == ("escape", "d")  # type: ignore[attr-defined]


def test_a_burst_is_text_where_the_screen_takes_text_and_keys_elsewhere(repo, settings):
    from autopatch_tui.tui.key_bursts import KeyBurst

    mgr = MemoryManager.open(repo, settings)
    mgr.complete_turn(mgr.begin_turn("hello"), "hi")
    mgr.close()
    app = make_app(repo, settings)

    def burst(text: str) -> KeyBurst:
        return KeyBurst([events.Key("space" if c == " " else c, c) for c in text])

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            log_of(app).focus()
            app.post_message(burst("pasted text"))
            prompt = app.screen.query_one(PromptInput)
            await poll(pilot, lambda: prompt.text == "pasted text")
            assert app.focused is prompt
            await pilot.press("f4")
            await wait_idle(pilot, app)
            browser = app.screen
            browser.query_one("#mb-items").focus()
            await pilot.pause()
            app.post_message(burst("ks"))  # no field has focus: the letters act as keys, in order
            await poll(pilot, lambda: (browser.kind, browser.status) == ("user_preference", "superseded"))

    asyncio.run(run())
