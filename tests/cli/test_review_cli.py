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
    assert set(out) == {"approval", "items"} and out["approval"] == "auto"
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
    assert (rc, found) == (0, {"results": []})
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
    assert set(out) == {"checked", "duplicates", "conflicts", "stale_paths"} and out["checked"] == 2
    assert out["duplicates"] == []
    assert [sorted(c["ids"]) for c in out["conflicts"]] == [sorted([second, revised])]
    assert all(set(c) == {"ids", "why"} for c in out["conflicts"])
    assert out["stale_paths"] == [{"id": second, "paths": ["Makefile"]}]
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
