"""Printable keys read from the terminal together travel to the App as one event (issue 20, item 5),
and a burst of keystrokes holding newlines is a paste (issue 30, item 1).

Textual's driver parses terminal input in its input thread and hands every key to the event loop
as a coroutine of its own (`Driver.send_message`), then the App dispatches it as a message: about
70 µs of CPU per key, where parsing costs 8. A paste typed as keystrokes (a terminal without
bracketed paste) is tens of thousands of keys. `with_key_bursts` wraps the platform's driver so
that printable keys parsed before the loop next runs are sent as one `KeyBurst`; anything else (a
non-printable key, a mouse event, a resize) first sends the burst read before it, so the order is
kept. A single key is sent as itself. The App unpacks a burst (`AutopatchApp.on_event`): the text
goes to the typing target in one insert, or, where no field takes text, the keys are handled one by
one as if they had come alone (letter keys keep working as keys).

Pastes typed as keystrokes (tmux `paste-buffer` without `-p`, many SSH set-ups) carry their line
breaks as Enter (CR) or ctrl+j (LF) keys and their tabs as Tab keys. A person never types Enter
within `PASTE_GAP` of another key, nor another key within `PASTE_GAP` after it; a paste always
does. So Enter, ctrl+j and Tab join the burst instead of acting: an Enter that arrives on its own
is held `PASTE_GAP` before it is sent, and when another key came less than `PASTE_GAP` before it or
comes in that wait, it is part of a paste and becomes text (CR and CR LF: one newline). Only an
Enter on a quiet prompt sends, as in Claude Code and aider. The timing is read when the keys are
parsed, so it says nothing of keys typed before the app began to read its input (typed ahead while
it starts, all parsed at once): those bytes (`FIONREAD` when the input thread starts) are taken as
typed, their Enter sends."""

from __future__ import annotations

import fcntl
import struct
import termios
import threading
import time
from typing import Any

from textual import events
from textual.driver import Driver

from autopatch_tui.tui.textual_compat import driver_loop
from autopatch_tui.tui.typing import typed_character

PASTE_GAP = 0.02  # seconds: keys closer than this to an Enter make it a pasted line break
PASTED_KEYS = {"enter": "\r", "ctrl+j": "\n", "tab": "\t"}  # keys that are text inside a paste


def key_text(key: events.Key) -> str:
    """The text a key of a burst stands for (a pasted Enter: CR, made a newline by `KeyBurst.text`)."""
    return PASTED_KEYS.get(key.key) or key.character or ""


class KeyBurst(events.Event, bubble=False):
    """Keys read together from the terminal, in order. `pasted`: it holds line breaks or tabs of a
    paste typed as keystrokes (its text is inserted, never sent)."""

    def __init__(self, keys: list[events.Key], *, pasted: bool = False, series: int | None = None) -> None:
        super().__init__()
        self.keys = keys
        self.pasted = pasted
        self.series = series  # bursts with nothing else between them (the pieces of one paste) share it

    @property
    def text(self) -> str:
        text = "".join(key_text(key) for key in self.keys)
        return text.replace("\r\n", "\n").replace("\r", "\n") if self.pasted else text


def with_key_bursts(base: type[Driver]) -> type[Driver]:
    """A subclass of the driver `base` that sends printable keys in bursts."""

    class BurstDriver(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._burst: list[events.Key] = []
            self._burst_lock = threading.Lock()
            self._burst_due = False
            self._pasted = False  # the burst holds a line break or tab that is part of a paste
            self._last_key = float("-inf")  # when the previous key was parsed (monotonic)
            # the current run of bursts: a key sent alone or any other event ends it. Not a pause: a
            # loaded machine stalls the input thread mid-paste, and the paste then reads as a pause
            # followed by a large burst; a person's key after a pause comes alone
            self._series = 0
            self._burst_recent = False  # the held burst's first key came within PASTE_GAP of the one before
            self._type_ahead = 0  # bytes typed before the input thread began to read: typed keys

        def run_input_thread(self) -> None:
            """Textual's input thread, told first how many bytes were typed ahead."""
            try:
                raw = fcntl.ioctl(self.fileno, termios.FIONREAD, b"\0\0\0\0")
                self._type_ahead = struct.unpack("i", raw)[0]
            except (OSError, AttributeError):
                self._type_ahead = 0
            super().run_input_thread()

        def process_message(self, message: Any) -> None:
            """Runs in the input thread, once per parsed event."""
            if isinstance(message, events.Key) and self._type_ahead > 0:
                self._type_ahead -= len((message.character or "?").encode())
                if message.key in PASTED_KEYS:  # typed ahead: an Enter is the key it is
                    self._last_key = float("-inf")
                    self.send_burst()
                    self._series += 1
                    super().process_message(message)
                    return
            if isinstance(message, events.Key):
                now = time.monotonic()
                recent, self._last_key = now - self._last_key < PASTE_GAP, now
                if message.key in PASTED_KEYS:
                    with self._burst_lock:
                        if self._burst or recent:
                            self._pasted = True
                        if not self._burst:
                            self._burst_recent = recent
                        self._burst.append(message)
                        if not self._burst_due:  # alone so far: wait PASTE_GAP for the rest of a paste
                            self._burst_due = True
                            delay = 0.0 if self._pasted else PASTE_GAP
                            driver_loop(self).call_soon_threadsafe(driver_loop(self).call_later, delay, self.send_burst)
                    return
                if typed_character(message) is not None:
                    with self._burst_lock:
                        if not self._burst:
                            self._burst_recent = recent
                        self._burst.append(message)
                        if not self._burst_due:  # sent once the loop runs: after the keys parsed with it
                            self._burst_due = True
                            driver_loop(self).call_soon_threadsafe(self.send_burst)
                    return
            self.send_burst()
            self._series += 1
            super().process_message(message)

        def send_burst(self) -> None:
            """Send the keys held so far (from the loop, or before another event)."""
            with self._burst_lock:
                keys, self._burst, self._burst_due = self._burst, [], False
                pasted, self._pasted = self._pasted or (
                    len(keys) > 1 and any(k.key in PASTED_KEYS for k in keys)), False
                if not keys:
                    return
                if len(keys) == 1 and not pasted and not self._burst_recent:
                    self._series += 1  # a key alone, as a person types it (in a paste: keys around it)
                    super().process_message(keys[0])  # a key alone (an Enter on a quiet prompt sends)
                    return
                for key in keys:
                    key.set_sender(self._app)
                super().process_message(KeyBurst(keys, pasted=pasted, series=self._series))

    BurstDriver.__name__ = BurstDriver.__qualname__ = f"{base.__name__}WithKeyBursts"
    return BurstDriver
