"""CLI `memory search` in review approval mode says how many items awaiting review matched
(issue 30 item 14): they are not recalled, and without the line a user wonders where they went."""

from __future__ import annotations

from autopatch_tui.core.manager import MemoryManager
from tests.support.store_helpers import add_item, add_turns


def test_review_mode_counts_the_matches_it_holds_back(repo, settings, invoke_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    add_turns(mgr, 1)
    kept = add_item(mgr, "deploy day", "Deploy on Fridays only after review.", keywords=["deploy"])
    add_item(mgr, "deploy tags", "Tag every deploy with its date.", keywords=["deploy"])
    add_item(mgr, "deploy host", "Deploy from the build host only.", keywords=["deploy"])
    add_item(mgr, "indentation", "Indent with tabs.", keywords=["tabs"])
    mgr.review.keep([kept.logical_id])
    mgr.close()

    rc, out, err = invoke_cli("memory", "search", "deploy", env={"AUTOPATCH_MEMORY_APPROVAL": "review"})
    assert rc == 0, err
    assert kept.logical_id in out and "Tag every deploy" not in out
    assert "2 item(s) awaiting review also matched" in out and "memory review" in out
    rc, out, err = invoke_cli("memory", "search", "tabs", env={"AUTOPATCH_MEMORY_APPROVAL": "review"})
    assert "No matching Memory items." in out and "1 item(s) awaiting review also matched" in out
    rc, doc, err = invoke_cli("memory", "search", "deploy", json=True, env={"AUTOPATCH_MEMORY_APPROVAL": "review"})
    assert [r["id"] for r in doc["results"]] == [kept.logical_id]  # --json unchanged (contracts §4)
    rc, out, err = invoke_cli("memory", "search", "deploy")  # auto mode: everything is recalled, no line
    assert "awaiting review" not in out and "Tag every deploy" in out
