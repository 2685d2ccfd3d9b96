"""`memory list` and `memory review` in pages (issue 33): `--limit N --after CURSOR`, `"next"` in
`--json`, a page and how many more in human output, and cursors that stay right while other
processes write between two pages — an entry that exists before and after is shown exactly once,
never twice and never lost. `--json` without `--limit` prints everything, as one document."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.memory_factory import add_item


def seed(repo: Path, settings: Settings, n: int) -> list[str]:
    """`n` active items, created one second apart; their logical IDs, oldest first."""
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        return [add_item(conn, subject=f"rule {i}", statement=f"Rule number {i}.", now=1_800_000_000.0 + i).logical_id
                for i in range(n)]
    finally:
        mgr.close()


def pages(invoke_cli, command: list[str], limit: int, between=None,
          entries=lambda doc: doc["items"]) -> list[list]:
    """Every page of `command --limit N --json` (its `entries`), following "next"; `between(n)`
    runs after page n."""
    out_pages: list[list] = []
    after: list[str] = []
    while True:
        rc, doc, err = invoke_cli(*command, "--limit", str(limit), *after, json=True)
        assert rc == 0, err
        out_pages.append(entries(doc))
        assert len(out_pages[-1]) <= limit
        if doc["next"] is None:
            return out_pages
        assert out_pages[-1], "a page with a next cursor is never empty"
        if between is not None:
            between(len(out_pages))
        after = ["--after", doc["next"]]


def test_list_pages_cover_every_item_once_newest_created_first(repo: Path, settings: Settings, invoke_cli) -> None:
    ids = seed(repo, settings, 23)
    got = pages(invoke_cli, ["memory", "list"], 5)
    assert [len(p) for p in got] == [5, 5, 5, 5, 3]
    assert [i["id"] for p in got for i in p] == sorted(ids, reverse=True)  # ULIDs: creation time first
    assert all(i["review"] == "new" for p in got for i in p)
    rc, doc, _ = invoke_cli("memory", "list", "--limit", "23", json=True)
    assert rc == 0 and doc["next"] is None and len(doc["items"]) == 23  # an exact fit has no next page


def test_list_pages_stay_right_while_items_are_revised_added_and_forgotten(
        repo: Path, settings: Settings, invoke_cli) -> None:
    """A careless cursor (a position, or the unpaged newest-updated order) repeats or loses the
    items revised between two pages."""
    ids = seed(repo, settings, 20)  # pages of 6, newest first: ids[19..14], ids[13..8], ...
    forgotten = ids[3]

    def write(page: int) -> None:
        if page != 1:
            return
        mgr = MemoryManager.open(repo, settings)
        try:
            conn = mgr.store.conn()
            for shown, unseen in ((ids[18], ids[5]),):  # one already shown, one not yet
                for logical in (shown, unseen):
                    add_item(conn, subject=f"rule {ids.index(logical)}", statement="Revised.",
                             logical_id=logical, revision=2, now=1_900_000_000.0)
            add_item(conn, subject="brand new", statement="Added meanwhile.", now=1_900_000_001.0)
            mgr.forget(forgotten)
        finally:
            mgr.close()

    got = [i["id"] for p in pages(invoke_cli, ["memory", "list"], 6, between=write) for i in p]
    assert len(got) == len(set(got)), "an item shown twice"
    assert set(ids) - {forgotten} <= set(got), "an item lost"
    assert forgotten not in got


def test_review_pages_are_oldest_first_and_keep_their_place_while_the_inbox_changes(
        repo: Path, settings: Settings, invoke_cli) -> None:
    ids = seed(repo, settings, 12)

    def write(page: int) -> None:
        if page == 1:  # keep one item not shown yet, revise one shown
            rc, _, err = invoke_cli("memory", "review", "keep", ids[7], json=True)
            assert rc == 0, err
            mgr = MemoryManager.open(repo, settings)
            try:
                add_item(mgr.store.conn(), subject="rule 1", statement="Revised.", logical_id=ids[1], revision=2,
                         now=1_900_000_000.0)
            finally:
                mgr.close()

    got = pages(invoke_cli, ["memory", "review"], 4, between=write)
    seen = [(i["id"], i["revision"]) for p in got for i in p]
    assert seen[:4] == [(ids[n], 1) for n in range(4)]
    assert len(seen) == len(set(seen)), "a revision shown twice"
    assert {i for i, _ in seen} == set(ids) - {ids[7]}  # the kept one left, nothing else was lost
    assert seen[-1] == (ids[1], 2)  # the revision made meanwhile comes last, to be read


def test_human_output_shows_one_page_and_how_to_get_the_next(repo: Path, settings: Settings, invoke_cli) -> None:
    ids = sorted(seed(repo, settings, 60))  # the page order: by ID, newest first
    rc, out, err = invoke_cli("memory", "list")
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 51 and ids[-1] in lines[0] and ids[10] in lines[49]
    assert lines[-1] == f"... 10 more: `memory list --after {ids[10]}`"
    rc, out, _ = invoke_cli("memory", "list", "--after", ids[10])
    assert rc == 0 and len(out.splitlines()) == 10 and "more" not in out

    rc, out, _ = invoke_cli("memory", "review", "--limit", "7")
    assert rc == 0
    assert out.splitlines()[0].startswith("60 items awaiting review, oldest first")
    assert "... 53 more: `memory review --after r" in out
    assert "also those not shown" in out  # keep --all keeps more than this page


@pytest.mark.parametrize("args", [["memory", "list", "--limit", "0"], ["memory", "list", "--limit", "x"],
                                  ["memory", "list", "--limit", "10001"], ["memory", "review", "--after", "42"],
                                  ["memory", "review", "--after", "rx"], ["memory", "list", "--after", "\x1b[2J"],
                                  ["memory", "list", "--after", "m" * 300], ["memory", "audit", "--after", "x"],
                                  ["memory", "audit", "--after", "stale_paths.%%%"],
                                  ["memory", "audit", "--after", "stale_paths." + "QQ" * 3000]])
def test_a_bad_limit_or_cursor_is_a_usage_error_in_one_json_document(repo: Path, invoke_cli, args) -> None:
    rc, doc, err = invoke_cli(*args, json=True)
    assert rc == 2 and doc["error"]["code"] == 2
    assert "\x1b" not in err and "m" * 100 not in err


def test_json_without_limit_is_every_item_in_one_document(repo: Path, settings: Settings, invoke_cli) -> None:
    """Streamed entry by entry, still exactly one JSON document, in the unpaged order."""
    ids = seed(repo, settings, 30)
    rc, doc, _ = invoke_cli("memory", "list", json=True)
    assert rc == 0 and doc["next"] is None
    assert [i["id"] for i in doc["items"]] == list(reversed(ids))  # most recently updated first
    rc, doc, _ = invoke_cli("memory", "review", json=True)
    assert rc == 0 and doc["next"] is None and doc["approval"] == "auto"
    assert [i["id"] for i in doc["items"]] == ids


def test_audit_pages_cover_every_finding_once_across_sections(repo: Path, settings: Settings, invoke_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        stale = [add_item(conn, subject=f"module {i}", statement=f"Module {i} stays small.",
                          applies_to_paths=[f"gone/m{i}.py"]).logical_id for i in range(7)]
        for i in range(3):  # one subject, three scopes (that exist): one duplicate group
            (repo / f"pkg{i}").mkdir()
            (repo / f"pkg{i}" / "a.py").write_text("")
            add_item(conn, subject="naming", statement=f"Names in package {i} are short.",
                     applies_to_paths=[f"pkg{i}/**"])
    finally:
        mgr.close()
    def findings(doc: dict) -> list[tuple[str, tuple[str, ...]]]:
        return [("duplicates", tuple(f["ids"])) for f in doc["duplicates"]] + \
               [("stale_paths", (f["id"],)) for f in doc["stale_paths"]]

    rc, whole, _ = invoke_cli("memory", "audit", json=True)
    assert rc == 0 and whole["next"] is None
    assert len(whole["stale_paths"]) == 7 and len(whole["duplicates"]) == 1

    def forget_one(page: int) -> None:
        if page == 1:
            rc, _, err = invoke_cli("memory", "forget", stale[-1])
            assert rc == 0, err

    got = [f for page in pages(invoke_cli, ["memory", "audit"], 3, between=forget_one, entries=findings)
           for f in page]
    assert len(got) == len(set(got)), "a finding shown twice"
    assert set(got) == set(findings(whole)) - {("stale_paths", (stale[-1],))}
    assert got[0][0] == "duplicates"  # section after section
    rc, out, _ = invoke_cli("memory", "audit", "--limit", "2")
    assert rc == 0 and out.splitlines()[-1].startswith("... 5 more: `memory audit --after stale_paths.")


def test_search_pages_follow_the_ranking_and_go_on_when_the_cursor_item_is_gone(
        repo: Path, settings: Settings, invoke_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        for i in range(6):
            add_item(conn, subject=f"retry policy {i}", statement=f"Retries back off, variant {i}.",
                     keywords=["retry"])
    finally:
        mgr.close()
    rc, whole, _ = invoke_cli("memory", "search", "retry", json=True)
    assert rc == 0 and whole["next"] is None and len(whole["results"]) == 6
    ranked = [r["id"] for r in whole["results"]]
    got = [r["id"] for p in pages(invoke_cli, ["memory", "search", "retry"], 4, entries=lambda d: d["results"])
           for r in p]
    assert got == ranked
    rc, first, _ = invoke_cli("memory", "search", "retry", "--limit", "2", json=True)
    assert first["next"] == f"2.{ranked[1]}"
    rc, _, err = invoke_cli("memory", "forget", ranked[1])
    assert rc == 0, err
    rc, second, _ = invoke_cli("memory", "search", "retry", "--limit", "2", "--after", first["next"], json=True)
    assert rc == 0 and [r["id"] for r in second["results"]] == ranked[2:4]  # after the first two, not one lost
