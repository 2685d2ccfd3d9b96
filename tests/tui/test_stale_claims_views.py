"""Still true? in the app (issue 31, deliverable 4): the review inbox says under an item that the
repository disagrees with it, and the Audit view lists the claim with its evidence; an item older
than the `secret` rule is shown masked in the inbox (deliverable 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import FakeClock
from tests.support.tui_text import plain
from tests.support.tui_wait import settle
from tests.tui.test_memory_browser import T0, mb_app, mb_seed, open_browser
from tests.tui.test_review_inbox import open_memory

pytestmark = pytest.mark.anyio
SIZE = (120, 36)
KEY = "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"


@pytest.fixture
def mgr(repo: Path, settings: Settings) -> MemoryManager:
    (repo / "package-lock.json").write_text("{}")
    return MemoryManager.open(repo, settings, clock=FakeClock(T0))


async def test_the_inbox_says_the_repository_disagrees_and_masks_a_secret(mgr: MemoryManager,
                                                                          settings: Settings) -> None:
    mb_seed(mgr, logical_id="mem-31PNPM", subject="package manager", statement=f"Always use pnpm; CI token {KEY}.",
            now=T0 + 10)
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_memory(pilot)
        await settle(pilot, lambda: "disagrees" in plain(screen, "#ib-fields"))
        shown = plain(screen, "#ib-fields")
        assert ("the repository disagrees: says pnpm (javascript package manager); package-lock.json exists, "
                "no pnpm-lock.yaml") in " ".join(shown.split())
        assert KEY not in shown and "[masked github token]" in shown


async def test_the_audit_view_lists_a_claim_the_repository_disagrees_with(mgr: MemoryManager,
                                                                          settings: Settings) -> None:
    mb_seed(mgr, logical_id="mem-32PNPM", subject="package manager", statement="Always use pnpm.", now=T0 + 10)
    mgr.review.keep_all()
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot, "audit")
        await settle(pilot, lambda: "disagrees with" in plain(screen, "#au-summary"))
        assert "1 claim(s) the repository disagrees with" in plain(screen, "#au-summary")
        rows = [r for r in screen.query_one("AuditView").rows if r.type == "disagrees"]
        why = "says pnpm (javascript package manager); package-lock.json exists, no pnpm-lock.yaml"
        assert [(r.ids, r.why) for r in rows] == [(("mem-32PNPM",), why)]
        assert rows[0].key in [str(k.value) for k in screen.query_one("#au-findings", DataTable).rows]
