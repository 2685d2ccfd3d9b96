"""The deep check's verdict is remembered per file state (issue 23: a repeat open must not pay an
O(size) check again). A remembered verdict must never hide damage: every write changes the file
state (ctime included, which no unprivileged process can set back), a file changed just before its
check is never remembered healthy, a link is never remembered, and a remembered fault keeps the
store degraded across processes without a write."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import verdicts
from autopatch_tui.core.memory.deep_check import DeepCheck
from autopatch_tui.core.memory.sqlite import open_reader
from autopatch_tui.core.memory.verdicts import VerdictMemo
from tests.memory._hostile import bypass_index, sql
from tests.support.fixtures import file_fingerprint

SETTLE = verdicts.SETTLED_SECONDS + 0.02


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from autopatch_tui.core.settings import load_settings
    from tests.support.fixtures import make_git_repo

    base = tmp_path_factory.mktemp("memo")
    repo = make_git_repo(base / "project")
    mgr = MemoryManager.open(repo, load_settings({"AUTOPATCH_HOME": str(base / "home")}))
    mgr.close()
    return repo / ".autopatch-j" / "memory.db"


class Counting:
    """Opens the deep check's connections and counts them (one per check that really ran)."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.opened = 0

    def __call__(self):
        self.opened += 1
        return open_reader(self.db)


def _settled_copy(template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "memory.db"
    shutil.copyfile(template, db)
    time.sleep(SETTLE)
    return db


def _flip_page_two(db: Path) -> None:
    page = int.from_bytes(db.read_bytes()[16:18], "big")
    with db.open("r+b") as fh:
        fh.seek(page)
        fh.write(b"\x77" * 12)


ITEM = ("INSERT INTO memory_items (row_id, id, logical_id, revision, status, kind, subject, statement, content,"
        " strength, origin, recall_mode, identity_key, created_at, updated_at) VALUES ({n}, 'item-{n}', 'mem-{n}', 1,"
        " 'active', 'project_decision', 's', 'S.', '', 'hard', 'explicit', 'on_match', 'project|s|', 1.0, 1.0)")


def _second_identity(db: Path) -> None:
    sql(db, ITEM.format(n=1))
    bypass_index(db, "memory_items_active_identity", "WHERE status = 'active'", "WHERE status = 'never'",
                 ITEM.format(n=2))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "check-bypassed": lambda db: sql(db, "PRAGMA ignore_check_constraints = ON",
                                     "INSERT INTO threads (id, status, created_at) VALUES ('thr-odd', 'bogus', 1.0)"),
    "foreign-key": lambda db: sql(db, "PRAGMA foreign_keys = OFF",
                                  "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, created_at,"
                                  " ended_at) VALUES ('turn-x', 'thr-missing', 1, 'general_chat', 'failed', 'x', 1, 2)"),
    "page-bytes-same-size": _flip_page_two,
    "second-active-identity": _second_identity,
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damage_after_a_remembered_verdict_is_found(name: str, template: Path, tmp_path: Path) -> None:
    db = _settled_copy(template, tmp_path)
    memo = VerdictMemo(tmp_path / "home")
    connect = Counting(db)
    assert DeepCheck(db, connect, memo).run().healthy
    assert DeepCheck(db, connect, VerdictMemo(tmp_path / "home")).run().healthy  # another process: the file
    assert connect.opened == 1  # remembered
    before = db.stat()
    DAMAGE[name](db)
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))  # a careless key (size, mtime) sees no change
    verdict = DeepCheck(db, connect, memo).run()
    assert verdict is not None and not verdict.healthy and verdict.cause in ("corrupt", "unreadable"), verdict
    assert connect.opened == 2


def test_a_file_changed_just_before_its_check_is_never_remembered_healthy(template: Path, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    shutil.copyfile(template, db)  # changed now: a write in the same timestamp tick could keep its state
    memo = VerdictMemo(tmp_path / "home")
    connect = Counting(db)
    assert DeepCheck(db, connect, memo).run().healthy and DeepCheck(db, connect, memo).run().healthy
    assert connect.opened == 2
    assert not (tmp_path / "home" / verdicts.MEMO_FILE).exists()


def test_a_linked_store_is_never_remembered(template: Path, tmp_path: Path) -> None:
    """A link's own state does not change when its target is replaced: nothing is remembered for
    it (only the open path refuses links; the registry readers check stores by path)."""
    target = _settled_copy(template, tmp_path)
    link = tmp_path / "linked" / "memory.db"
    link.parent.mkdir()
    link.symlink_to(target)
    time.sleep(SETTLE)
    memo = VerdictMemo(tmp_path / "home")
    connect = Counting(link)
    assert DeepCheck(link, connect, memo).run().healthy
    _flip_page_two(target)
    assert not DeepCheck(link, connect, memo).run().healthy
    assert connect.opened == 2


def test_a_verdict_is_kept_only_for_the_state_the_check_read(template: Path, tmp_path: Path) -> None:
    """A commit between the state's capture and the snapshot: the verdict is about content the
    captured state does not name, so it is not remembered."""
    db = _settled_copy(template, tmp_path)
    memo = VerdictMemo(tmp_path / "home")

    def connect():
        sql(db, "UPDATE memory_meta SET label = 'changed meanwhile'")  # after the state, before the snapshot
        return open_reader(db)

    assert DeepCheck(db, connect, memo).run().healthy
    assert memo.lookup(db, verdicts.file_state(db)) is None
    assert not (tmp_path / "home" / verdicts.MEMO_FILE).exists()


def test_a_fault_is_remembered_across_processes_and_nothing_is_written(repo: Path, settings, run_cli) -> None:
    """The CLI answers, then the deep check finds the fault; the next processes refuse the store at
    once (exit 3 for a write, `degraded` in status) from the remembered verdict, and the store's
    folder is never written."""
    from tests.support.fixtures import bootstrap_healthy

    db = bootstrap_healthy(repo, settings)
    state = db.parent
    DAMAGE["foreign-key"](db)
    before = sorted((p.name, file_fingerprint(p)) for p in state.iterdir())

    rc, out, err = run_cli("memory", "list", json=True)
    assert rc == 0 and out == {"items": [], "next": None}
    assert "Memory is degraded: foreign key check failed" in err and "Traceback" not in err
    rc, out, err = run_cli("memory", "status", json=True)
    assert out["state"] == "degraded" and out["cause"] == "corrupt" and "foreign key" in out["diagnostic"]
    assert "after this command's answer" not in err  # known at open: no second check
    rc, out, err = run_cli("new", json=True)
    assert rc == 3 and "foreign key check failed" in err
    assert sorted((p.name, file_fingerprint(p)) for p in state.iterdir()) == before
    memo = json.loads((Path(os.environ["AUTOPATCH_HOME"]) / verdicts.MEMO_FILE).read_text())
    [entry] = memo["stores"].values()
    assert entry["healthy"] is False and "SECRET" not in json.dumps(memo)


def test_a_remembered_healthy_verdict_spares_the_next_process_the_deep_check(repo: Path, run_cli,
                                                                              monkeypatch) -> None:
    monkeypatch.setenv("AUTOPATCH_DEBUG", "1")
    log = Path(os.environ["AUTOPATCH_HOME"]) / "logs" / "autopatch.log"
    assert run_cli("new", json=True)[0] == 0  # creates the store (maybe too fresh to remember)
    time.sleep(SETTLE)
    assert run_cli("memory", "status", json=True)[0] == 0  # checked by now, and remembered
    checks = log.read_text().count("deep store check: healthy")
    assert checks in (1, 2) and "(remembered)" in log.read_text()
    for _ in range(2):
        assert run_cli("memory", "list", json=True)[0] == 0
    assert log.read_text().count("deep store check") == checks  # neither paid it again


def test_an_orphan_a_secondary_index_lacks_is_still_found(template: Path, tmp_path: Path) -> None:
    """SQLite reads a WITHOUT ROWID table through a covering secondary index even under NOT INDEXED:
    an `item_candidates` row written while `item_candidates_candidate` saw none (its definition
    swapped, then put back) is missing from that index, so a check through it never sees the row.
    The deep check reads the table's own b-tree and finds the dangling references."""
    from autopatch_tui.core.memory.deep_check import deep_problem
    from tests.support.fixtures import raw_connect

    db = _settled_copy(template, tmp_path)
    bypass_index(db, "item_candidates_candidate", "ON item_candidates(candidate_id)",
                 "ON item_candidates(candidate_id) WHERE item_row_id < 0",
                 "INSERT INTO item_candidates (item_row_id, candidate_id) VALUES (99, 'cand-missing')")
    conn = raw_connect(db)
    try:
        via_index = conn.execute("SELECT count(*) FROM item_candidates NOT INDEXED WHERE candidate_id NOT IN"
                                 " (SELECT id FROM memory_candidates)").fetchone()[0]
        assert via_index == 0  # what a careless check sees
        found = deep_problem(conn)
    finally:
        conn.close()
    assert found is not None and "foreign key" in found[1] and "item_candidates" in found[1], found
