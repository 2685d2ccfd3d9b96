"""Repair workflows in the chat screen: `/audit` scans (also without a model) and shows exactly the
summary the turn saved; `/patch show|apply|discard` act on the open audit without a model;
`/patch revise` streams the agent but ends with the workflow's summary; `/new` and `/reset` close
the audit; refused commands say that nothing was stored."""

from __future__ import annotations

import asyncio
import json

from autopatch_tui.tui.widgets.chat_log import AssistantMessage
from tests.support.llm_stub import CapturedRequest, Reply
from tests.tui.test_chat import (
    SIZE,
    make_app,
    model_settings,
    notes,
    type_and_send,
    wait_idle,
)

SWALLOW = "def load(path):\n    try:\n        return open(path).read()\n    except:\n        pass\n"
OLD = "    except:\n        pass\n"
FIXED = "    except OSError:\n        return None\n"
REVISED = "    except OSError:\n        return ''\n"


def propose(finding: str, new_text: str):
    def reply(req: CapturedRequest):
        if not any(m["role"] == "tool" for m in req.messages):
            return Reply(tool_calls=[("propose_patch", json.dumps(
                {"finding_id": finding, "old_text": OLD, "new_text": new_text}))])
        return "MODEL-FREE-TEXT: done"
    return reply


async def run_command(pilot, app, text: str) -> str:
    """Send `text`, wait until the app is idle, return the last note shown."""
    await type_and_send(pilot, text)
    await wait_idle(pilot, app)
    return notes(app)[-1]


def answers(app) -> list[str]:
    return [a.source for a in app.screen.query(AssistantMessage)]


def test_audit_without_a_model_scans_saves_the_summary_and_patch_commands_refuse(repo, settings):
    (repo / "src").mkdir()
    (repo / "src" / "io.py").write_text(SWALLOW, encoding="utf-8")
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/audit @src")
            await wait_idle(pilot, app)
            shown = answers(app)[-1]
            assert "F1 src/io.py:4 S110" in shown and "no patches were drafted" in shown
            [turn] = app.manager.recent_turns()
            assert (turn.intent, turn.state, turn.user_text, turn.assistant_text) == (
                "code_audit", "completed", "/audit @src", shown)
            assert "F1 has no patch (open)" in await run_command(pilot, app, "/patch show F1")
            assert "No model is configured" in await run_command(pilot, app, "/audit next")
            note = await run_command(pilot, app, "/audit @missing")
            assert "cannot scan 'missing'" in note and "Your message was saved" in note
            failed = app.manager.recent_turns()[-1]
            assert (failed.state, failed.user_text, failed.assistant_text) == ("failed", "/audit @missing", "")

    asyncio.run(run())


def test_audit_apply_revise_and_new_closes_the_audit(repo, llm_stub):
    (repo / "io.py").write_text(SWALLOW, encoding="utf-8")
    llm_stub.script("chat", propose("F1", FIXED), propose("F1", FIXED), propose("F1", REVISED),
                    propose("F1", REVISED))
    llm_stub.default("extraction", {"thread_checkpoint": "audit", "candidates": []})
    app = make_app(repo, model_settings(llm_stub))

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/audit")
            await wait_idle(pilot, app)
            summary = answers(app)[-1]
            assert "F1 io.py:4 S110" in summary and "patch pending review" in summary
            assert "MODEL-FREE-TEXT" not in summary and "propose_patch" not in summary
            await type_and_send(pilot, "/patch revise F1 return an empty string instead")
            await wait_idle(pilot, app)
            revised = answers(app)[-1]
            assert revised.startswith("Patch for F1 revised (revision 2)") and "return ''" in revised
            turn = app.manager.recent_turns()[-1]
            assert (turn.intent, turn.assistant_text) == ("patch_revise", revised)
            await type_and_send(pilot, "/patch show F1")
            await wait_idle(pilot, app)
            assert "+        return ''" in answers(app)[-1]
            applied = await run_command(pilot, app, "/patch apply F1")
            assert "Applied the patch for F1 to io.py." in applied
            assert "Verified: S110 is resolved (ruff)." in applied  # Ruff re-checked the changed file
            assert (repo / "io.py").read_text(encoding="utf-8").endswith(REVISED)
            assert "F1 has no pending patch (it is applied)" in await run_command(pilot, app, "/patch apply F1")
            assert "The open audit was closed" in await run_command(pilot, app, "/new")
            assert "no audit is open" in await run_command(pilot, app, "/patch list")
            note = await run_command(pilot, app, "/patch explain F1")
            assert "Not sent: no audit is open" in note and "Nothing was stored" in note

    asyncio.run(run())


def test_reset_closes_the_open_audit_and_keeps_memory(repo, settings):
    (repo / "io.py").write_text(SWALLOW, encoding="utf-8")
    app = make_app(repo, settings)

    async def run():
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/audit")
            await wait_idle(pilot, app)
            assert app.services.review.workspace is not None
            note = await run_command(pilot, app, "/reset")
            assert "Memory was kept" in note and "The open audit was closed" in note
            assert app.services.review.workspace is None
            assert [t.intent for t in app.manager.recent_turns()] == ["code_audit"]

    asyncio.run(run())
