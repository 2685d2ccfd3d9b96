"""Every use of a name Textual keeps private, in one place (issue 32 item 4): an upgrade that renames
or removes one breaks `tests/tui/test_textual_compat.py`, not a screen at run time.

Each entry says why the public API does not do: the footer's key widget has no public module; a
footer key's disabled state is set by the footer only when it recomposes (a full rebuild per state
change); the user's keymap is applied to a screen's bindings by the App only; a DataTable measures
its columns again only when told so; the prompt's own key handling runs before TextArea's and
falls back to it (`PromptInput` overrides `TextArea._on_key` and calls `_replace_via_keyboard`:
both are checked by the test); F1 lists a node's own bindings with the keymap applied, as Textual's
binding chain does; the input driver's event loop is where a thread hands its keys over.
(`MarkdownStream` is public: `textual.widgets.markdown`.)"""

from __future__ import annotations

from asyncio import AbstractEventLoop
from collections.abc import Mapping
from typing import TYPE_CHECKING

from textual.widgets._footer import FooterKey  # noqa: PLC2701  # no public module holds it (textual 8.2.8)

if TYPE_CHECKING:
    from textual.app import App
    from textual.binding import BindingsMap
    from textual.dom import DOMNode
    from textual.driver import Driver
    from textual.widgets import DataTable

__all__ = ["FooterKey", "app_keymap", "driver_loop", "node_bindings", "remeasure_columns",
           "set_footer_key_disabled"]


def set_footer_key_disabled(key: FooterKey, disabled: bool) -> bool:
    """Set a footer key's disabled state in place (Textual's Footer recomposes to do it); whether
    it changed."""
    if key._disabled == disabled:  # noqa: SLF001
        return False
    key._disabled = disabled  # noqa: SLF001
    return True


def node_bindings(node: DOMNode) -> BindingsMap:
    """A copy of a node's own bindings, as Textual's binding chain reads them (for F1's key list)."""
    return node._bindings.copy()  # noqa: SLF001


def app_keymap(app: App) -> Mapping[str, str]:
    """The keymap the user configured (binding id -> keys), as the App applies it to bindings."""
    return app._keymap  # noqa: SLF001


def remeasure_columns(table: DataTable) -> None:
    """Make a DataTable measure its columns again on its next refresh (after their widths changed)."""
    table._require_update_dimensions = True  # noqa: SLF001


def driver_loop(driver: Driver) -> AbstractEventLoop:
    """The event loop an input driver hands its events to (from the input thread)."""
    return driver._loop  # noqa: SLF001
