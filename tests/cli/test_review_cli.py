"""The §8 commands from the shell: `memory review [--json]`, `memory review keep ID... | --all
[--json]`, `memory audit [--json]`, and the new fields of `memory list --json` and `memory status
--json` — exact shapes, bad IDs (unknown, inactive, mixed, ambiguous, over-long, blank: nothing
marked), the approval variable, a read-only store, and store text that never reaches the terminal raw."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.memory_factory import add_item

SUMMARY_KEYS = {"id", "kind", "subject", "statement", "strength", "origin", "recall_mode", "applies_to_paths",
                "updated_at"}


@pytest.fixture
def seeded(repo: Path, settings: Settings) -> list[str]:
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        first = add_item(conn, subject="tabs", statement="Never use tabs", keywords=["indentation"],
                         now=1_800_000_000.0)
        second = add_item(conn, subject="makefile tabs", statement="Use tabs for indentation",
                          applies_to_paths=["Makefile"], keywords=["indentation"], now=1_800_000_100.0)
        third = add_item(conn, subject="tabs", statement="Never use tabs anywhere", logical_id=first.logical_id,
                         revision=2, keywords=["indentation"], now=1_800_000_200.0)
        gone = add_item(conn, subject="gone", statement="Forget me.", now=1_800_000_300.0)
        mgr.forget(gone.logical_id)
        return [second.logical_id, third.logical_id, gone.logical_id]
    finally:
        mgr.close()


def _marks(repo: Path) -> bytes | None:
    path = repo / ".autopatch-j" / "review_marks.json"
    return path.read_bytes() if path.exists() else None


def test_review_lists_the_inbox_oldest_first_with_the_exact_shape(invoke_cli, seeded) -> None:
    second, revised, _ = seeded
    rc, out, err = invoke_cli("memory", "review", json=True)
    assert rc == 0, err
    assert set(out) == {"approval", "items", "next"} and out["next"] is None and out["approval"] == "auto"
    assert [i["id"] for i in out["items"]] == [second, revised]
    for item in out["items"]:
        assert set(item) == SUMMARY_KEYS | {"revision", "change"}
    assert [(i["revision"], i["change"]) for i in out["items"]] == [(1, "new"), (2, "revised")]
    rc, text, _ = invoke_cli("memory", "review")
    assert rc == 0 and "2 items awaiting review" in text and "approval: auto" in text


def test_keep_marks_the_items_and_the_fields_follow(invoke_cli, seeded) -> None:
    second, revised, _ = seeded
    rc, out, err = invoke_cli("memory", "review", "keep", second, json=True)
    assert (rc, out) == (0, {"kept": [second]}), err
    rc, listing, _ = invoke_cli("memory", "list", json=True)
    assert {i["id"]: i["review"] for i in listing["items"]} == {second: "kept", revised: "new"}
    assert all(set(i) == SUMMARY_KEYS | {"review"} for i in listing["items"])
    rc, status, _ = invoke_cli("memory", "status", json=True)
    assert status["review"] == {"new": 1}
    rc, out, _ = invoke_cli("memory", "review", "keep", "--all", json=True)
    assert (rc, out) == (0, {"kept": [revised]})
    rc, status, _ = invoke_cli("memory", "status", json=True)
    assert status["review"] == {"new": 0}
    rc, out, _ = invoke_cli("memory", "review", "keep", "--all", json=True)
    assert (rc, out) == (0, {"kept": []})


@pytest.mark.parametrize("bad", [["mem-does-not-exist"], ["GONE"], ["SECOND", "mem-does-not-exist"], ["SECOND", "GONE"]])
def test_an_unknown_or_inactive_id_fails_and_marks_nothing(invoke_cli, seeded, repo: Path, bad) -> None:
    names = {"SECOND": seeded[0], "GONE": seeded[2]}
    args = [names.get(b, b) for b in bad]
    before = _marks(repo)
    rc, out, err = invoke_cli("memory", "review", "keep", *args, json=True)
    assert rc == 1 and "Traceback" not in err and err.startswith("error: ")
    assert _marks(repo) == before
    rc, status, _ = invoke_cli("memory", "status", json=True)
    assert status["review"] == {"new": 2}


@pytest.mark.parametrize("args", [["keep"], ["keep", "--all", "mem-x"], ["keep", ""], ["keep", "x" * 200],
                                  ["keep", "mem-"]])
def test_usage_errors_exit_2_and_mark_nothing(invoke_cli, seeded, repo: Path, args) -> None:
    rc, _, err = invoke_cli("memory", "review", *args)
    assert rc == 2 and "Traceback" not in err, err
    assert _marks(repo) is None


def test_the_approval_variable_reaches_review_and_search(invoke_cli, seeded) -> None:
    second, revised, _ = seeded
    rc, out, _ = invoke_cli("memory", "review", json=True, env={"AUTOPATCH_MEMORY_APPROVAL": "Review"})
    assert out["approval"] == "review"
    rc, found, _ = invoke_cli("memory", "search", "indentation", json=True, env={"AUTOPATCH_MEMORY_APPROVAL": "review"})
    assert (rc, found) == (0, {"results": [], "next": None})
    rc, found, _ = invoke_cli("memory", "search", "indentation", json=True)
    assert {r["id"] for r in found["results"]} == {second, revised}
    invoke_cli("memory", "review", "keep", revised)
    rc, found, _ = invoke_cli("memory", "search", "indentation", json=True, env={"AUTOPATCH_MEMORY_APPROVAL": "review"})
    assert [r["id"] for r in found["results"]] == [revised]
    rc, _, err = invoke_cli("memory", "review", env={"AUTOPATCH_MEMORY_APPROVAL": "sometimes"})
    assert rc == 1 and "memory_approval" in err


def test_audit_json_has_the_exact_shape(invoke_cli, seeded) -> None:
    second, revised, _ = seeded
    rc, out, err = invoke_cli("memory", "audit", json=True)
    assert rc == 0, err
    assert set(out) == {"checked", "duplicates", "conflicts", "stale_paths", "stale_claims", "reader_disagreements",
                        "next"}
    assert out["next"] is None and out["checked"] == 2
    assert out["duplicates"] == []
    assert [sorted(c["ids"]) for c in out["conflicts"]] == [sorted([second, revised])]
    assert all(set(c) == {"ids", "why"} for c in out["conflicts"])
    assert out["stale_paths"] == [{"id": second, "paths": ["Makefile"]}]
    assert out["stale_claims"] == []  # contracts §8 (added 2026-12-07); nothing here names a checkable claim
    rc, text, _ = invoke_cli("memory", "audit")
    assert rc == 0 and "1 conflict(s)" in text and "stale:" in text


def test_review_and_audit_read_a_read_only_store_but_keep_refuses(invoke_cli, seeded, repo: Path) -> None:
    state = repo / ".autopatch-j"
    for p in state.iterdir():
        os.chmod(p, stat.S_IRUSR)
    os.chmod(state, stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(state, os.W_OK):
            pytest.skip("running as a user who can write anything")
        assert invoke_cli("memory", "review", json=True)[0] == 0
        assert invoke_cli("memory", "audit", json=True)[0] == 0
        rc, _, err = invoke_cli("memory", "review", "keep", seeded[0])
        assert rc == 3, err
    finally:
        os.chmod(state, stat.S_IRWXU)
        for p in state.iterdir():
            os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)


def test_store_text_never_reaches_the_terminal_raw(invoke_cli, repo: Path, settings: Settings) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        add_item(mgr.store.conn(), subject="evil\x1b]0;pwned\x07", statement="Use \x1b[31mred\x1b[0m text\u202e")
    finally:
        mgr.close()
    for cmd in (["memory", "review"], ["memory", "audit"]):
        rc, text, _ = invoke_cli(*cmd)
        assert rc == 0 and "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    rc, out, _ = invoke_cli("memory", "review", json=True)
    assert "\x1b[31m" in out["items"][0]["statement"]  # JSON keeps the data exact (it is escaped by JSON)
    assert json.dumps(out)  # one document


def test_ids_from_the_store_never_reach_the_terminal_raw(invoke_cli, repo: Path, settings: Settings) -> None:
    """Review v21 #5: an item ID is store text like any other (a merged or hand-edited store can
    hold anything); every line that names one escapes it, errors included."""
    evil = "mem-X\x1b]0;owned\x07\x1b[2J"
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        add_item(conn, subject="colour", statement="Use colour output.", logical_id=evil, applies_to_paths=["gone/"])
        add_item(conn, subject="colours", statement="Never use colour output.")
    finally:
        mgr.close()
    outputs = []
    for cmd in (["memory", "review"], ["memory", "audit"], ["memory", "review", "keep", "mem-X@7"],
                ["memory", "review", "keep", "mem-X"]):
        rc, text, err = invoke_cli(*cmd)
        outputs.append((cmd, rc, text + err))
    for cmd, rc, text in outputs:
        assert "mem-X" in text and "\\x1b" in text, (cmd, text)
        assert "\x1b" not in text and "\x07" not in text, (cmd, text)
    assert [rc for _, rc, _ in outputs] == [0, 0, 1, 0]


def test_keep_id_at_rev_keeps_only_the_revision_that_was_read(invoke_cli, seeded, repo: Path) -> None:
    """Review v21 #6: `keep ID@REV` refuses an item revised since it was listed (and says how to go
    on); `keep ID@REV` of the current revision keeps it; a bad @REV is a usage error."""
    second, revised, _ = seeded
    rc, out, err = invoke_cli("memory", "review", "keep", f"{revised}@1", json=True)  # it is at revision 2
    assert rc == 1 and _marks(repo) is None
    assert "revision 2, not revision 1" in err and f"memory review keep {revised}@2" in err and "nothing was marked" in err
    rc, out, err = invoke_cli("memory", "review", "keep", f"{second}@1", f"{revised[:-3]}@1", json=True)
    assert rc == 1 and _marks(repo) is None  # one stale revision: nothing marked, by prefix too
    rc, out, err = invoke_cli("memory", "review", "keep", f"{second}@1", f"{revised[:-3]}@2", json=True)
    assert (rc, out) == (0, {"kept": [second, revised]}), err
    for bad in (f"{second}@", f"{second}@x", f"{second}@0", f"{second}@-1", "@1"):
        rc, _, err = invoke_cli("memory", "review", "keep", bad)
        assert rc == 2 and "Traceback" not in err, (bad, err)
    rc, _, err = invoke_cli("memory", "review", "keep", f"{second}@1", f"{second}@2")
    assert rc == 2 and "two revisions" in err


@pytest.mark.parametrize("where", ["before", "after"])
def test_json_works_before_and_after_keep(invoke_cli, seeded, where: str) -> None:
    second, _, _ = seeded
    args = ["memory", "review", "--json", "keep", second] if where == "before" else \
        ["memory", "review", "keep", second, "--json"]
    rc, out, err = invoke_cli(*args)
    assert rc == 0, err
    assert json.loads(out) == {"kept": [second]}


def test_an_audit_that_stopped_early_says_so(invoke_cli, repo: Path, settings: Settings, monkeypatch) -> None:
    from autopatch_tui.core.memory import audit

    mgr = MemoryManager.open(repo, settings)
    try:
        for n in range(8):  # 28 pairs of different decisions on one subject, each anywhere
            add_item(mgr.store.conn(), kind="project_decision", subject="release day", statement=f"Release on day {n}",
                     applies_to_paths=[f"*.ext{n}"])
    finally:
        mgr.close()
    rc, out, _ = invoke_cli("memory", "audit", json=True)
    assert rc == 0 and "truncated" not in out and len(out["conflicts"]) == 28
    monkeypatch.setattr(audit, "MAX_PAIR_CHECKS", 10)
    rc, out, _ = invoke_cli("memory", "audit", json=True)
    assert rc == 0 and out["truncated"] is True and len(out["conflicts"]) <= 10
    rc, text, _ = invoke_cli("memory", "audit")
    assert rc == 0 and "stopped after 10 pairs" in text
