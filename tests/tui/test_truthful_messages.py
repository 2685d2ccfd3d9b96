"""Issue 15's rough edges, each with the message it must say now: a bad config.toml names its file,
line and column; `/new` says that failed jobs failed; the audit summary's closing lines do not run
into its last bullet."""

from __future__ import annotations

import asyncio
import threading

import pytest

from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.settings import load_settings
from tests.support.llm_stub import Reply
from tests.tui.test_chat import SIZE, make_app, model_settings, notes, type_and_send, wait_idle


def test_a_bad_config_names_file_line_and_column_and_never_quotes_it(settings):
    config = settings.home / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('theme = "nord"\nllm_api_key = "sk-SECRET" oops\n', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings({"AUTOPATCH_HOME": str(settings.home)})
    text = str(err.value)
    assert str(config) in text and "line 2, column 27" in text and "TOMLDecodeError" not in text
    assert "sk-SECRET" not in text
    config.write_text('theme = "nord', encoding="utf-8")
    with pytest.raises(ConfigError, match="at its end: unterminated string"):
        load_settings({"AUTOPATCH_HOME": str(settings.home)})


def test_new_says_failed_jobs_failed(repo, llm_stub):
    gate = threading.Event()  # the jobs are still open when /new starts its flush
    llm_stub.default("extraction", Reply(status=401, error_body={"error": {"message": "bad key"}}, wait_event=gate))
    settings = model_settings(llm_stub)
    mgr = __import__("autopatch_tui.core.manager", fromlist=["MemoryManager"]).MemoryManager.open(repo, settings)
    for text in ("first", "second"):
        h = mgr.begin_turn(text)
        mgr.complete_turn(h, "ok")
    mgr.close()
    app = make_app(repo, settings)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await wait_idle(pilot, app)
            await type_and_send(pilot, "/new")
            await pilot.pause(0.2)
            gate.set()
            await wait_idle(pilot, app)
            text = notes(app)[-1]
            assert text.startswith("New thread")
            assert "0 job(s) done" in text and "failed (see Jobs, F5)" in text, text

    asyncio.run(run())


def test_the_audit_summarys_closing_lines_are_not_part_of_the_last_bullet(repo, settings):
    from textual.widgets._markdown import MarkdownBulletList, MarkdownParagraph

    from autopatch_tui.tui.widgets.chat_log import AssistantMessage
    from tests.tui.test_repair_chat import SWALLOW

    (repo / "src").mkdir()
    (repo / "src" / "io.py").write_text(SWALLOW, encoding="utf-8")
    app = make_app(repo, settings)

    def block_text(block) -> str:
        return " ".join(str(p.render()) for p in [block, *block.query(MarkdownParagraph)])

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/audit @src")
            await wait_idle(pilot, app)
            answer = app.screen.query(AssistantMessage).last()
            [turn] = app.manager.recent_turns()
            assert answer.source == turn.assistant_text  # the saved text, unchanged
            lists = list(answer.query(MarkdownBulletList))
            assert lists and all("Pending patches" not in block_text(b) for b in lists)
            paragraphs = [str(p.render()) for p in answer.children if isinstance(p, MarkdownParagraph)]
            assert any(p.startswith("Pending patches") for p in paragraphs), paragraphs
            assert any(p.startswith("No model is configured") for p in paragraphs), paragraphs

    asyncio.run(run())


def test_markdown_view_ends_a_list_before_a_plain_line_and_leaves_code_alone():
    from autopatch_tui.tui.widgets.markdown_view import markdown_view

    assert markdown_view("Audit:\n- F1 a\n- F2 b\nPending patches: 1\nNext: x") == (
        "Audit:\n- F1 a\n- F2 b\n\nPending patches: 1\n\nNext: x")
    assert markdown_view("one\ntwo") == "one\ntwo"  # no list: untouched
    code = "```diff\n- old\n+ new\n```"
    assert markdown_view(code) == code
    assert markdown_view("- a\n  continued\n\ntext") == "- a\n  continued\n\ntext"
