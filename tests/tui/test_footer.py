"""AppFooter: several binding refreshes in one refresh cycle cause one recompose, and the footer
still shows the bindings as they are when it recomposes; a refresh that changes nothing shown
recomposes nothing, and one that only enables or disables keys updates those keys in place."""

from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer

from autopatch_tui.tui.textual_compat import FooterKey
from autopatch_tui.tui.widgets.footer import AppFooter


class FooterApp(App):
    BINDINGS = [Binding("x", "noop", "Alpha", id="t.alpha"), Binding("y", "other", "Gamma", id="t.gamma"),
                Binding("z", "third", "Zeta", id="t.zeta")]
    gamma = False
    zeta = True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "third":
            return True if self.zeta else None  # None: shown, disabled
        return self.gamma if action == "other" else True

    def action_third(self) -> None:
        return None

    def action_other(self) -> None:
        return None

    def compose(self) -> ComposeResult:
        yield AppFooter()

    def action_noop(self) -> None:
        return None


def keys(app: App) -> list[str]:
    return [k.description for k in app.screen.query(FooterKey)]


def test_refreshes_in_one_cycle_recompose_once_and_show_the_latest_bindings(monkeypatch) -> None:
    calls: list[int] = []
    real = Footer.recompose

    async def counting(self: Footer) -> None:
        calls.append(1)
        await real(self)

    monkeypatch.setattr(Footer, "recompose", counting)
    app = FooterApp()

    async def run() -> None:
        async with app.run_test(size=(60, 5)) as pilot:
            await pilot.pause()
            assert "Alpha" in keys(app) and "Gamma" not in keys(app)
            calls.clear()
            app.gamma = True
            for _ in range(5):
                app.screen.refresh_bindings()
            await pilot.pause()
            await pilot.pause()
            assert len(calls) == 1
            assert "Gamma" in keys(app)
            shown = list(app.screen.query(FooterKey))
            app.screen.refresh_bindings()  # a later cycle with nothing changed: the same widgets stay
            await pilot.pause()
            await pilot.pause()
            assert len(calls) == 1 and list(app.screen.query(FooterKey)) == shown
            app.zeta = False  # only an enabled state changes: that key is dimmed in place
            app.screen.refresh_bindings()
            await pilot.pause()
            await pilot.pause()
            assert len(calls) == 1 and list(app.screen.query(FooterKey)) == shown
            disabled = {k.description: (k.has_class("-disabled"), k._disabled) for k in app.screen.query(FooterKey)}
            assert disabled["Zeta"] == (True, True) and disabled["Alpha"] == (False, False)
            app.zeta = True
            app.screen.refresh_bindings()
            await pilot.pause()
            await pilot.pause()
            assert [k.has_class("-disabled") for k in app.screen.query(FooterKey)] == [False] * len(shown)
            app.gamma = False  # a key goes away: recomposed
            app.screen.refresh_bindings()
            await pilot.pause()
            await pilot.pause()
            assert len(calls) == 2 and "Gamma" not in keys(app) and "Zeta" in keys(app)

    asyncio.run(run())
