"""The store list and the merge dialog (issue 6 §6, Pilot tests of §7): every known store listed;
the scan runs in a worker with progress ("judged N of M") and can be cancelled; proposals show both
stores' labels, roots and fact counts, the confidence, the judge and the reason (literally, never
markup); a swap is keyed by the pair and survives merging another proposal; every Merge button is
disabled while a merge runs; after a merge the touched proposals vanish and the store list
refreshes; the no-model hint; the truncated notice; and snapshots at 120×40 with fixed data."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, ProgressBar, Static

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores import service as store_service_module
from autopatch_tui.core.stores.scan import Proposal, ScanResult
from autopatch_tui.core.stores.service import MergeError, StoreService
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.screens.confirm import ConfirmScreen
from autopatch_tui.tui.screens.merge_dialog import (
    NO_MODEL_HINT,
    TRUNCATED_NOTICE,
    MergeDialog,
    ProposalRow,
)
from autopatch_tui.tui.screens.stores import StoresScreen
from autopatch_tui.tui.services import Services
from tests.support.fixtures import DEFAULT_REMOTE, make_git_repo
from tests.support.llm_stub import CapturedRequest, Reply, StubLLMServer
from tests.support.pipeline_helpers import payload_of, seed_item, stub_settings
from tests.support.store_helpers import used
from tests.support.tui_wait import click, poll  # noqa: E402
from tests.support.tui_wait import settle as st_wait
from tests.support.tui_text import plain
from tests.tui.layouts import with_sizes

pytestmark = pytest.mark.anyio  # async Pilot tests run on asyncio through anyio's pytest plugin

SIZE = (120, 40)
MARKUP_REASON = "[bold]x[/bold] both describe the same parser"
NOT_SAME = {"same_project": False, "confidence": "low", "reason": "different projects"}


# --------------------------------------------------------------------------- data


def st_checkout(tmp_path: Path, settings: Settings, folder: str, remote: str | None, *, label: str | None = None,
                facts: int = 0) -> str:
    """A git checkout whose store is created, used (one turn: a store that holds nothing is never
    registered) and registered, with `facts` active items and an optional label. Returns the store name."""
    path = make_git_repo(tmp_path / folder, remote)
    mgr = used(MemoryManager.open(path, settings))
    try:
        for n in range(facts):
            seed_item(mgr, subject=f"{folder} topic {n}")
        name = mgr.store.identity.store_name
    finally:
        mgr.close()
    if label:
        StoreService(settings).set_label(name, label)
    return name


def st_app(repo: Path, settings: Settings) -> AutopatchApp:
    """The app on `repo`, whose store has been used (one turn), so it is a known store like the others."""
    used(MemoryManager.open(repo, settings)).close()
    return AutopatchApp(Services(MemoryManager.open(repo, settings), settings))


def judge_by_label(same: dict[frozenset[str], dict[str, Any]], *, delay: float = 0.0,
                   gate: threading.Event | None = None) -> Callable[[CapturedRequest], Reply]:
    """A `merge_judge` reply: the verdict for the pair of store labels in `same`, else NOT_SAME."""

    def reply(req: CapturedRequest) -> Reply:
        payload = payload_of(req)
        labels = frozenset(str(payload[k].get("label")) for k in ("a", "b"))
        verdict = same.get(labels, NOT_SAME)
        return Reply(content=json.dumps(verdict), delay=delay, wait_event=gate)

    return reply


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short folder for checkouts whose roots must fit on one line of a proposal."""
    folder = Path(tempfile.mkdtemp(prefix="st-")).resolve()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- pilot helpers




async def open_stores(pilot: Pilot) -> StoresScreen:
    await st_wait(pilot)
    await pilot.app.run_action("show('stores')")
    screen = pilot.app.screen
    assert isinstance(screen, StoresScreen)
    await st_wait(pilot, lambda: not screen.loading and screen.rows)
    return screen


async def open_dialog(pilot: Pilot, stores: StoresScreen) -> MergeDialog:
    await pilot.press("d")
    dialog = pilot.app.screen
    assert isinstance(dialog, MergeDialog)
    await st_wait(pilot, lambda: not dialog.scanning and dialog.result is not None)
    return dialog


def table_cells(table: DataTable, key: str) -> list[str]:
    return [c.plain if isinstance(c, Text) else str(c) for c in table.get_row(key)]



def shown(pilot: Pilot, widget: Widget) -> str:
    """The text the terminal shows inside `widget`'s region."""
    region = widget.region
    strips = pilot.app.screen._compositor.render_strips()
    return "\n".join(strips[y].crop(region.x, region.right).text for y in range(region.y, region.bottom))


def rows_by_pair(dialog: MergeDialog) -> dict[frozenset[str], ProposalRow]:
    return {r.pair: r for r in dialog.rows()}


def merge_buttons(dialog: MergeDialog) -> list[Button]:
    return list(dialog.query(".merge").results(Button))


async def merge_row(pilot: Pilot, dialog: MergeDialog, row: ProposalRow) -> None:
    """Press the row's Merge button and confirm."""
    await click(pilot, row.query_one(".merge", Button))
    await poll(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
    await pilot.press("y")
    await poll(pilot, lambda: pilot.app.screen is dialog)


def record_notifications(app: AutopatchApp) -> list[str]:
    """Every message passed to `notify` from now on (toasts expire; this list does not)."""
    seen: list[str] = []
    real = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> None:
        seen.append(str(message))
        real(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return seen


# --------------------------------------------------------------------------- the store list


async def test_store_list_shows_every_known_store(repo: Path, settings: Settings, tmp_path: Path) -> None:
    alpha = st_checkout(tmp_path, settings, "alpha", "https://git.test/acme/alpha.git", label="Alpha [b]app[/b]",
                        facts=2)
    old = st_checkout(tmp_path, settings, "old", "https://git.test/acme/beta.git")
    new = st_checkout(tmp_path, settings, "new", "https://git.test/acme/beta.git", facts=1)
    StoreService(settings).merge(old, new, organize=False)
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_stores(pilot)
        table = screen.query_one("#stores-table", DataTable)
        own = app.manager.store.identity.store_name
        assert {str(k.value) for k in table.rows} == {own, alpha, old, new}
        alpha_root = str((tmp_path / "alpha").resolve())
        cells = table_cells(table, alpha)
        assert cells[:2] + cells[3:] == [alpha, "Alpha [b]app[/b]", "2", "live"]
        assert cells[2] == alpha_root or (cells[2].startswith("…") and alpha_root.endswith(cells[2][1:]))
        assert table_cells(table, new)[3:] == ["1", "live"]
        assert table_cells(table, old)[4] == "retired"
        assert table_cells(table, own)[4] == "current"
        assert "Alpha [b]app[/b]" in shown(pilot, table)  # a label is never markup
        assert "4 known store(s): 3 live, 1 retired" in plain(screen, "#stores-summary")


async def test_store_list_opens_the_dialog_by_binding_and_button_and_escape_goes_back(
        repo: Path, settings: Settings) -> None:
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_stores(pilot)
        assert {b.id for b in screen.BINDINGS} >= {"stores.scan", "stores.back"}
        dialog = await open_dialog(pilot, screen)
        await pilot.press("escape")
        assert app.screen is screen
        await click(pilot, "#stores-scan")
        assert isinstance(app.screen, MergeDialog)
        await st_wait(pilot, lambda: not app.screen.scanning)
        await pilot.press("escape")
        await pilot.press("escape")
        assert app.screen.name == "chat"
        assert all(b.id for b in dialog.BINDINGS)
        assert {b.id for b in dialog.BINDINGS} >= {"merge.swap", "merge.merge", "merge.cancel", "merge.rescan"}


async def test_palette_command_opens_the_store_list(repo: Path, settings: Settings) -> None:
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await st_wait(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"Find duplicate stores")
        await pilot.pause(0.5)
        await pilot.press("enter")
        # the store list, with the scan running on top of it (issue 30 item 13)
        await st_wait(pilot, lambda: isinstance(app.screen, MergeDialog))
        assert isinstance(app.screen_stack[-2], StoresScreen)
        await st_wait(pilot, lambda: not app.screen.scanning)
        assert "Scan finished" in plain(app.screen, "#merge-status") or "no duplicate" in plain(
            app.screen, "#merge-status")


# --------------------------------------------------------------------------- scan: progress, cancel


async def test_scan_reports_progress_until_judged_m_of_m(repo: Path, tmp_path: Path, llm_stub: StubLLMServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    settings = stub_settings(llm_stub)
    for n in range(4):  # with the app's own store: 5 stores, 10 pairs, no shared remote
        st_checkout(tmp_path, settings, f"s{n}", f"https://git.test/acme/s{n}.git", label=f"S{n}")
    llm_stub.default("merge_judge", judge_by_label({}, delay=0.05))
    statuses: list[str] = []
    bars: list[tuple[float | None, float]] = []
    real_set_status = MergeDialog._set_status

    def set_status(self: MergeDialog, text: str) -> None:
        real_set_status(self, text)
        bar = self.query_one(ProgressBar)
        statuses.append(text)
        bars.append((bar.total, bar.progress))

    monkeypatch.setattr(MergeDialog, "_set_status", set_status)
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        stores = await open_stores(pilot)
        dialog = await open_dialog(pilot, stores)
        assert statuses[0] == "Reading the known stores…" and bars[0][0] is None  # indeterminate at first
        progress = [(s, b) for s, b in zip(statuses, bars) if s.startswith("Asking the model")]
        assert progress == [(f"Asking the model: judged {n} of 10 pairs", (10, n)) for n in range(1, 11)]
        bar = dialog.query_one(ProgressBar)
        assert "judged 10 of 10 pairs" in plain(dialog, "#merge-status")
        assert bar.total == 10 and bar.progress == 10 and bar.display
        assert len(llm_stub.requests_for("merge_judge")) == 10
        assert dialog.proposals == [] and "no duplicate stores found" in plain(dialog, "#merge-status")
        assert not dialog.query_one("#merge-hint").display
        assert stores.rows  # the store list underneath is untouched


async def test_cancel_stops_further_judging_and_keeps_partial_results(repo: Path, tmp_path: Path,
                                                                      llm_stub: StubLLMServer) -> None:
    settings = stub_settings(llm_stub)
    for n in range(6):  # 7 stores: 21 pairs, at most 4 calls at once
        st_checkout(tmp_path, settings, f"c{n}", f"https://git.test/acme/c{n}.git", label=f"C{n}")
    gate = threading.Event()
    llm_stub.default("merge_judge", judge_by_label({}, gate=gate))
    app = st_app(repo, settings)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await open_stores(pilot)
            await pilot.press("d")
            dialog = app.screen
            assert isinstance(dialog, MergeDialog)
            assert await asyncio.to_thread(llm_stub.wait_for_requests, 4, task="merge_judge")
            assert dialog.query_one("#merge-cancel-scan", Button).display
            await pilot.press("escape")  # cancels the scan; the dialog stays open
            assert dialog._cancel is not None and dialog._cancel.is_set()
            assert "Cancelling" in plain(dialog, "#merge-status")
            gate.set()
            await st_wait(pilot, lambda: not dialog.scanning)
            assert len(llm_stub.requests_for("merge_judge")) == 4
            assert "Scan cancelled after judging 4 of 21 pairs" in plain(dialog, "#merge-status")
            assert app.screen is dialog and not dialog.query_one("#merge-cancel-scan", Button).display
            await pilot.press("escape")
            assert isinstance(app.screen, StoresScreen)
    finally:
        gate.set()


# --------------------------------------------------------------------------- proposals


async def test_proposals_show_labels_roots_counts_confidence_judge_and_a_literal_reason(
        repo: Path, short_tmp: Path, llm_stub: StubLLMServer) -> None:
    tmp_path = short_tmp
    settings = stub_settings(llm_stub)
    p = st_checkout(tmp_path, settings, "parser", "https://git.test/acme/parser.git", label="Parser", facts=3)
    q = st_checkout(tmp_path, settings, "parser-copy", "https://git.test/other/parser-fork.git",
                    label="Parser copy", facts=1)
    r1 = st_checkout(tmp_path, settings, "web1", "https://git.test/acme/web.git", label="Web")
    r2 = st_checkout(tmp_path, settings, "web2", "git@git.test:acme/web.git", label="Web clone", facts=2)
    verdict = {"same_project": True, "confidence": "high", "reason": MARKUP_REASON}
    llm_stub.default("merge_judge", judge_by_label({frozenset({"Parser", "Parser copy"}): verdict}))
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(pilot, await open_stores(pilot))
        rows = rows_by_pair(dialog)
        assert set(rows) == {frozenset({p, q}), frozenset({r1, r2})}
        engine, remote = rows[frozenset({p, q})], rows[frozenset({r1, r2})]
        # the suggested target: readable root, then more facts
        assert (engine.source, engine.target) == (q, p)
        assert (remote.source, remote.target) == (r1, r2)
        text = shown(pilot, engine)
        # different remotes: the model's "high" is at most "low — review"; the judge named as the JSON's engine
        assert "confidence low" in text and "judged by model" in text and "judged by engine" not in text
        assert "low confidence — review: their origin remotes differ" in text
        assert "remote git.test/acme/parser" in text and "remote git.test/other/parser-fork" in text
        assert "Parser copy" in text and q in text and str(tmp_path / "parser-copy") in text and "1 facts" in text
        assert "Parser" in text and p in text and str(tmp_path / "parser") in text and "3 facts" in text
        reason = engine.query_one(".proposal-reason", Static).content
        assert isinstance(reason, Text) and MARKUP_REASON in reason.plain  # literal, never parsed as markup
        text = shown(pilot, remote)
        assert "confidence certain" in text and "judged by remote" in text and "Web clone" in text
        assert "2 facts" in text and "0 facts" in text
        assert not dialog.query_one("#merge-hint").display and not dialog.query_one("#merge-truncated").display


async def test_no_model_shows_the_deterministic_proposals_and_how_to_configure_one(
        repo: Path, settings: Settings, tmp_path: Path) -> None:
    a = st_checkout(tmp_path, settings, "a", "https://git.test/acme/a.git")
    b = st_checkout(tmp_path, settings, "b", "https://git.test/acme/a.git")
    st_checkout(tmp_path, settings, "c", "https://git.test/acme/c.git")
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_dialog(pilot, await open_stores(pilot))
        assert dialog.result is not None and dialog.result.engine == "no_model"
        assert set(rows_by_pair(dialog)) == {frozenset({a, b})}
        assert dialog.rows()[0].proposal.judged_by == "remote"
        hint = dialog.query_one("#merge-hint", Static)
        assert hint.display and plain(dialog, "#merge-hint") == NO_MODEL_HINT
        assert "AUTOPATCH_LLM_BASE_URL" in shown(pilot, hint) and "AUTOPATCH_LLM_MODEL" in shown(pilot, hint)
        assert not dialog.query_one(ProgressBar).display


def fixed_evidence(name: str, label: str | None, root: str | None, facts: int) -> dict[str, object]:
    return {"store": name, "label": label, "root": root, "remote": None, "fact_count": facts, "subjects": [],
            "sample_statements": []}


def fixed_proposal(a: tuple[str, str | None, str | None, int], b: tuple[str, str | None, str | None, int],
                   confidence: str = "high", judged_by: str = "engine", reason: str = "same code") -> Proposal:
    return Proposal(a[0], b[0], confidence, judged_by, reason, fixed_evidence(*a), fixed_evidence(*b))


class FixedStores:
    """A stand-in `StoreService` with fixed data (snapshots, dialog states)."""

    def __init__(self, rows: list[dict[str, object]], result: ScanResult) -> None:
        self.rows = rows
        self.result = result
        self.merged: list[tuple[str, str]] = []

    def stores(self) -> list[dict[str, object]]:
        return [dict(r) for r in self.rows]

    def scan(self, *, progress: Any = None, cancel: threading.Event | None = None) -> ScanResult:
        return self.result

    def merge(self, source: str, target: str, *, organize: bool = True) -> Any:
        self.merged.append((source, target))
        return store_service_module.MergeResult(target, 0, 0, False, False, [source], "skipped")


S1 = ("project-0AAAAAAAAAAAAAAAAAAAAAAAAA", "Shop API", "/home/dev/src/shop-api", 12)
S2 = ("project-0BBBBBBBBBBBBBBBBBBBBBBBBB", "shop-api (laptop)", "/home/dev/old/shop-api", 3)
S3 = ("project-0CCCCCCCCCCCCCCCCCCCCCCCCC", "Parser", "/home/dev/src/parser", 7)
S4 = ("project-0DDDDDDDDDDDDDDDDDDDDDDDDD", None, "/mnt/backup/parser", 0)
S5 = ("project-0EEEEEEEEEEEEEEEEEEEEEEEEE", "Docs site", "/home/dev/src/docs", 5)
S6 = ("project-0FFFFFFFFFFFFFFFFFFFFFFFFF", "docs [old]", None, 2)


def fixed_rows() -> list[dict[str, object]]:
    rows = [{"store": s[0], "label": s[1], "root": s[2], "remote": None, "fact_count": s[3], "retired": False}
            for s in (S1, S2, S3, S4, S5, S6)]
    rows.append({"store": "project-0GGGGGGGGGGGGGGGGGGGGGGGGG", "label": "Old notes", "root": "/home/dev/notes",
                 "remote": None, "fact_count": 4, "retired": True})
    return rows


def fixed_result(engine: str = "model", truncated: bool = True) -> ScanResult:
    proposals = [fixed_proposal(S2, S1, "certain", "remote", "both checkouts have the same origin remote")]
    if engine == "model":
        proposals += [fixed_proposal(S4, S3, "high", "engine", "Same parser subjects; [bold]x[/bold] is a copy."),
                      fixed_proposal(S6, S5, "medium", "engine", "Both store decisions about the docs build.")]
    return ScanResult(engine, truncated, proposals)


async def open_fixed(pilot: Pilot, service: FixedStores, result: ScanResult) -> tuple[StoresScreen, MergeDialog]:
    app = pilot.app
    await st_wait(pilot)
    stores = StoresScreen(app.services, store_service=service)  # type: ignore[arg-type]
    await app.push_screen(stores)
    await st_wait(pilot, lambda: stores.rows)
    dialog = stores.open_merge_dialog(result=result)
    await st_wait(pilot, lambda: dialog.is_mounted and dialog.result is not None)
    return stores, dialog


async def test_truncated_is_shown(repo: Path, settings: Settings) -> None:
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        _, dialog = await open_fixed(pilot, FixedStores(fixed_rows(), fixed_result()), fixed_result())
        notice = dialog.query_one("#merge-truncated", Static)
        assert notice.display and TRUNCATED_NOTICE in shown(pilot, notice)
        assert not dialog.query_one("#merge-hint").display
        await pilot.press("escape")
        _, dialog = await open_fixed(pilot, FixedStores(fixed_rows(), fixed_result()), fixed_result(truncated=False))
        assert not dialog.query_one("#merge-truncated").display


# --------------------------------------------------------------------------- swap and merge


async def test_swap_is_keyed_by_the_pair_and_survives_merging_another_proposal(
        repo: Path, settings: Settings, tmp_path: Path) -> None:
    pairs = []
    for letter in "abc":
        one = st_checkout(tmp_path, settings, f"{letter}1", f"https://git.test/acme/{letter}.git", facts=1)
        two = st_checkout(tmp_path, settings, f"{letter}2", f"https://git.test/acme/{letter}.git")
        pairs.append(frozenset({one, two}))
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        stores = await open_stores(pilot)
        dialog = await open_dialog(pilot, stores)
        rows = dialog.rows()
        assert {r.pair for r in rows} == set(pairs) and len(rows) == 3
        first, second, third = rows
        # swap the second with its button, then back and forth with the binding on the highlighted row
        await click(pilot, second.query_one(".swap", Button))
        assert dialog.highlighted == second.pair and second.swapped
        assert (second.source, second.target) == (second.proposal.target, second.proposal.source)
        assert "direction swapped" in shown(pilot, second)
        await pilot.press("s")
        assert not second.swapped
        await pilot.press("s")
        assert second.swapped and dialog.swapped == {second.pair}
        swapped_source = second.source
        merged_source, merged_target = first.source, first.target
        await merge_row(pilot, dialog, first)
        await st_wait(pilot, lambda: len(dialog.rows()) == 2 and dialog.merging is None)
        after = rows_by_pair(dialog)
        assert set(after) == {second.pair, third.pair}
        assert after[second.pair].swapped and after[second.pair].source == swapped_source
        assert not after[third.pair].swapped
        assert dialog.rows()[0].pair == second.pair  # the swapped pair is now the first row
        assert "merge  -" in shown(pilot, after[second.pair]) and swapped_source in shown(pilot, after[second.pair])
        # the store list refreshed: the merged source is retired
        await st_wait(pilot, lambda: any(r.store == merged_source and r.retired for r in stores.rows))
        table = stores.query_one("#stores-table", DataTable)
        assert table_cells(table, merged_source)[4] == "retired"
        assert table_cells(table, merged_target)[4] == "live"
        assert any(f"Merged {merged_source} into {merged_target}" in m and "organize: not run: no Memory model" in m
                   and "no_model" not in m for m in notes)  # user-facing words, not the status code


async def test_after_a_merge_every_proposal_touching_either_store_vanishes(
        repo: Path, settings: Settings, tmp_path: Path) -> None:
    a = [st_checkout(tmp_path, settings, f"a{n}", "https://git.test/acme/a.git", facts=n) for n in range(3)]
    b = [st_checkout(tmp_path, settings, f"b{n}", "https://git.test/acme/b.git") for n in range(2)]
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        stores = await open_stores(pilot)
        dialog = await open_dialog(pilot, stores)
        assert len(dialog.rows()) == 4  # three pairs among a0..a2, one b pair
        row = rows_by_pair(dialog)[frozenset({a[0], a[1]})]
        source, target = row.source, row.target
        await merge_row(pilot, dialog, row)
        await st_wait(pilot, lambda: dialog.merging is None and len(dialog.rows()) == 1)
        assert [r.pair for r in dialog.rows()] == [frozenset(b)]
        await st_wait(pilot, lambda: any(r.store == source and r.retired for r in stores.rows))
        assert not any(r.store == target and r.retired for r in stores.rows)
        assert "1 proposal(s)" in plain(dialog, "#merge-status")
        # a fresh scan proposes the living target with the third clone
        await pilot.press("r")
        await st_wait(pilot, lambda: not dialog.scanning)
        assert {r.pair for r in dialog.rows()} == {frozenset({target, a[2]}), frozenset(b)}


async def test_every_merge_button_is_disabled_while_a_merge_runs(repo: Path, settings: Settings, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    for letter in "ab":
        st_checkout(tmp_path, settings, f"{letter}1", f"https://git.test/acme/{letter}.git")
        st_checkout(tmp_path, settings, f"{letter}2", f"https://git.test/acme/{letter}.git")
    gate = threading.Event()
    calls: list[tuple[str, str]] = []
    real_merge = StoreService.merge

    def slow_merge(self: StoreService, source: str, target: str, **kw: Any) -> Any:
        calls.append((source, target))
        gate.wait(10)
        return real_merge(self, source, target, **kw)

    monkeypatch.setattr(StoreService, "merge", slow_merge)
    app = st_app(repo, settings)
    try:
        async with app.run_test(size=SIZE) as pilot:
            notes = record_notifications(app)
            dialog = await open_dialog(pilot, await open_stores(pilot))
            first, second = dialog.rows()
            assert not any(b.disabled for b in merge_buttons(dialog))
            await merge_row(pilot, dialog, first)
            await poll(pilot, lambda: len(calls) == 1)
            assert dialog.merging == first.pair
            assert len(merge_buttons(dialog)) == 2 and all(b.disabled for b in merge_buttons(dialog))
            assert dialog.query_one("#merge-rescan", Button).disabled
            assert dialog.query_one("#merge-close", Button).disabled
            second.focus()
            await pilot.press("m")  # the binding refuses too
            await pilot.press("escape")  # and the dialog stays while the merge runs
            await pilot.pause()
            assert app.screen is dialog and len(calls) == 1
            assert any("A merge is running" in m for m in notes)
            gate.set()
            await st_wait(pilot, lambda: dialog.merging is None)
            assert [r.pair for r in dialog.rows()] == [second.pair]
            assert not any(b.disabled for b in merge_buttons(dialog))
            assert calls == [(first.source, first.target)]
    finally:
        gate.set()


async def test_a_failed_merge_is_reported_and_the_buttons_come_back(repo: Path, settings: Settings,
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    st_checkout(tmp_path, settings, "x1", "https://git.test/acme/x.git")
    st_checkout(tmp_path, settings, "x2", "https://git.test/acme/x.git")

    def broken(self: StoreService, source: str, target: str, **kw: Any) -> Any:
        raise MergeError("cannot merge: the target is busy")

    monkeypatch.setattr(StoreService, "merge", broken)
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        stores = await open_stores(pilot)
        dialog = await open_dialog(pilot, stores)
        [row] = dialog.rows()
        await merge_row(pilot, dialog, row)
        await st_wait(pilot, lambda: dialog.merging is None and "failed" in plain(dialog, "#merge-status"))
        assert [r.pair for r in dialog.rows()] == [row.pair]
        assert not any(b.disabled for b in merge_buttons(dialog))
        assert "cannot merge: the target is busy" in notes
        assert not any(r.retired for r in stores.rows)


async def test_declining_the_confirmation_merges_nothing(repo: Path, settings: Settings) -> None:
    service = FixedStores(fixed_rows(), fixed_result())
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        _, dialog = await open_fixed(pilot, service, fixed_result())
        await pilot.press("m")  # the highlighted (first) row
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await st_wait(pilot)
        assert app.screen is dialog and service.merged == [] and len(dialog.rows()) == 3
        await pilot.press("down", "s", "m")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await st_wait(pilot, lambda: len(dialog.rows()) == 2)
        assert service.merged == [(S3[0], S4[0])]  # the second row, swapped by the binding


# --------------------------------------------------------------------------- snapshots


def _snapshot(snap_compare: Any, repo: Path, settings: Settings, state: str, size: tuple[int, int] = SIZE) -> bool:
    engine = "no_model" if state == "no_model" else "model"
    result = fixed_result(engine, truncated=engine == "model")
    service = FixedStores(fixed_rows(), result)
    app = st_app(repo, settings)

    async def run_before(pilot: Pilot) -> None:
        pilot.app.theme = "textual-dark"
        if state == "list":
            await st_wait(pilot)
            stores = StoresScreen(pilot.app.services, store_service=service)  # type: ignore[arg-type]
            await pilot.app.push_screen(stores)
            await st_wait(pilot, lambda: stores.rows)
        else:
            _, dialog = await open_fixed(pilot, service, result)
            if state == "proposals":
                await pilot.press("down", "s")  # the second proposal swapped and highlighted
        await st_wait(pilot)

    return snap_compare(app, terminal_size=size, run_before=run_before)


@with_sizes(["list", "proposals", "no_model"], "list", SIZE)
def test_stores_snapshot(state: str, size: tuple[int, int], repo: Path, settings: Settings, snap_compare: Any) -> None:
    assert _snapshot(snap_compare, repo, settings, state, size)


async def test_merging_the_apps_own_store_away_reopens_the_app_on_the_holder(
        repo: Path, settings: Settings, tmp_path: Path) -> None:
    other = st_checkout(tmp_path, settings, "clone", DEFAULT_REMOTE, facts=2)  # a clone of the app's repository
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        old = app.manager
        own = old.store.identity.store_name
        stores = await open_stores(pilot)
        dialog = await open_dialog(pilot, stores)
        row = rows_by_pair(dialog)[frozenset({own, other})]
        if row.source != own:
            await click(pilot, row.query_one(".swap", Button))
        assert (row.source, row.target) == (own, other)
        await merge_row(pilot, dialog, row)
        await st_wait(pilot, lambda: app.manager is not old and app.store_generation == 1)
        assert old._closed  # the manager on the retired store was closed
        assert app.manager.healthy and app.manager.redirect is not None and app.manager.redirect.holder == other
        assert dialog.current_store == other and stores.current == other
        assert any(f"This app now uses {other}" in m for m in notes)
        assert not any("Restart autopatch-tui" in m for m in notes)
        # the app writes to the holder now: a new turn lands in the clone's store
        handle = app.manager.begin_turn("after the merge")
        app.manager.complete_turn(handle, "ok")
        await st_wait(pilot, lambda: any(r.store == other and not r.retired for r in stores.rows))
        table = stores.query_one("#stores-table", DataTable)
        assert table_cells(table, other)[4] == "current" and table_cells(table, own)[4] == "retired"
    holder = MemoryManager.open(tmp_path / "clone", settings)
    try:
        assert "after the merge" in [t.user_text for t in holder.recent_turns()]
    finally:
        holder.close()


# --------------------------------------------------------------------------- truthful merge messages


async def test_merge_confirmation_names_stores_by_label_or_root_and_the_result_claims_nothing_unscanned(
        repo: Path, settings: Settings) -> None:
    """Issue 15: the confirmation read `project-SAG… (project-SAG…)`; after the last merge the dialog
    said "no duplicate stores found" while a rescan found one."""
    result = ScanResult("model", False, [fixed_proposal(S4, S3, "high", "engine", "same parser")])
    service = FixedStores(fixed_rows(), result)
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        _, dialog = await open_fixed(pilot, service, result)
        await pilot.press("m")
        await poll(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        body = plain(app.screen, "#body")
        assert body.startswith("Merge /mnt/backup/parser into Parser?")  # no label: the root
        assert body.count(S4[0]) == 1 and body.count(S3[0]) == 1  # each store name once, as a detail
        assert f"{S4[0]} ({S4[0]})" not in body
        await pilot.press("y")
        await st_wait(pilot, lambda: dialog.merging is None and service.merged)
        status = plain(dialog, "#merge-status")
        assert "no duplicate stores found" not in status
        assert "Merged /mnt/backup/parser into Parser" in status and "scan again (r)" in status.lower()
        assert "Scan again (r)" in str(dialog.query_one(".proposal-empty", Static).render())


async def test_the_store_list_adds_a_store_and_sets_a_label(repo: Path, settings: Settings, tmp_path: Path) -> None:
    """Issue 15: the stores screen could not add or label stores (it now uses the registry service)."""
    from autopatch_tui.tui.screens.text_prompt import TextPromptScreen

    other = make_git_repo(tmp_path / "elsewhere", "https://git.test/acme/elsewhere.git")
    used(MemoryManager.open(other, settings.with_overrides(home=tmp_path / "another-home"))).close()  # unregistered here
    app = st_app(repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        stores = await open_stores(pilot)
        assert len(stores.rows) == 1
        await pilot.press("a")
        await poll(pilot, lambda: isinstance(app.screen, TextPromptScreen))
        await pilot.press(*"/no/such/folder", "enter")
        await st_wait(pilot, lambda: any("no such checkout" in n for n in notes))
        assert len(stores.rows) == 1 and app.screen is stores
        await pilot.press("a")
        await poll(pilot, lambda: isinstance(app.screen, TextPromptScreen))
        app.screen.query_one(Input).value = str(other)
        await pilot.press("enter")
        await st_wait(pilot, lambda: len(stores.rows) == 2)
        added = next(r for r in stores.rows if r.store != stores.current)
        assert any(f"Added store {added.store}" in n for n in notes)
        table = stores.query_one(DataTable)
        table.move_cursor(row=table.get_row_index(added.store))
        await pilot.press("l")
        await poll(pilot, lambda: isinstance(app.screen, TextPromptScreen))
        app.screen.query_one(Input).value = "Elsewhere [bold]copy[/bold]"
        await pilot.press("enter")
        await st_wait(pilot, lambda: any(r.label == "Elsewhere [bold]copy[/bold]" for r in stores.rows))
    labels = {d["store"]: d["label"] for d in StoreService(settings).stores()}
    assert labels[added.store] == "Elsewhere [bold]copy[/bold]"


async def test_long_roots_are_cut_from_the_left_so_they_differ_at_80_columns(repo: Path, settings: Settings) -> None:
    """Two checkouts of one project differ at the end of their roots: at 80 columns the Root column
    shows that end ("…/old/shop-api"), never two identical heads (issue 30 item 14)."""
    head = "/home/developer/work/customers/acme/checkouts"
    rows = [{"store": s, "label": None, "root": f"{head}/{tail}", "remote": None, "fact_count": 1, "retired": False}
            for s, tail in (("project-0AAAAAAAAAAAAAAAAAAAAAAAAA", "src/shop-api"),
                            ("project-0BBBBBBBBBBBBBBBBBBBBBBBBB", "old/shop-api"))]
    service = FixedStores(rows, fixed_result())
    app = st_app(repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await st_wait(pilot)
        stores = StoresScreen(app.services, store_service=service)  # type: ignore[arg-type]
        await app.push_screen(stores)
        await st_wait(pilot, lambda: stores.rows)
        table = stores.query_one(DataTable)
        assert "root" in table.shown_keys  # type: ignore[attr-defined]
        shown = [str(table.get_cell(r["store"], "root")) for r in rows]
        assert all(s.startswith("…") for s in shown), shown
        assert shown[0].endswith("src/shop-api") and shown[1].endswith("old/shop-api"), shown
        width = dict((c.key, w) for c, w in table.shown)["root"]  # type: ignore[attr-defined]
        assert all(len(s) <= width for s in shown)
