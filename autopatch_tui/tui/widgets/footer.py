"""The footer every screen shows: Textual's `Footer`, with binding refreshes coalesced.

Textual's Footer recomposes (every key widget rebuilt and restyled) once per
`bindings_updated_signal`, and a screen that mounts publishes that signal several times in one
refresh cycle (initial focus, focus moved by the screen, `refresh_bindings` after data arrives).
Opening the Memory browser cost seven recomposes. This footer schedules at most one recompose per
refresh cycle; it reads the bindings when it runs, so it always shows the latest state, and it
skips the recompose when the keys it would show are exactly the ones shown, and only flips the
`-disabled` state of keys whose enabled state alone changed (issue 14: a screen's first open
recomposed the footer three times, each rebuilding and restyling every key: 35-50 ms apiece).

Its order is stable whatever has focus: Help (F1) and Quit first — a narrow terminal cuts the
footer from the right, and these two must stay visible (at 80 columns both, at 60 F1) — then the
screen's own keys in their declared order, then a focused widget's, then the rest of the App's
(F2…F6), then the palette. (Textual's order follows the focus chain: with the prompt focused,
`f6 Stores` came first because the TextArea binds f6.) When the keys do not fit the width, the
App's F2…F6 leave from the right, then the palette key (both are in F1's help), so the screen's
own keys are shown whole instead of being cut (issue 30 item 14)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Footer

from autopatch_tui.tui.textual_compat import FooterKey, set_footer_key_disabled

FIRST = ("app.help", "app.quit")  # always at the left of the footer, in this order


def key_width(entry: tuple[str, str, str, str, bool, str, str]) -> int:
    """The cells one key takes in the footer: " key description " (FooterKey's padding)."""
    from rich.cells import cell_len

    return cell_len(entry[1]) + cell_len(entry[2]) + 3


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
        self._composed: list[tuple[str, str, str, str, bool, str, str]] | None = None

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._recompose_scheduled:
            self._recompose_scheduled = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_scheduled = False
        if self._composed is not None and self.is_attached:
            entries = self.entries()
            if entries == self._composed:
                return  # the same keys as shown: rebuilding them would only restyle the same widgets
            if self._update_disabled(entries):
                return
        await self.recompose()

    def _update_disabled(self, entries: list[tuple[str, str, str, str, bool, str, str]]) -> bool:
        """When only keys' enabled states changed (an item got selected), update those keys in
        place: what a recompose would build, without rebuilding every key. False otherwise."""
        keys = list(self.query_children(FooterKey))
        old = self._composed or []
        if len(keys) != len(entries) or len(old) != len(entries):
            return False
        if any(a[:4] + a[5:] != b[:4] + b[5:] for a, b in zip(old, entries, strict=True)):
            return False
        for key, entry in zip(keys, entries, strict=True):
            if set_footer_key_disabled(key, entry[4]):
                key.set_class(entry[4], "-disabled")
        self._composed = entries
        return True

    def entries(self) -> list[tuple[str, str, str, str, bool, str, str]]:
        """What the footer shows, in order: (key, key display, description, action, disabled,
        tooltip, classes) per key, the palette last."""
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
            order = declared_index(node, binding)
            if node is app and binding.id in FIRST:
                rank, order = -1, FIRST.index(binding.id)
            shown.append(((rank, order), binding, enabled, tooltip))
        shown.sort(key=lambda entry: entry[0])
        tail = []
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            palette = active.get(app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _node, binding, enabled, tooltip = palette
                tail.append((binding.key, app.get_key_display(binding), binding.description, binding.action,
                             not enabled, binding.tooltip or binding.description, "-command-palette"))
        ranks = [rank for (rank, _), *_ in shown]
        keys = [(binding.key, app.get_key_display(binding), binding.description, binding.action, not enabled,
                 tooltip, "") for _, binding, enabled, tooltip in shown]
        # too narrow: the App's screen keys (F2…F6, in F1's help and the palette) leave from the right;
        # then the palette key (ctrl+p is in F1's help) leaves. F1,
        # Quit, the screen's own keys and its focused view's (the inbox's Keep…) stay (issue 30 item 14)
        room = self._room()

        def width() -> int:
            return sum(key_width(k) for k in keys) + sum(key_width(e) + 1 for e in tail)

        while width() > room and 2 in ranks:
            at = len(ranks) - 1 - ranks[::-1].index(2)
            del keys[at], ranks[at]
        if width() > room:
            tail = []
        return keys + tail

    def _room(self) -> int:
        width = self.size.width if self.is_attached and self.size.width else 0
        return width or (self.app.size.width if self.app is not None else 0) or 10_000

    def on_resize(self) -> None:
        """Another width may show other keys: recompose (once) when it does."""
        if self._composed is None or self._recompose_scheduled:
            return
        if self.entries() != self._composed:
            self._recompose_scheduled = True
            self.call_after_refresh(self._recompose_once)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        entries = self.entries()
        self._composed = entries
        self.styles.grid_size_columns = sum(1 for e in entries if not e[6])
        for key, display, description, action, disabled, tooltip, classes in entries:
            if classes:  # the palette key: not compacted with the others
                yield FooterKey(key, display, description, action, classes=classes, disabled=disabled, tooltip=tooltip)
            else:
                yield FooterKey(key, display, description, action, disabled=disabled,
                                tooltip=tooltip).data_bind(compact=Footer.compact)
