"""A checkout whose store was merged into one this machine does not know (another AUTOPATCH_HOME,
another machine) stays usable (issue 30 item 9): chat without Memory and `/audit` work, the
message names the fix (`memory stores add`), and F4 never shows "Schema version found: 0"."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
from autopatch_tui.tui.widgets.chat_log import AssistantMessage
from tests.support.store_helpers import add_item, add_turns, checkout, name_of, service_for
from tests.support.tui_text import screen_text
from tests.tui.test_chat import SIZE, make_app, notes, type_and_send, wait_idle
from tests.tui.test_repair_chat import SWALLOW


def _merged_elsewhere(tmp_path: Path, settings) -> Path:
    """Checkout A merged into B under the first AUTOPATCH_HOME; returns A."""
    a = checkout(tmp_path, "alpha", remote="https://example.com/org/alpha.git")
    b = checkout(tmp_path, "beta", remote="https://example.com/org/beta.git")
    for where in (a, b):
        mgr = MemoryManager.open(where, settings)
        add_turns(mgr, 1)
        add_item(mgr, f"subject of {where.name}", f"A decision made in {where.name}.")
        mgr.close()
    service_for(settings, model=False).merge(name_of(a), name_of(b))
    return a


def _other_home(tmp_path: Path, llm_stub):
    home = tmp_path / "other-home"
    home.mkdir()
    return load_settings({**os.environ, "AUTOPATCH_HOME": str(home), "AUTOPATCH_LLM_BASE_URL": llm_stub.base_url,
                          "AUTOPATCH_LLM_MODEL": "gpt-4o"}, llm_max_retries=0, llm_timeout_seconds=10)


def test_chat_and_audit_work_without_memory_and_f4_names_the_fix(tmp_path, settings, llm_stub) -> None:
    a = _merged_elsewhere(tmp_path, settings)
    (a / "src").mkdir()
    (a / "src" / "io.py").write_text(SWALLOW, encoding="utf-8")
    retired = (a / ".autopatch-j" / "memory.db").read_bytes()
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", "Tabs, as the project says.")
    other = _other_home(tmp_path, llm_stub)
    app = make_app(a, other)
    scratch = []

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            first = notes(app)[0] if notes(app) else ""
            assert "memory stores add" in " ".join(notes(app)), notes(app)
            assert "without Memory" in " ".join(notes(app))
            await type_and_send(pilot, "Which indentation do we use?")
            await wait_idle(pilot, app)
            answers = [a.source for a in app.screen.query(AssistantMessage)]
            assert answers and answers[-1] == "Tabs, as the project says.", (answers, notes(app), first)
            await type_and_send(pilot, "/audit @src")
            await wait_idle(pilot, app)
            audit = [a.source for a in app.screen.query(AssistantMessage)][-1]
            assert "degraded" not in audit.lower() and "Pending patches" in audit, audit
            scratch.append(app.services.work_manager.scratch)
            await pilot.press("f4")
            await wait_idle(pilot, app)
            text = screen_text(app)
            assert "Schema version found" not in text, text
            assert "Memory is not available here" in text and "memory stores add" in text, text
            assert "Clear Memory" not in text

    asyncio.run(run())
    assert scratch and scratch[0] is not None and not scratch[0].exists()  # the session's store is gone
    assert (a / ".autopatch-j" / "memory.db").read_bytes() == retired  # the checkout's store untouched
