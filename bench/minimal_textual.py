"""The floor of the app's first frame: a minimal Textual app (Header, Footer, Static) with a
ctrl+q "Quit" binding, so `pty_start` finds its first frame exactly as it finds the app's (the
footer's "Quit"). Run by bench/startup.py in the same pseudo-terminal method as the app."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Static


class Minimal(App):
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("minimal Textual app")
        yield Footer()


if __name__ == "__main__":
    Minimal().run()
