"""The footer every screen shows: Textual's `Footer`, with binding refreshes coalesced.

Textual's Footer recomposes (every key widget rebuilt and restyled) once per
`bindings_updated_signal`, and a screen that mounts publishes that signal several times in one
refresh cycle (initial focus, focus moved by the screen, `refresh_bindings` after data arrives).
Opening the Memory browser cost seven recomposes. This footer schedules at most one recompose per
refresh cycle; it reads the bindings when it runs, so it always shows the latest state.

Its order is stable whatever has focus: the screen's own keys in their declared order, then a
focused widget's, then the App's (F2…F6, quit, help), then the palette. (Textual's order follows
the focus chain: with the prompt focused, `f6 Stores` came first because the TextArea binds f6.)"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


def declared_index(node: DOMNode, binding: Binding) -> int:
    """The binding's position in its node's BINDINGS (over the class hierarchy), by id or action."""
    position = 0
    for cls in type(node).__mro__:
        for declared in cls.__dict__.get("BINDINGS", []):
            if isinstance(declared, Binding) and ((binding.id and declared.id == binding.id)
                                                  or (not binding.id and declared.action == binding.action)):
                return position
            position += 1
    return position


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

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        screen = self.screen
        app = self.app
        active = screen.active_bindings
        shown = []
        seen_actions: set[str] = set()
        for node, binding, enabled, tooltip in active.values():
            if not binding.show or binding.action in seen_actions or binding.key == app.COMMAND_PALETTE_BINDING:
                continue
            seen_actions.add(binding.action)
            rank = 0 if node is screen else 2 if node is app else 1
            shown.append(((rank, declared_index(node, binding)), binding, enabled, tooltip))
        shown.sort(key=lambda entry: entry[0])
        self.styles.grid_size_columns = len(shown)
        for _, binding, enabled, tooltip in shown:
            yield FooterKey(binding.key, app.get_key_display(binding), binding.description, binding.action,
                            disabled=not enabled, tooltip=tooltip).data_bind(compact=Footer.compact)
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            palette = active.get(app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _node, binding, enabled, tooltip = palette
                yield FooterKey(binding.key, app.get_key_display(binding), binding.description, binding.action,
                                classes="-command-palette", disabled=not enabled,
                                tooltip=binding.tooltip or binding.description)
