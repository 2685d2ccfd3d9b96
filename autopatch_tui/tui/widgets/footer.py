"""The footer every screen shows: Textual's `Footer`, with binding refreshes coalesced.

Textual's Footer recomposes (every key widget rebuilt and restyled) once per
`bindings_updated_signal`, and a screen that mounts publishes that signal several times in one
refresh cycle (initial focus, focus moved by the screen, `refresh_bindings` after data arrives).
Opening the Memory browser cost seven recomposes. This footer schedules at most one recompose per
refresh cycle; it reads the bindings when it runs, so it always shows the latest state."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class AppFooter(Footer):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._recompose_scheduled = False

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._recompose_scheduled:
            self._recompose_scheduled = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_scheduled = False
        await self.recompose()
