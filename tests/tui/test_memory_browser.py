"""The Memory browser (issue 5 §4) and the confirmation dialog: filters by kind and status, the
search box's recall against `autopatch-tui memory search --json`, the detail pane (fields, the
revision chain, each provenance quote inside its source turn), markup-looking text shown literally,
forget behind a confirmation, export, a degraded store cleared behind a confirmation, the jump to
the history, and snapshots (empty, populated, degraded) at 120×40 with fixed data and theme."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Button, DataTable, Input

from autopatch_tui.core.ids import new_id
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.item_writes import insert_revision, link_candidates, retire_revision
from autopatch_tui.core.memory.items import ItemFields, bump_data_version
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall.cli_search import search_memory
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen, SourceList, locate_quote, quote_in_turn
from autopatch_tui.tui.services import Services
from tests.support.fixtures import FakeClock, db_path, write_old_store
from tests.support.tui_wait import click, poll
from tests.support.tui_text import plain
from tests.tui.layouts import with_sizes

pytestmark = pytest.mark.anyio  # async Pilot tests run on asyncio through anyio's pytest plugin

SIZE = (120, 40)
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
MARKUP_STATEMENT = "Never write [bold red]markup[/] or [link=https://x.test]links[/link] here"


# --------------------------------------------------------------------------- data


def mb_seed(mgr: MemoryManager, *, logical_id: str, subject: str, statement: str, kind: str = "project_decision",
            content: str = "", strength: str = "hard", origin: str = "explicit", recall_mode: str = "on_match",
            paths: Sequence[str] = (), aliases: Sequence[str] = (), keywords: Sequence[str] = (),
            sources: Sequence[tuple[str, str, str]] = (), now: float = T0, revision: int = 1) -> int:
    """One active item revision (superseding the active revision of `logical_id` when `revision` > 1)
    through the Store's own writer, with an accepted candidate and its provenance. Returns the row ID."""
    conn = mgr.store.conn()
    with write_txn(conn):
        thread_id = None
        if kind == "discussion_context":
            thread_id = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
        if revision > 1:
            old = conn.execute("SELECT row_id FROM memory_items WHERE logical_id = ? AND status = 'active'",
                               (logical_id,)).fetchone()
            retire_revision(conn, old[0], status="superseded", replaced_by=None, now=now)
        f = ItemFields(kind=kind, subject=subject, statement=statement, content=content, strength=strength,
                       origin=origin, recall_mode=recall_mode, applies_to_paths=tuple(paths),
                       aliases=tuple(aliases), keywords=tuple(keywords), thread_id=thread_id)
        row_id, _ = insert_revision(conn, f, logical_id=logical_id, revision=revision, now=now)
        if sources:
            cand = new_id("cand")
            conn.execute(
                "INSERT INTO memory_candidates (id, thread_id, status, kind, subject, statement, content, strength,"
                " origin, recall_mode, applies_to_paths, aliases, keywords, created_at)"
                " VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cand, thread_id, kind, subject, statement, content, strength, origin, recall_mode,
                 json.dumps(list(paths)), json.dumps(list(aliases)), json.dumps(list(keywords)), now),
            )
            conn.executemany(
                "INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote) VALUES (?, ?, ?, ?, ?)",
                [(cand, n, t, role, q) for n, (t, role, q) in enumerate(sources)],
            )
            link_candidates(conn, row_id, [cand])
        bump_data_version(conn)
    return row_id


def mb_supersede(mgr: MemoryManager, logical_id: str, *, by: str, now: float) -> None:
    """The item's active revision becomes superseded (replaced by another item), with no newer revision."""
    conn = mgr.store.conn()
    with write_txn(conn):
        row = conn.execute("SELECT row_id FROM memory_items WHERE logical_id = ? AND status = 'active'",
                           (logical_id,)).fetchone()
        retire_revision(conn, row[0], status="superseded", replaced_by=by, now=now)
        bump_data_version(conn)


def mb_turn(mgr: MemoryManager, clock: FakeClock, user: str, answer: str) -> str:
    clock.advance(60)
    handle = mgr.begin_turn(user)
    clock.advance(5)
    mgr.complete_turn(handle, answer)
    return handle.turn_id


def mb_populate(mgr: MemoryManager, clock: FakeClock) -> dict[str, Any]:
    """A small, fixed Memory: every kind, every status, a revision chain, provenance in real turns."""
    t1 = mb_turn(mgr, clock, "From now on, always use tabs for indentation in the parser module, please.",
                 "Understood: tabs for indentation in the parser module.")
    t2 = mb_turn(mgr, clock, "We decided that the cache lives in Redis, not in memcached.",
                 "Noted. The cache backend is Redis; memcached is out.")
    t3 = mb_turn(mgr, clock, "Actually, make it Redis with a 5 minute TTL for every cache entry.",
                 "OK: Redis, and every entry expires after 5 minutes.")
    mb_seed(mgr, logical_id="mem-01PREFTABS", kind="user_preference", subject="indentation style",
            statement="Use tabs for indentation in the parser module.", content="Tabs, not spaces, in parser/.",
            strength="soft", origin="explicit", recall_mode="always", paths=["parser/"],
            aliases=["tabs vs spaces"], keywords=["indentation", "tabs"],
            sources=[(t1, "user", "always use tabs for indentation in the parser module")], now=T0 + 100)
    mb_seed(mgr, logical_id="mem-02CACHE", kind="project_decision", subject="cache backend",
            statement="The cache lives in Redis.", content="Memcached was rejected.",
            aliases=["caching"], keywords=["redis", "cache"],
            sources=[(t2, "user", "the cache lives in Redis, not in memcached")], now=T0 + 200)
    mb_seed(mgr, logical_id="mem-02CACHE", kind="project_decision", subject="cache backend",
            statement="The cache lives in Redis with a 5 minute TTL.",
            content="Every cache entry expires after 5 minutes. Memcached was rejected.",
            aliases=["caching"], keywords=["redis", "cache", "ttl"],
            sources=[(t2, "user", "the cache lives in Redis, not in memcached"),
                     (t3, "assistant", "every entry expires after 5 minutes")], now=T0 + 300, revision=2)
    mb_seed(mgr, logical_id="mem-03DISCUSS", kind="discussion_context", subject="parser rewrite",
            statement="We are discussing a rewrite of the parser around a Pratt loop.",
            keywords=["parser", "pratt"], now=T0 + 400)
    mb_seed(mgr, logical_id="mem-04OLDLINT", kind="project_decision", subject="linter",
            statement="Lint with flake8.", keywords=["flake8", "lint"], now=T0 + 500)
    mb_seed(mgr, logical_id="mem-05RUFF", kind="project_decision", subject="python linter",
            statement="Lint with ruff.", keywords=["ruff", "lint"], now=T0 + 600)
    mb_supersede(mgr, "mem-04OLDLINT", by="mem-05RUFF", now=T0 + 600)
    mb_seed(mgr, logical_id="mem-06GONE", kind="user_preference", subject="emoji",
            statement="Answers may use emoji.", keywords=["emoji"], now=T0 + 700)
    clock.set(T0 + 800)
    mgr.forget("mem-06GONE")
    mb_seed(mgr, logical_id="mem-07MARKUP", kind="user_preference", subject="[b]formatting[/b]",
            statement=MARKUP_STATEMENT, content="[red]content[/red] stays literal", keywords=["formatting"],
            now=T0 + 900)
    return {"t1": t1, "t2": t2, "t3": t3}


@pytest.fixture
def mb_clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def mb_manager(repo: Path, settings: Settings, mb_clock: FakeClock) -> MemoryManager:
    """A manager on a fixed clock; the app closes it when it unmounts."""
    return MemoryManager.open(repo, settings, clock=mb_clock)


class _RecordingApp(AutopatchApp):
    """Keeps every notification's text (toasts expire, and a loaded machine can be slower than that)."""

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.notified: list[str] = []

    def notify(self, message: str, **kwargs: Any) -> None:  # type: ignore[override]
        self.notified.append(message)
        super().notify(message, **kwargs)


def mb_app(mgr: MemoryManager, settings: Settings) -> _RecordingApp:
    return _RecordingApp(Services(mgr, settings, clock=mgr.clock))


def mb_write_v3(repo: Path) -> None:
    write_old_store(repo, "CREATE TABLE turns (id TEXT PRIMARY KEY, user_text TEXT, provider_error TEXT)",
                    "INSERT INTO turns VALUES ('t1', 'hello', 'SECRET-BODY')")


# --------------------------------------------------------------------------- pilot helpers


async def settle(pilot: Pilot, rounds: int = 4) -> None:
    """Let every thread worker finish and its results land on the UI thread."""
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def open_browser(pilot: Pilot, view: str = "items") -> MemoryBrowserScreen:
    """F4, then the view these tests are about (the browser opens on "To review" while items await
    review: tests/tui/test_review_inbox.py covers that)."""
    await settle(pilot)
    await pilot.press("f4")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, MemoryBrowserScreen)
    if screen.view != view:
        screen.show_view(view)
        await settle(pilot)
    return screen


def row_ids(screen: MemoryBrowserScreen) -> list[str]:
    table = screen.query_one("#mb-items", DataTable)
    return [str(k.value) for k in table.rows]



async def choose(pilot: Pilot, screen: MemoryBrowserScreen, item_id: str) -> None:
    """Select an item in the list, with focus in the list (the browser opens in its search field;
    the list's letter keys act once the list has focus, as after ↓)."""
    table = screen.query_one("#mb-items", DataTable)
    table.focus()
    table.move_cursor(row=row_ids(screen).index(item_id))
    await settle(pilot)
    assert screen.detail is not None and screen.detail.id == item_id


async def set_filter(pilot: Pilot, screen: MemoryBrowserScreen, *, kind: str | None = None,
                     status: str | None = None) -> None:
    from textual.widgets import Select

    if kind is not None:
        screen.query_one("#mb-kind", Select).value = kind
    if status is not None:
        screen.query_one("#mb-status", Select).value = status
    await settle(pilot)


async def search(pilot: Pilot, screen: MemoryBrowserScreen, query: str) -> None:
    box = screen.query_one("#mb-search", Input)
    if screen.app.focused is not box:
        await pilot.press("slash")
    assert screen.app.focused is box
    box.value = query
    await pilot.press("enter")
    await settle(pilot)


# --------------------------------------------------------------------------- pure helpers


def test_quote_is_located_exactly_or_across_whitespace_and_case() -> None:
    assert locate_quote("say Hello  World now", "Hello  World") == (4, 16)
    assert locate_quote("say Hello \n world now", "hello world") == (4, 17)
    assert locate_quote("nothing here", "absent quote") is None
    assert locate_quote("anything", "   ") is None


def test_quote_is_a_style_span_inside_a_window_of_a_long_turn() -> None:
    turn = "a" * 1000 + " [b]QUOTE[/b] " + "z" * 1000
    text, found = quote_in_turn(turn, "[b]QUOTE[/b]", "reverse", context=20)
    assert found
    assert text.plain.startswith("… ") and text.plain.endswith(" …")
    [span] = text.spans
    assert text.plain[span.start:span.end] == "[b]QUOTE[/b]" and span.style == "reverse"
    text, found = quote_in_turn("short turn", "missing", "reverse")
    assert not found and text.plain == "short turn" and not text.spans


# --------------------------------------------------------------------------- the confirmation dialog


@pytest.mark.parametrize("keys, expected", [(("y",), True), (("n",), False), (("escape",), False),
                                            (("enter",), False), (("tab", "enter"), True)])
async def test_confirm_dialog_answers(keys: tuple[str, ...], expected: bool, mb_manager: MemoryManager,
                                      settings: Settings) -> None:
    app = mb_app(mb_manager, settings)
    answers: list[bool | None] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(ConfirmScreen("Really?", "[bold]body[/bold] stays literal", "Do it"), callback=answers.append)
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert plain(dialog, "#body") == "[bold]body[/bold] stays literal"
        assert "Do it" in str(dialog.query_one("#yes", Button).label)
        for key in keys:  # No has the focus first: a stray Enter never confirms
            await pilot.press(key)
        await pilot.pause()
        assert answers == [expected]
        assert not isinstance(app.screen, ConfirmScreen)


# --------------------------------------------------------------------------- filters


async def test_memory_browser_filters_by_kind_and_status(mb_manager: MemoryManager, mb_clock: FakeClock,
                                                         settings: Settings) -> None:
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        # active, newest first, every kind
        assert row_ids(screen) == ["mem-07MARKUP", "mem-05RUFF", "mem-03DISCUSS", "mem-02CACHE", "mem-01PREFTABS"]
        assert "5 active items" in plain(screen, "#mb-summary")
        await set_filter(pilot, screen, kind="user_preference")
        assert row_ids(screen) == ["mem-07MARKUP", "mem-01PREFTABS"]
        await set_filter(pilot, screen, kind="project_decision")
        assert row_ids(screen) == ["mem-05RUFF", "mem-02CACHE"]
        await set_filter(pilot, screen, kind="discussion_context")
        assert row_ids(screen) == ["mem-03DISCUSS"]
        await set_filter(pilot, screen, kind="all", status="superseded")
        # a revised item's old revision is not an item of its own: only the replaced item is listed
        assert row_ids(screen) == ["mem-04OLDLINT"]
        assert screen.detail is not None and screen.detail.status == "superseded"
        await set_filter(pilot, screen, status="forgotten")
        assert row_ids(screen) == ["mem-06GONE"]
        assert screen.detail is not None and screen.detail.status == "forgotten"
        assert screen.check_action("forget", ()) is None  # shown disabled: only an active item can be forgotten
        await set_filter(pilot, screen, kind="project_decision")
        assert row_ids(screen) == []
        assert "No forgotten decision Memory items." in plain(screen, "#mb-fields")
        # the keyboard cycles the filters (from the list: ↓ leaves the search field)
        await set_filter(pilot, screen, kind="all", status="active")
        screen.query_one("#mb-search", Input).focus()
        await pilot.press("down")
        assert screen.app.focused is screen.table
        await pilot.press("k")
        await settle(pilot)
        assert screen.kind == "user_preference" and row_ids(screen) == ["mem-07MARKUP", "mem-01PREFTABS"]
        await pilot.press("s")
        await settle(pilot)
        assert screen.status == "superseded" and row_ids(screen) == []


async def test_memory_browser_pages_lazily(mb_manager: MemoryManager, settings: Settings,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from autopatch_tui.tui.screens import memory_browser

    monkeypatch.setattr(memory_browser, "PAGE", 3)
    for n in range(7):
        mb_seed(mb_manager, logical_id=f"mem-P{n}", subject=f"subject {n}", statement=f"statement {n}",
                now=T0 + n)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        assert row_ids(screen) == ["mem-P6", "mem-P5", "mem-P4"] and screen.more
        assert "3+ active items" in plain(screen, "#mb-summary")
        for _ in range(6):
            await pilot.press("down")
            await settle(pilot)
        assert row_ids(screen) == [f"mem-P{n}" for n in range(6, -1, -1)] and not screen.more


# --------------------------------------------------------------------------- search


SEARCHES = ["redis cache", "tabs indentation", "lint", "parser pratt", "ttl", "nothing matches zebra"]


async def test_memory_browser_search_is_exactly_memory_search(mb_manager: MemoryManager, mb_clock: FakeClock,
                                                              settings: Settings, invoke_cli: Any) -> None:
    # the CLI runs in-process (`invoke_cli`, same results as `run_cli`): six interpreter start-ups
    # were 7 of this test's 9.5 s, and the process boundary is not what is compared here
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    shown: dict[str, list[tuple[str, str]]] = {}
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        for query in SEARCHES:
            await search(pilot, screen, query)
            assert screen.query_text == query
            shown[query] = [(r.id, r.match_type) for r in screen.rows]
            assert row_ids(screen) == [i for i, _ in shown[query]]
            assert f"Search {query!r}" in plain(screen, "#mb-summary")
        # an empty query returns to the filtered list
        await search(pilot, screen, "")
        assert screen.query_text == "" and len(row_ids(screen)) == 5
    assert shown["redis cache"], "the seeded data must give the comparison something to compare"
    assert not shown["nothing matches zebra"]
    for query in SEARCHES:
        rc, out, err = invoke_cli("memory", "search", query, json=True)
        assert rc == 0, err
        assert [(r["id"], r["match_type"]) for r in out["results"]] == shown[query], query


async def test_a_recall_limit_is_shown_not_raised(mb_manager: MemoryManager, mb_clock: FakeClock,
                                                  settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from autopatch_tui.core.recall.session import RecallLimitError
    from autopatch_tui.tui.screens import memory_browser

    def limited(*args: object, **kwargs: object) -> list[dict[str, str]]:
        raise RecallLimitError("the recall token budget of this request is used up")

    monkeypatch.setattr(memory_browser, "search_memory", limited)
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await search(pilot, screen, "redis")
        assert row_ids(screen)[0] == "__words__"  # nothing recalled; what contains the word still shows
        assert "token budget" in plain(screen, "#mb-summary")
        assert app.notified == [], "no worker error"


# --------------------------------------------------------------------------- detail


async def test_detail_pane_shows_fields_revisions_and_quotes_in_their_turns(
        mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings) -> None:
    turns = mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-02CACHE")
        fields = plain(screen, "#mb-fields")
        for expected in ("The cache lives in Redis with a 5 minute TTL.", "mem-02CACHE", "active (revision 2)",
                         "project_decision", "cache backend", "hard", "explicit", "on_match", "(whole project)",
                         "caching", "redis, cache, ttl", "Every cache entry expires after 5 minutes.",
                         "2027-01-15T08:05:00.000Z"):
            assert expected in fields, expected
        revisions = plain(screen, "#mb-revisions").splitlines()
        assert revisions[0].startswith("r1 superseded") and revisions[0].endswith("The cache lives in Redis.")
        assert revisions[1].startswith("r2 active") and revisions[1].endswith("with a 5 minute TTL.")
        sources = screen.query_one("#mb-sources", SourceList)
        assert sources.option_count == 2
        quote_style = sources.get_component_rich_style("sourcelist--quote")
        expected_quotes = [(turns["t2"], "user", "We decided that the cache lives in Redis, not in memcached.",
                            "the cache lives in Redis, not in memcached"),
                           (turns["t3"], "assistant", "OK: Redis, and every entry expires after 5 minutes.",
                            "every entry expires after 5 minutes")]
        for n, (turn_id, role, turn_text, quote) in enumerate(expected_quotes):
            prompt = sources.get_option_at_index(n).prompt
            assert isinstance(prompt, Text)
            head, _, body = prompt.plain.partition("\n")
            assert head.startswith(f"{role} · turn ") and "completed" in head
            assert body.rstrip("\n") == turn_text  # the whole source turn, not just the quote
            quoted = [prompt.plain[s.start:s.end] for s in prompt.spans if s.style == quote_style]
            assert quoted == [quote]
            assert screen.provenance[n].source.turn_id == turn_id
        # the preference: paths, aliases, soft/always; no provenance on the discussion
        await choose(pilot, screen, "mem-01PREFTABS")
        fields = plain(screen, "#mb-fields")
        for expected in ("user_preference", "soft", "always", "parser/", "tabs vs spaces", "indentation, tabs"):
            assert expected in fields, expected
        await choose(pilot, screen, "mem-03DISCUSS")
        assert "Thread" in plain(screen, "#mb-fields")
        assert plain(screen, "#mb-sources-title") == "Provenance: none recorded"
        assert screen.check_action("jump", ()) is None


async def test_markup_looking_item_text_is_shown_literally(mb_manager: MemoryManager, mb_clock: FakeClock,
                                                           settings: Settings) -> None:
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-07MARKUP")
        fields = plain(screen, "#mb-fields")
        assert MARKUP_STATEMENT in fields and "[b]formatting[/b]" in fields
        assert "[red]content[/red] stays literal" in fields
        table = screen.query_one("#mb-items", DataTable)
        cells = [c.plain for c in table.get_row("mem-07MARKUP")]
        assert "[b]formatting[/b]" in cells
        # the confirmation dialog quotes the statement literally too
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert MARKUP_STATEMENT in plain(app.screen, "#body")
        await pilot.press("n")
        await settle(pilot)


# --------------------------------------------------------------------------- forget, export


async def test_forget_asks_first_then_removes_the_item_from_list_and_recall(
        mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings) -> None:
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        assert [r["id"] for r in search_memory(mb_manager, "redis cache")] == ["mem-02CACHE"]
        await choose(pilot, screen, "mem-02CACHE")
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert app.screen is screen and "mem-02CACHE" in row_ids(screen)
        assert mb_manager.show_item("mem-02CACHE").status == "active"

        await pilot.press("f")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert "mem-02CACHE" not in row_ids(screen)
        assert mb_manager.show_item("mem-02CACHE").status == "forgotten"
        assert any("Forgot mem-02CACHE" in n for n in app.notified)
        await search(pilot, screen, "redis cache")
        assert row_ids(screen) == []
        assert search_memory(mb_manager, "redis cache") == []
        await search(pilot, screen, "")
        await set_filter(pilot, screen, status="forgotten")
        assert "mem-02CACHE" in row_ids(screen)
        await choose(pilot, screen, "mem-02CACHE")
        assert screen.detail is not None and screen.detail.status == "forgotten"
        # the raw turns stay, and so does the provenance of the forgotten item
        assert mb_manager.turn_info(screen.provenance[0].source.turn_id).user_text.startswith("We decided")


async def test_export_writes_a_snapshot_and_tells_where(mb_manager: MemoryManager, mb_clock: FakeClock,
                                                        settings: Settings) -> None:
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        await open_browser(pilot)
        await pilot.press("ctrl+s")  # a write needs a key that is not text
        await settle(pilot)
        files = sorted(mb_manager.paths.exports_dir.glob("*.json"))
        assert len(files) == 1
        snapshot = json.loads(files[0].read_text("utf-8"))
        assert "mem-02CACHE" in json.dumps(snapshot)
        assert any(str(files[0]) in n for n in app.notified)


# --------------------------------------------------------------------------- degraded


async def test_degraded_store_shows_the_diagnostic_and_clears_behind_a_confirmation(
        repo: Path, settings: Settings) -> None:
    mb_write_v3(repo)
    mgr = MemoryManager.open(repo, settings)
    assert not mgr.healthy
    app = mb_app(mgr, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        assert screen.healthy is False
        assert screen.query_one("#mb-degraded").display and not screen.query_one("#mb-switch").display
        diagnostic = plain(screen, "#mb-diagnostic")
        assert "schema version 3 is not supported" in diagnostic and "SECRET-BODY" not in diagnostic
        assert screen.check_action("clear", ()) is True and screen.check_action("forget", ()) is False
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        assert not mgr.healthy and screen.healthy is False
        await click(pilot, "#mb-clear")
        await poll(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot)
        assert mgr.healthy and screen.healthy is True
        assert screen.query_one("#mb-browser").display and not screen.query_one("#mb-degraded").display
        assert row_ids(screen) == [] and app.health == "healthy"
        assert screen.check_action("clear", ()) is False
    conn = sqlite3.connect(str(db_path(repo)))
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 4
    finally:
        conn.close()


# --------------------------------------------------------------------------- live reload, navigation


async def test_browser_follows_memory_changes(mb_manager: MemoryManager, mb_clock: FakeClock,
                                              settings: Settings) -> None:
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-02CACHE")
        await pilot.app.workers.wait_for_complete()
        mb_seed(mb_manager, logical_id="mem-99NEW", subject="new thing", statement="Something new.", now=T0 + 5000)
        app.memory_version += 1
        await settle(pilot)
        assert row_ids(screen)[0] == "mem-99NEW"
        assert screen.selected == "mem-02CACHE"  # the selection survives a reload


async def test_escape_goes_back_to_chat(mb_manager: MemoryManager, settings: Settings) -> None:
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        await open_browser(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.name == "chat"


class _HistoryStub(Screen):
    def __init__(self) -> None:
        super().__init__(name="history")
        self.shown: list[str] = []

    def show_turn(self, turn_id: str) -> None:
        self.shown.append(turn_id)


async def test_jump_opens_the_quote_turn_in_the_history(mb_manager: MemoryManager, mb_clock: FakeClock,
                                                        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    turns = mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    shown: list[str] = []
    try:
        from autopatch_tui.tui.screens.history import HistoryScreen
    except ImportError:  # the history screen is built separately; stand in for it by name
        from autopatch_tui.tui.screens import registry

        real = registry.build_screen
        monkeypatch.setattr(registry, "build_screen",
                            lambda name, services: _HistoryStub() if name == "history" else real(name, services))
    else:
        original = HistoryScreen.show_turn

        def spy(self: Any, turn_id: str) -> Any:
            shown.append(turn_id)
            return original(self, turn_id)

        monkeypatch.setattr(HistoryScreen, "show_turn", spy)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        await choose(pilot, screen, "mem-02CACHE")
        sources = screen.query_one("#mb-sources", SourceList)
        sources.highlighted = 1
        await pilot.press("j")
        await settle(pilot)
        assert app.screen.name == "history"
        if isinstance(app.screen, _HistoryStub):
            shown = app.screen.shown
        assert shown == [turns["t3"]]


# --------------------------------------------------------------------------- snapshots


def _snapshot_app(repo: Path, settings: Settings, state: str) -> AutopatchApp:  # a plain app: no test hooks
    if state == "degraded":
        mb_write_v3(repo)
    clock = FakeClock(T0)
    mgr = MemoryManager.open(repo, settings, clock=clock)
    if state == "populated":
        mb_populate(mgr, clock)
    return AutopatchApp(Services(mgr, settings, clock=clock))


@with_sizes(["empty", "populated", "degraded"], "populated", SIZE)
def test_memory_browser_snapshot(state: str, size: tuple[int, int], repo: Path, settings: Settings,
                                 snap_compare: Any) -> None:
    app = _snapshot_app(repo, settings, state)

    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        screen = await open_browser(pilot)
        for box in screen.query(Input):
            box.cursor_blink = False  # the search field has focus: a blinking cursor would depend on timing
        if state == "populated":
            await choose(pilot, screen, "mem-02CACHE")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


# --------------------------------------------------------------------------- keys respect focus


async def test_typing_on_after_enter_in_the_search_never_fires_letter_keys(mb_manager: MemoryManager,
                                                                           mb_clock: FakeClock,
                                                                           settings: Settings) -> None:
    """Issue 15: after Enter in the search box, typing "type hints" changed the status filter (s) and
    wrote an export (e). The field keeps focus; Down moves to the results, visibly."""
    mb_populate(mb_manager, mb_clock)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_browser(pilot)
        box = screen.query_one("#mb-search", Input)
        assert app.focused is box  # the browser opens in its search field
        await pilot.press(*"redis")
        await pilot.press("enter")
        await settle(pilot)
        assert app.focused is box and screen.query_text == "redis"
        await pilot.press(*" type hints")  # the words: `e` exported, `s` cycled the status
        await settle(pilot)
        assert box.value == "redis type hints"
        assert (screen.status, screen.kind) == ("active", "all")
        exports = mb_manager.paths.exports_dir
        assert not exports.exists() or not list(exports.iterdir()), "no export was written"
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("down")
        assert app.focused is screen.table


# --------------------------------------------------------------------------- first open (issue 14)


async def test_first_open_loads_the_selected_detail_with_the_list_and_composes_the_footer_once(
        mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Footer

    from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen as Browser

    mb_populate(mb_manager, mb_clock)
    mb_manager.review.keep_all()  # nothing awaits review: the browser opens on its Items view
    detail_trips: list[str] = []
    real_load_detail = Browser._load_detail
    monkeypatch.setattr(Browser, "_load_detail", lambda self, gen, item_id: (detail_trips.append(item_id),
                                                                            real_load_detail(self, gen, item_id)))
    recomposes: list[str] = []
    real_recompose = Footer.recompose

    async def counting(self: Footer) -> None:
        recomposes.append(self.screen.name or "")
        await real_recompose(self)

    monkeypatch.setattr(Footer, "recompose", counting)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        recomposes.clear()
        screen = await open_browser(pilot)
        first = row_ids(screen)[0]
        assert screen.selected == first and screen.detail is not None and screen.detail.id == first
        assert detail_trips == []  # came with the list: no second worker trip, no second layout
        assert not screen.query("#mb-degraded")  # the degraded view is built only for a degraded store
        assert recomposes.count("memory") == 1  # filled once; later binding refreshes change keys in place
        await choose(pilot, screen, row_ids(screen)[1])  # moving the cursor still loads that item's detail
        assert detail_trips == [row_ids(screen)[1]]
        chosen = row_ids(screen)[1]
        screen.reload()  # a reload keeps the selection, its detail again with the list
        await settle(pilot)
        assert screen.selected == chosen and screen.detail is not None and screen.detail.id == chosen
        assert detail_trips == [chosen]


async def test_a_first_detail_that_fails_to_load_does_not_hide_the_list(
        mb_manager: MemoryManager, mb_clock: FakeClock, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first item's detail comes with the list; when reading it fails (a damaged row), the list
    still shows and the detail is left to the ordinary per-row load."""
    from autopatch_tui.tui.screens.memory_browser import MemoryBrowserScreen as Browser

    mb_populate(mb_manager, mb_clock)

    def broken(self, item_id):  # type: ignore[no-untyped-def]
        raise ValueError("a damaged row")

    monkeypatch.setattr(Browser, "_detail_payload", broken)
    app = mb_app(mb_manager, settings)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_browser(pilot)
        assert len(row_ids(screen)) >= 2  # the rows are there
