"""A paste typed as keystrokes (no bracketed paste) keeps its line breaks and sends nothing; a paste
over the prompt's bound is refused whole and saved (issue 30, item 1). The driver's rule is tested
on a recording driver (the real key timing); the prompt's side through the App."""

from __future__ import annotations

import asyncio
import threading
import time

from textual import events

from autopatch_tui.tui.key_bursts import PASTE_GAP, KeyBurst, with_key_bursts
from autopatch_tui.tui.widgets.prompt import MAX_PROMPT_CHARS, PromptInput
from autopatch_tui.tui.widgets.prompt_hint import PromptHint
from tests.support.tui_wait import poll
from tests.tui.test_chat import SIZE, make_app, wait_idle


class _RecordingDriver:
    def __init__(self, loop, app) -> None:  # type: ignore[no-untyped-def]
        self._loop = loop
        self._app = app
        self.sent: list[object] = []

    def process_message(self, message) -> None:  # type: ignore[no-untyped-def]
        self.sent.append(message)


def key(ch: str) -> events.Key:
    names = {"\r": "enter", "\n": "ctrl+j", "\t": "tab", " ": "space"}
    return events.Key(names.get(ch, ch), ch)


def drive(script) -> list[object]:  # type: ignore[no-untyped-def]
    """Run `script(driver)` on an input thread while the loop runs; return what the driver sent."""

    async def run() -> list[object]:
        driver = with_key_bursts(_RecordingDriver)(asyncio.get_running_loop(), object())  # type: ignore[arg-type]
        thread = threading.Thread(target=script, args=(driver,))
        thread.start()
        while thread.is_alive():
            await asyncio.sleep(0.001)
        await asyncio.sleep(PASTE_GAP * 5)
        return driver.sent

    return asyncio.run(run())


def texts(sent: list[object]) -> str:
    """What the sent events type: a burst's text, a key's character; a key that acts, as <key>."""
    out = []
    for m in sent:
        if isinstance(m, KeyBurst):
            out.append(m.text if m.pasted or all(k.is_printable for k in m.keys) else "?")
        else:
            out.append(m.character if m.is_printable else f"<{m.key}>")  # type: ignore[attr-defined]
    return "".join(out)


def test_line_breaks_read_with_other_keys_are_text_and_an_enter_alone_sends():
    def script(driver) -> None:  # type: ignore[no-untyped-def]
        for ch in "one\rtwo\r\nthree\tend\r":  # CR, CR LF, a tab, a trailing CR: a paste as tmux types it
            driver.process_message(key(ch))
        time.sleep(PASTE_GAP * 10)  # then the user, later, presses Enter on a quiet prompt
        driver.process_message(key("\r"))

    sent = drive(script)
    assert texts(sent) == "one\ntwo\nthree\tend\n<enter>"
    assert not isinstance(sent[-1], KeyBurst) and sent[-1].key == "enter"  # type: ignore[attr-defined]


def test_an_enter_split_from_its_paste_by_a_read_boundary_is_still_a_line_break():
    def script(driver) -> None:  # type: ignore[no-untyped-def]
        for ch in "first":
            driver.process_message(key(ch))
        time.sleep(PASTE_GAP * 5)  # the loop sent "first" meanwhile (as a slow read would split it)
        driver.process_message(key("\r"))  # alone in its read, but right after a key: lookbehind fails…
        for ch in "second":  # …and the rest of the paste comes within the wait: a line break
            driver.process_message(key(ch))

    sent = drive(script)
    assert texts(sent) == "first\nsecond"
    assert "<enter>" not in texts(sent)

    def script2(driver) -> None:  # type: ignore[no-untyped-def]
        for ch in "line":
            driver.process_message(key(ch))
        driver.process_message(key("\r"))  # the paste ends with a line break right after its last key
        time.sleep(PASTE_GAP * 10)

    assert texts(drive(script2)) == "line\n"


def test_typed_keys_and_a_lone_tab_act_as_keys():
    def script(driver) -> None:  # type: ignore[no-untyped-def]
        for ch in "ok":
            driver.process_message(key(ch))
            time.sleep(PASTE_GAP * 4)  # a person types: keys far apart
        driver.process_message(key("\t"))
        time.sleep(PASTE_GAP * 4)
        driver.process_message(key("\r"))

    assert texts(drive(script)) == "ok<tab><enter>"


def prompt_of(app) -> PromptInput:  # type: ignore[no-untyped-def]
    return app.screen.query_one(PromptInput)


def pasted(text: str, series: int = 1) -> KeyBurst:
    return KeyBurst([key(c) for c in text.replace("\n", "\r")], pasted="\n" in text, series=series)


def test_a_pasted_burst_with_line_breaks_lands_whole_in_the_prompt_and_sends_nothing(repo, settings):
    app = make_app(repo, settings)
    lines = [f"line {n} of the paste" for n in range(20)]

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            app.post_message(pasted("\n".join(lines[:7]) + "\n"))
            app.post_message(pasted("\n".join(lines[7:]) + "\n"))
            prompt = prompt_of(app)
            await poll(pilot, lambda: prompt.text == "\n".join(lines) + "\n")
            await wait_idle(pilot, app)
            assert app.manager.recent_turns() == []
            hint = app.screen.query_one(PromptHint)
            assert hint.display and "(21 lines:" in hint.shown and "Enter sends" in hint.shown

    asyncio.run(run())


def test_a_paste_over_the_bound_is_refused_whole_and_saved(repo, settings):
    app = make_app(repo, settings)
    piece = ("x" * 99 + "\n") * 1000  # 100,000 characters a piece, as keystroke bursts arrive
    home = settings.home

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            prompt = prompt_of(app)
            prompt.insert("my draft ")
            for _ in range(4):  # 400,000 characters: the first two pieces fit, the third does not
                app.post_message(pasted(piece))
                await pilot.pause(0.01)  # pieces as the driver sends them: one insert each
            await poll(pilot, lambda: "refused" in app.screen.query_one(PromptHint).shown)
            await pilot.pause(0.3)
            assert prompt.text == "my draft "  # what was inserted of it was taken out again
            saved = list((home / "refused-pastes").iterdir())
            assert len(saved) == 1 and saved[0].read_text() == piece * 4  # nothing lost
            assert str(saved[0]) in app.screen.query_one(PromptHint).shown
            assert oct(saved[0].stat().st_mode & 0o777) == "0o600"
            # a bracketed paste over the bound: refused at once, the prompt untouched
            app.screen.query_one(PromptInput).post_message(events.Paste("y" * (MAX_PROMPT_CHARS + 1)))
            await poll(pilot, lambda: len(list((home / "refused-pastes").iterdir())) == 2)
            assert prompt.text == "my draft "

    asyncio.run(run())


def test_a_prompt_that_grows_over_a_short_chat_keeps_the_chat_following(repo, settings):
    """The prompt growing by a paste's lines shrinks the chat; with nothing to scroll it is at its
    bottom whatever its scroll offset says, so it keeps following (no "↓ new output" over it)."""
    from autopatch_tui.tui.widgets.chat_log import ChatLog

    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            log_view = app.screen.query_one(ChatLog)
            assert log_view.following
            app.post_message(pasted("one\ntwo\nthree\nfour\nfive\n"))
            await poll(pilot, lambda: prompt_of(app).document.line_count == 6)
            await pilot.pause(0.3)
            assert log_view.following and not log_view.unseen

    asyncio.run(run())


def test_keys_typed_ahead_of_the_first_read_are_typed_keys_their_enter_sends():
    """Typed while the app starts, before it reads input: all parsed at once, so their timing says
    nothing; the bytes waiting when the input thread starts are taken as typed."""

    def script(driver) -> None:  # type: ignore[no-untyped-def]
        typed_ahead = "ask this\r/memory status\r"
        driver._type_ahead = len(typed_ahead)  # as FIONREAD reports when the input thread starts
        for ch in typed_ahead + "a\rb":  # then a paste, read at once after them
            driver.process_message(key(ch))

    assert texts(drive(script)) == "ask this<enter>/memory status<enter>a\nb"


def test_bursts_stay_one_run_across_a_stall_and_a_key_alone_ends_it():
    """A loaded machine stalls the input thread mid-paste: the paste reads as a pause, then a large
    burst; it is still the same run (one paste, refused whole at the bound). A key sent alone ends it."""

    def script(driver) -> None:  # type: ignore[no-untyped-def]
        for ch in "first\rpiece":
            driver.process_message(key(ch))
        time.sleep(0.6)  # a stall of the input thread (not a person: a burst follows)
        for ch in "second\rpiece":
            driver.process_message(key(ch))
        time.sleep(0.3)
        driver.process_message(key("x"))  # a person types a key
        time.sleep(0.3)
        for ch in "new\rpaste":
            driver.process_message(key(ch))

    sent = drive(script)
    bursts = [m for m in sent if isinstance(m, KeyBurst)]
    assert texts(sent) == "first\npiecesecond\npiecexnew\npaste"
    # How the loop cuts the keys into bursts depends on thread timing (on a loaded machine the test's own
    # sender stalls between two keys, and a key after a pause may go alone); what must hold whatever
    # the timing: no Enter ever arrives alone (it would send), every line break stays in a pasted
    # burst, and the key typed alone ends the run, so the next paste is a run of its own.
    assert not [m for m in sent if not isinstance(m, KeyBurst) and getattr(m, "key", "") == "enter"]
    assert all(b.pasted for b in bursts if "\n" in b.text)
    second = [b for b in bursts if b.text.endswith("\npiece")][-1].series  # the run of "second\npiece"
    assert bursts[-1].text.endswith("\npaste") and bursts[-1].series != second
