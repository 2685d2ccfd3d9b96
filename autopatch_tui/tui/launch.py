"""Entry from the CLI into the full-screen app (kept separate so the CLI imports Textual lazily)."""

from __future__ import annotations

from autopatch_tui.core.settings import Settings


def launch_app(repo: str | None, settings: Settings) -> int:
    from autopatch_tui.tui.app import AutopatchApp

    app = AutopatchApp.for_repo(repo, settings)
    app.run()
    return app.return_code or 0
