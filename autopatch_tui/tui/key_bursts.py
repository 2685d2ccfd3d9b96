"""Printable keys read from the terminal together travel to the App as one event (issue 20, item 5).

Textual's driver parses terminal input in its input thread and hands every key to the event loop
as a coroutine of its own (`Driver.send_message`), then the App dispatches it as a message: about
70 µs of CPU per key, where parsing costs 8. A paste typed as keystrokes (a terminal without
bracketed paste) is tens of thousands of keys. `with_key_bursts` wraps the platform's driver so
that printable keys parsed before the loop next runs are sent as one `KeyBurst`; anything else (a
non-printable key, a mouse event, a resize) first sends the burst read before it, so the order is
kept. A single key is sent as itself. The App unpacks a burst (`AutopatchApp.on_event`): the text
goes to the typing target in one insert, or, where no field takes text, the keys are handled one by
one as if they had come alone (letter keys keep working as keys)."""

from __future__ import annotations

import threading
from typing import Any

from textual import events
from textual.driver import Driver

from autopatch_tui.tui.typing import typed_character


class KeyBurst(events.Event, bubble=False):
    """Printable keys read together from the terminal, in order."""

    def __init__(self, keys: list[events.Key]) -> None:
        super().__init__()
        self.keys = keys

    @property
    def text(self) -> str:
        return "".join(key.character or "" for key in self.keys)


def with_key_bursts(base: type[Driver]) -> type[Driver]:
    """A subclass of the driver `base` that sends printable keys in bursts."""

    class BurstDriver(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._burst: list[events.Key] = []
            self._burst_lock = threading.Lock()
            self._burst_due = False

        def process_message(self, message: Any) -> None:
            """Runs in the input thread, once per parsed event."""
            if isinstance(message, events.Key) and typed_character(message) is not None:
                with self._burst_lock:
                    self._burst.append(message)
                    if not self._burst_due:  # sent once the loop runs: after the keys parsed with it
                        self._burst_due = True
                        self._loop.call_soon_threadsafe(self.send_burst)
                return
            self.send_burst()
            super().process_message(message)

        def send_burst(self) -> None:
            """Send the keys held so far (from the loop, or before another event)."""
            with self._burst_lock:
                keys, self._burst, self._burst_due = self._burst, [], False
                if not keys:
                    return
                if len(keys) == 1:
                    super().process_message(keys[0])
                    return
                for key in keys:
                    key.set_sender(self._app)
                super().process_message(KeyBurst(keys))

    BurstDriver.__name__ = BurstDriver.__qualname__ = f"{base.__name__}WithKeyBursts"
    return BurstDriver
