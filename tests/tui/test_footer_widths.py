"""Every footer shows its screen's keys at 80 and 120 columns (issue 30 item 14): F1 and Quit, then
every key the screen itself offers; the App's screen keys (F2…F6, also in F1 and the palette) leave
from the right when there is no room, and no key is ever shown cut in half."""

from __future__ import annotations

import asyncio

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.tui.textual_compat import FooterKey
from autopatch_tui.tui.widgets.footer import AppFooter
from tests.support.store_helpers import add_item, add_turns
from tests.tui.test_chat import make_app, wait_idle

SCREENS = ("f2", "f3", "f4", "f5", "f6")


@pytest.mark.parametrize("width", [80, 120])
def test_every_screens_footer_shows_its_own_keys_whole(width: int, repo, settings) -> None:
    mgr = MemoryManager.open(repo, settings)
    add_turns(mgr, 2)
    add_item(mgr, "indentation", "Indent with tabs.")
    mgr.close()
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=(width, 30)) as pilot:
            await wait_idle(pilot, app)
            for key in SCREENS:
                await pilot.press(key)
                await wait_idle(pilot, app)
                await pilot.pause(0.2)
                screen = app.screen
                footer = screen.query_one(AppFooter)
                keys = list(footer.query_children(FooterKey))
                shown = {k.action for k in keys}
                own = [b for node, b, _enabled, _tip in screen.active_bindings.values()
                       if node is screen and b.show and b.key != app.COMMAND_PALETTE_BINDING]
                missing = [b.description for b in own if b.action not in shown]
                assert not missing, (key, width, missing)
                assert [k.key for k in keys][:2] == ["f1", "ctrl+q"], key
                app_keys = [k.key for k in keys if k.key in SCREENS]
                focused = [b for node, b, _e, _t in screen.active_bindings.values()
                           if node is not screen and node is not app and b.show]
                if app_keys:  # the App's F-keys only when every key of the screen (and its view) is shown
                    assert all(b.action in shown for b in focused), (key, width)
                    right = max(k.region.right for k in keys)
                    assert right <= width, (key, width, right)
                    for k in keys:  # whole keys only: the rendered text holds its description
                        assert k.region.width >= len(k.description), (key, width, k.description, k.region)
                if width >= 120 or not focused:  # a focused view's keys too (the inbox: 80 columns is too few)
                    assert all(b.action in shown for b in focused), (key, width)
                    assert max(k.region.right for k in keys) <= width, (key, width)

    asyncio.run(run())
