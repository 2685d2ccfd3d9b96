"""Screen construction by name (each screen gets the services by constructor)."""

from __future__ import annotations

from textual.screen import Screen

from autopatch_tui.tui.services import Services


def build_screen(name: str, services: Services) -> Screen:
    if name == "chat":
        from autopatch_tui.tui.screens.chat import ChatScreen

        return ChatScreen(services)
    if name == "history":
        from autopatch_tui.tui.screens.history import HistoryScreen

        return HistoryScreen(services)
    if name == "memory":
        from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen

        return MemoryBrowserScreen(services)
    if name == "jobs":
        from autopatch_tui.tui.screens.diagnostics import DiagnosticsScreen

        return DiagnosticsScreen(services)
    if name == "stores":
        from autopatch_tui.tui.screens.stores import StoresScreen

        return StoresScreen(services)
    raise KeyError(name)
