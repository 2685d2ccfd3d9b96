"""`memory export` (contracts §7; "JSON export", "同一时间戳并发 export")."""

from __future__ import annotations

import json
import re
import stat
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import FakeClock, db_path, file_fingerprint, raw_connect, state_dir, write_old_store
from tests.support.memory_factory import add_item, add_turns

FROZEN = 1_800_000_000.25
STAMP = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(FROZEN))
SECTION_KEYS = {"threads", "turns", "jobs", "candidates", "candidate_sources", "items", "item_candidates"}
TOP_KEYS = {"format", "schema_version", "exported_at", "repo", "meta"} | SECTION_KEYS
TURN_FIELDS = {"id", "thread_id", "sequence", "intent", "state", "user_text", "assistant_text", "scope_paths",
               "evidence_keys", "created_at"}
JOB_FIELDS = {"id", "kind", "status", "attempts", "provider_calls", "failure"}
ITEM_FIELDS = {"id", "logical_id", "revision", "kind", "status", "subject", "statement", "content", "strength",
               "origin", "recall_mode", "applies_to_paths", "aliases", "keywords", "thread_id", "replaced_by"}
FAILURE_FIELDS = {"job_id", "kind", "status", "category", "phase", "stage", "rule", "provider_calls", "attempts"}
EXPORT_NAME = re.compile(r"^memory-(\d{8}T\d{6}Z)(?:-(\d+))?\.json$")


def _set_failure(db: Path, turn_id: str, *, status: str = "failed") -> None:
    conn = raw_connect(db)
    conn.execute(
        "UPDATE memory_jobs SET status = ?, attempts = 2, provider_calls = 3, failure_category = 'contract_violation',"
        " failure_phase = 'validate', failure_stage = 'repair', failure_rule = 'extraction.sources.quote',"
        " completed_at = CASE WHEN ? = 'failed' THEN 5.0 END WHERE turn_id = ?",
        (status, status, turn_id),
    )
    conn.close()


def test_export_snapshot_contents(manager: MemoryManager, repo: Path) -> None:
    raw_user = "  RAW question with [bold]markup[/bold] and \u4e2d\u6587\n"
    h1 = manager.begin_turn(raw_user, intent="code_explain", scope_paths=["a.py", "b.py"],
                            evidence_keys=["scan:F1"])
    manager.complete_turn(h1, "shown answer \U0001f600")
    h2 = manager.begin_turn("second")
    manager.fail_turn(h2)
    item = add_item(manager.store.conn(), subject="Exports", statement="Exports are never overwritten.",
                    sources=[(h1.turn_id, "user", "RAW question")], aliases=["snapshot"])
    _set_failure(db_path(repo), h2.turn_id)

    path = manager.export()

    assert path.parent == state_dir(repo) / "memory-exports"
    assert EXPORT_NAME.match(path.name)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    snap = json.loads(path.read_bytes().decode("utf-8"))
    assert TOP_KEYS <= set(snap)
    assert snap["format"] == "autopatch-memory-export" and snap["schema_version"] == 4
    assert snap["repo"] == str(repo)
    exported_at = datetime.fromisoformat(snap["exported_at"].replace("Z", "+00:00"))
    assert exported_at.utcoffset() is not None and exported_at.utcoffset().total_seconds() == 0
    assert abs(exported_at.timestamp() - time.time()) < 60
    assert snap["meta"]["generation"] == 1
    for key in SECTION_KEYS:
        assert isinstance(snap[key], list), key

    assert len(snap["threads"]) == 1 and snap["threads"][0]["status"] == "active"
    turns = {t["id"]: t for t in snap["turns"]}
    assert set(turns) == {h1.turn_id, h2.turn_id}
    assert all(TURN_FIELDS <= set(t) for t in turns.values())
    t1 = turns[h1.turn_id]
    assert t1["user_text"] == raw_user and t1["assistant_text"] == "shown answer \U0001f600"
    assert (t1["sequence"], t1["intent"], t1["state"]) == (1, "code_explain", "completed")
    assert t1["scope_paths"] == ["a.py", "b.py"] and t1["evidence_keys"] == ["scan:F1"]
    assert t1["thread_id"] == h1.thread_id
    assert turns[h2.turn_id]["state"] == "failed" and turns[h2.turn_id]["assistant_text"] is None

    jobs = {j["turn_id"]: j for j in snap["jobs"]}
    assert all(JOB_FIELDS <= set(j) for j in jobs.values())
    assert jobs[h1.turn_id]["failure"] is None
    assert (jobs[h1.turn_id]["kind"], jobs[h1.turn_id]["status"]) == ("extraction", "pending")
    failure = jobs[h2.turn_id]["failure"]
    assert set(failure) == FAILURE_FIELDS
    assert failure == {"job_id": jobs[h2.turn_id]["id"], "kind": "extraction", "status": "failed",
                       "category": "contract_violation", "phase": "validate", "stage": "repair",
                       "rule": "extraction.sources.quote", "provider_calls": 3, "attempts": 2}
    assert not any(k.startswith("failure_") for j in snap["jobs"] for k in j)

    assert len(snap["items"]) == 1
    it = snap["items"][0]
    assert ITEM_FIELDS <= set(it)
    assert (it["id"], it["logical_id"], it["revision"], it["status"]) == (item.item_id, item.logical_id, 1, "active")
    assert it["aliases"] == ["snapshot"] and it["applies_to_paths"] == [] and it["replaced_by"] is None
    assert [c["id"] for c in snap["candidates"]] == [item.candidate_id]
    assert snap["candidate_sources"] == [{"candidate_id": item.candidate_id, "ordinal": 0,
                                          "turn_id": h1.turn_id, "role": "user", "quote": "RAW question"}]
    assert snap["item_candidates"] == [{"item_row_id": item.row_id, "candidate_id": item.candidate_id}]


def test_export_items_hold_every_revision(manager: MemoryManager) -> None:
    h = add_turns(manager, 1)[0]
    conn = manager.store.conn()
    r1 = add_item(conn, subject="Style", statement="v1", sources=[(h.turn_id, "user", "v1")])
    r2 = add_item(conn, subject="Style", statement="v2", sources=[(h.turn_id, "user", "v2")],
                  logical_id=r1.logical_id, revision=2)
    snap = json.loads(manager.export().read_text("utf-8"))
    rows = [(i["revision"], i["status"], i["statement"], i["replaced_by"]) for i in snap["items"]]
    assert rows == [(1, "superseded", "v1", r2.item_id), (2, "active", "v2", None)]


def _check_export_set(folder: Path, expected: int) -> None:
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == expected, names
    stamps, suffixes = set(), set()
    for name in names:
        m = EXPORT_NAME.match(name)
        assert m, f"unexpected file left in the exports folder: {name}"
        stamps.add(m.group(1))
        suffixes.add(int(m.group(2) or 0))
        path = folder / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        snap = json.loads(path.read_text("utf-8"))  # complete and valid
        assert snap["format"] == "autopatch-memory-export" and "items" in snap
    assert stamps == {STAMP}
    assert suffixes == set(range(expected))  # memory-<stamp>.json, -1 … -(n-1): nothing overwritten


def test_concurrent_exports_in_one_second_never_overwrite(repo: Path, settings: Settings) -> None:
    mgr = MemoryManager.open(repo, settings, clock=FakeClock(FROZEN))
    try:
        add_turns(mgr, 2)
        paths: list[Path] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)
        lock = threading.Lock()

        def work() -> None:
            try:
                barrier.wait(timeout=30)
                for _ in range(5):
                    p = mgr.export()
                    with lock:
                        paths.append(p)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
    finally:
        mgr.close()
    assert len(paths) == 40 and len(set(paths)) == 40
    _check_export_set(state_dir(repo) / "memory-exports", 40)


@pytest.mark.slow
def test_concurrent_exports_from_processes_never_overwrite(repo: Path, settings: Settings) -> None:
    from tests.memory import _workers

    mgr = MemoryManager.open(repo, settings)
    add_turns(mgr, 1)
    mgr.close()
    results = _workers.run_parallel(_workers.export_many, 4, str(repo), 5, FROZEN)
    paths = [p for r in results for p in r]
    assert len(paths) == 20 and len(set(paths)) == 20
    _check_export_set(state_dir(repo) / "memory-exports", 20)


def _make_v3_store(repo: Path, *, job_failure: tuple[str, str, str, str] | None = None) -> Path:
    statements: list[str | tuple[str, tuple[object, ...]]] = [
        "CREATE TABLE threads (id TEXT PRIMARY KEY, status TEXT, created_at REAL)",
        "CREATE TABLE turns (id TEXT PRIMARY KEY, thread_id TEXT, sequence INTEGER, user_text TEXT,"
        " assistant_text TEXT, scope_paths TEXT, provider_error TEXT, reasoning TEXT, created_at REAL)",
        "INSERT INTO threads VALUES ('thr-old', 'active', 1000.0)",
        "INSERT INTO turns VALUES ('turn-old', 'thr-old', 1, 'old RAW question', 'old answer',"
        " 'not json', 'SECRET-BODY from the provider', 'SECRET-REASONING', 1000.5)",
    ]
    if job_failure is not None:
        statements += [
            "CREATE TABLE memory_jobs (id TEXT PRIMARY KEY, kind TEXT, status TEXT, attempts INTEGER,"
            " provider_calls INTEGER, failure_category TEXT, failure_phase TEXT, failure_stage TEXT,"
            " failure_rule TEXT, raw_response TEXT, created_at REAL)",
            ("INSERT INTO memory_jobs VALUES ('job-old', 'extraction', 'failed', 2, 2, ?, ?, ?, ?,"
             " 'SECRET-RESPONSE', 1001.0)", job_failure),
        ]
    return write_old_store(repo, *statements)


def test_export_of_a_degraded_but_readable_v3_file(repo: Path, settings: Settings, invoke_cli) -> None:
    db = _make_v3_store(repo, job_failure=("auth", "provider", "primary", None))
    before = file_fingerprint(db)

    rc, out, err = invoke_cli("memory", "export", json=True)
    assert rc == 0, err
    path = Path(out["path"])
    assert set(out) == {"path"}
    assert path.parent == state_dir(repo) / "memory-exports" and EXPORT_NAME.match(path.name)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text("utf-8")
    for secret in ("SECRET-BODY", "SECRET-REASONING", "SECRET-RESPONSE"):
        assert secret not in text
        assert secret not in err
    snap = json.loads(text)
    assert snap["meta"]["found_schema_version"] == 3
    assert snap["turns"] == [{"id": "turn-old", "thread_id": "thr-old", "sequence": 1,
                              "user_text": "old RAW question", "assistant_text": "old answer",
                              "scope_paths": None, "created_at": snap["turns"][0]["created_at"]}]
    assert snap["jobs"][0]["failure"]["category"] == "auth"
    assert snap["items"] == [] and snap["candidates"] == []
    assert file_fingerprint(db) == before

    # in process, on the degraded manager, the same
    mgr = MemoryManager.open(repo, settings)
    try:
        assert not mgr.healthy
        second = mgr.export()
    finally:
        mgr.close()
    assert second != path and "SECRET-BODY" not in second.read_text("utf-8")
    assert file_fingerprint(db) == before


def test_export_of_v3_job_failure_text_never_leaks_into_the_file(repo: Path, invoke_cli) -> None:
    db = _make_v3_store(repo, job_failure=("provider said: SECRET-BODY", "provider", "primary",
                                           "HTTP 401 SECRET-BODY"))
    before = file_fingerprint(db)
    rc, out, err = invoke_cli("memory", "export", json=True)
    assert rc == 0, err
    assert "SECRET-BODY" not in err
    text = Path(out["path"]).read_text("utf-8")
    assert "SECRET-BODY" not in text
    assert file_fingerprint(db) == before


def test_export_of_v3_job_with_unknown_failure_stage_fails_cleanly(repo: Path, run_cli) -> None:
    db = _make_v3_store(repo, job_failure=("auth", "provider", "upstream SECRET-BODY", None))
    before = file_fingerprint(db)
    rc, out, err = run_cli("memory", "export", json=True)
    assert "Traceback" not in err
    assert "SECRET-BODY" not in err
    assert rc in (0, 1), err
    if rc == 0:
        assert "SECRET-BODY" not in Path(out["path"]).read_text("utf-8")
    assert file_fingerprint(db) == before


def test_export_of_an_unreadable_file_fails_cleanly(repo: Path, invoke_cli) -> None:
    db = db_path(repo)
    db.parent.mkdir(mode=0o700)
    db.write_bytes(b"garbage, not sqlite " * 300)
    before = file_fingerprint(db)
    rc, out, err = invoke_cli("memory", "export")
    assert rc == 1, (out, err)
    assert "Traceback" not in err
    exports = state_dir(repo) / "memory-exports"
    assert not exports.exists() or not any(exports.iterdir())
    assert file_fingerprint(db) == before


def test_a_streamed_export_holds_the_same_value_as_the_whole_snapshot_and_reports_its_rows(
        manager: MemoryManager, repo: Path) -> None:
    """Issue 33: the export is written row by row (a 100k-item store is never held in memory); the
    file is still one JSON document with exactly the snapshot's value."""
    from autopatch_tui.core.memory import export as export_mod
    from tests.support.memory_factory import add_item

    conn = manager.store.conn()
    for i in range(export_mod.PROGRESS_EVERY + 5):  # past one progress step
        add_item(conn, subject=f"rule {i}", statement=f"Rule {i} with a \u202e bidi mark and \"quotes\".")
    seen: list[tuple[int, int]] = []
    path = manager.export(progress=lambda done, total: seen.append((done, total)))
    written = json.loads(path.read_text(encoding="utf-8"))
    whole = export_mod.build_snapshot(manager.store.read_conn(), repo=str(repo), now=manager.clock.now())
    written.pop("exported_at"), whole.pop("exported_at")
    assert written == whole
    total = seen[-1][1]
    assert total >= 2 * (export_mod.PROGRESS_EVERY + 5)  # items and their candidates, at least
    assert seen[0] == (export_mod.PROGRESS_EVERY, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_an_export_that_fails_while_streaming_leaves_no_file(manager: MemoryManager, repo: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from autopatch_tui.core.errors import MemoryStoreError
    from autopatch_tui.core.memory import export as export_mod
    from tests.support.memory_factory import add_item

    add_item(manager.store.conn(), subject="one", statement="One rule.")
    real = export_mod._section_rows

    def broken(conn, key):
        if key == "items":
            raise sqlite3.DatabaseError("database disk image is malformed")
        yield from real(conn, key)

    monkeypatch.setattr(export_mod, "_section_rows", broken)
    for to in (None, repo / "out.json"):
        with pytest.raises(MemoryStoreError, match="not readable for export"):
            manager.export(to=to)
    exports = manager.paths.exports_dir
    assert not (repo / "out.json").exists()
    assert not exports.exists() or sorted(p.name for p in exports.iterdir()) == []
