"""Entry from the CLI into the full-screen app (kept separate so the CLI imports Textual lazily)."""

from __future__ import annotations

from autopatch_tui.core.settings import Settings


def launch_app(repo: str | None, settings: Settings) -> int:
    from autopatch_tui.tui.app import AutopatchApp

    app = AutopatchApp.for_repo(repo, settings)
    app.freeze_gc_after_start = True  # a process of its own: see tui/gc_tuning.py
    app.run()
    return app.return_code or 0
