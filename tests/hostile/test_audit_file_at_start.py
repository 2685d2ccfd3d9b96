"""Issue 28 item 4, at app start: `.autopatch-j/audit.json` as a folder, a FIFO or nested JSON — the
app starts, says in one note that the saved audit was not read, and keeps working."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.tui.test_chat import SIZE, make_app, notes, wait_idle


@pytest.mark.parametrize("variant", ["folder", "fifo", "nested"])
def test_the_app_starts_and_says_the_saved_audit_was_not_read(variant, repo, settings) -> None:
    path = repo / ".autopatch-j" / "audit.json"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    if variant == "folder":
        path.mkdir()
    elif variant == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000)

    async def run() -> None:
        app = make_app(repo, settings)
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            said = [n for n in notes(app) if "saved audit was not read" in n]
            assert len(said) == 1 and "\n" not in said[0].strip(), notes(app)

    asyncio.run(asyncio.wait_for(run(), 60))
