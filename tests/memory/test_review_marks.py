"""Review marks (contracts §8): kept beside the store, never in `memory.db`; private, atomic, never
through a link; safe under two processes keeping at once; reset by `clear`; a revision that replaces a
kept one is new again and is compared with the kept one; a bad ID marks nothing."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import stat
from pathlib import Path

import pytest

from autopatch_tui.core.errors import MemoryNotFoundError, UsageError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import review_marks
from autopatch_tui.core.memory.review_marks import ReviewMarksError
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import file_fingerprint
from tests.support.memory_factory import add_item


def _items(manager: MemoryManager, n: int, **kw) -> list[str]:
    conn = manager.store.conn()
    return [add_item(conn, subject=f"subject {i}", statement=f"Statement number {i}.", **kw).logical_id
            for i in range(n)]


def test_marks_live_beside_the_store_private_and_never_in_the_database(manager: MemoryManager) -> None:
    a, b = _items(manager, 2)
    db_before = manager.store.conn().execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    assert manager.review.keep([a]) == [a]
    path = manager.paths.review_marks
    assert path.parent == manager.paths.state_dir
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(manager.paths.review_lock).st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert doc["format"] == "autopatch-review-marks" and doc["version"] == 1 and len(doc["kept"]) == 1
    assert manager.store.conn().execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == db_before
    assert [e.summary.id for e in manager.review.items()] == [b]
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # the atomic write left nothing


def test_a_bad_id_marks_nothing(manager: MemoryManager) -> None:
    a, b = _items(manager, 2)
    manager.forget(b)
    for ids in (["mem-nope"], [a, "mem-nope"], [a, b]):
        with pytest.raises(MemoryNotFoundError):
            manager.review.keep(ids)
        assert not manager.paths.review_marks.exists(), ids
    with pytest.raises(UsageError):
        manager.review.keep([])
    assert manager.review.keep([a[:-2]]) == [a]  # a unique prefix, as `forget` takes


def test_keep_refuses_an_item_revised_since_it_was_shown(manager: MemoryManager) -> None:
    conn = manager.store.conn()
    item = add_item(conn, subject="s", statement="first")
    add_item(conn, subject="s", statement="second", logical_id=item.logical_id, revision=2)
    with pytest.raises(MemoryNotFoundError, match="now at revision 2, not revision 1"):
        manager.review.keep([item.logical_id], revisions={item.logical_id: 1})
    assert manager.review.count() == 1
    assert manager.review.keep_all(shown=[(item.logical_id, 1)]) == []  # keep all: only what was shown
    assert manager.review.keep_all(shown=[(item.logical_id, 2)]) == [item.logical_id]


def test_a_revision_of_a_kept_item_is_new_again_and_compared_with_the_kept_one(manager: MemoryManager) -> None:
    conn = manager.store.conn()
    item = add_item(conn, subject="indentation", statement="Use two spaces.")
    manager.review.keep([item.logical_id])
    add_item(conn, subject="indentation", statement="Use four spaces.", logical_id=item.logical_id, revision=2)
    add_item(conn, subject="indentation", statement="Use four spaces everywhere.", logical_id=item.logical_id,
             revision=3)
    [entry] = manager.review.items()
    assert (entry.change, entry.revision) == ("revised", 3)
    base = manager.review.base_of(item.logical_id)
    assert base is not None and (base.revision, base.was_kept, base.summary.statement) == (1, True, "Use two spaces.")
    manager.review.keep([item.logical_id])
    kept = json.loads(manager.paths.review_marks.read_text())["kept"]
    assert kept == [entry.revision_id]  # the old mark is pruned once its successor is kept


def test_forgotten_items_leave_the_marks_at_the_next_write(manager: MemoryManager) -> None:
    a, b = _items(manager, 2)
    manager.review.keep([a])
    manager.forget(a)
    manager.review.keep([b])
    assert len(json.loads(manager.paths.review_marks.read_text())["kept"]) == 1


def test_clear_resets_the_marks(manager: MemoryManager) -> None:
    _items(manager, 3)
    manager.review.keep_all()
    assert manager.paths.review_marks.exists()
    manager.clear(confirm=True)
    assert not manager.paths.review_marks.exists()
    assert manager.review.count() == 0
    [c] = _items(manager, 1)
    assert [e.summary.id for e in manager.review.items()] == [c]


def test_marks_that_are_not_a_marks_document_are_refused_and_kept_as_they_are(manager: MemoryManager) -> None:
    [a] = _items(manager, 1)
    path = manager.paths.review_marks
    for content in (b"{broken", b'{"format": "other"}', b'{"format": "autopatch-review-marks", "version": 9}',
                    b"\xff\xfe", b'{"format": "autopatch-review-marks", "version": 1, "store": {}, "kept": [1]}'):
        path.write_bytes(content)
        os.chmod(path, 0o600)
        before = file_fingerprint(path)
        with pytest.raises(ReviewMarksError, match="review marks file"):
            manager.review.keep([a])
        assert file_fingerprint(path) == before, content
        assert manager.status().review.new == 1  # status still answers: every item awaits review


def test_a_hard_linked_or_non_file_marks_path_is_refused(manager: MemoryManager, tmp_path: Path) -> None:
    [a] = _items(manager, 1)
    manager.review.keep([a])
    outside = tmp_path / "elsewhere.json"
    os.link(manager.paths.review_marks, outside)
    with pytest.raises(ReviewMarksError, match="hard link"):
        manager.review.keep([a])
    os.unlink(outside)
    manager.paths.review_marks.unlink()
    manager.paths.review_marks.mkdir()
    with pytest.raises(ReviewMarksError, match="not a regular file"):
        manager.review.count()
    manager.clear(confirm=True)  # a folder there is moved aside, never deleted
    assert any(p.name.startswith("review_marks.json.aside-") for p in manager.paths.state_dir.iterdir())
    assert not manager.paths.review_marks.exists() and manager.review.count() == 0


@pytest.mark.parametrize("which", ["review_marks", "review_lock"])
def test_a_link_at_a_marks_path_degrades_the_store_and_nothing_is_written_through_it(
        repo: Path, settings: Settings, tmp_path: Path, which: str) -> None:
    manager = MemoryManager.open(repo, settings)
    [a] = _items(manager, 1)
    manager.close()
    target = tmp_path / "target"
    target.write_text("untouched")
    os.symlink(target, getattr(manager.paths, which))
    again = MemoryManager.open(repo, settings)
    try:
        assert not again.healthy and again.store.health.cause == "symlink"
        assert again.status().review.new == 0
        with pytest.raises(Exception):
            again.review.keep([a])
    finally:
        again.close()
    assert target.read_text() == "untouched"


def _keep_in_process(repo: str, ids: list[str], barrier, results) -> None:
    from autopatch_tui.core.settings import load_settings

    mgr = MemoryManager.open(Path(repo), load_settings())
    try:
        barrier.wait(10)
        for i in ids:
            mgr.review.keep([i])
        results.put(("ok", len(ids)))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(("error", repr(exc)))
    finally:
        mgr.close()


def test_two_processes_keeping_at_once_both_land(manager: MemoryManager, repo: Path) -> None:
    ids = _items(manager, 24)
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_keep_in_process, args=(str(repo), part, barrier, results))
             for part in (ids[0::2], ids[1::2])]
    for p in procs:
        p.start()
    outcome = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    assert outcome == [("ok", 12), ("ok", 12)]
    assert manager.review.count() == 0 and manager.review.items() == []


def test_the_read_cache_follows_every_new_file(manager: MemoryManager) -> None:
    a, b = _items(manager, 2)
    conn = manager.store.conn()
    stamp = review_marks.store_stamp(conn)
    assert review_marks.load_kept(manager.paths, stamp) == frozenset()
    manager.review.keep([a])
    first = review_marks.load_kept(manager.paths, stamp)
    manager.review.keep([b])
    assert len(review_marks.load_kept(manager.paths, stamp)) == len(first) + 1


def test_a_keep_in_another_process_is_noticed_once(manager: MemoryManager, repo, settings) -> None:
    """`notice_outside_keeps`: a change of the marks file this process did not write is a Memory
    change (once); this process's own keeps and a file already seen are not."""
    from autopatch_tui.core.events import MemoryChanged

    seen: list[object] = []
    manager.events.subscribe(seen.append)
    conn = manager.store.conn()
    a, b = add_item(conn, subject="a", statement="A."), add_item(conn, subject="b", statement="B.")
    manager.review.remember_marks()
    assert manager.review.notice_outside_keeps() is False
    manager.review.keep([a.logical_id])  # ours: announced by the keep itself, not again by the poll
    assert manager.review.notice_outside_keeps() is False
    other = MemoryManager.open(repo, settings)
    try:
        other.review.keep([b.logical_id])
    finally:
        other.close()
    seen.clear()
    assert manager.review.notice_outside_keeps() is True
    assert [e for e in seen if isinstance(e, MemoryChanged)] == [MemoryChanged("review")]
    assert manager.review.notice_outside_keeps() is False
