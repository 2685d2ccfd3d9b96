"""The command line (contracts §4): one JSON document with `--json`, `--repo` anywhere, exit codes."""

from __future__ import annotations

from pathlib import Path

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import db_path, is_error_doc, parse_single_json, scalar, state_dir, write_old_store


def _make_v3(repo: Path) -> Path:
    return write_old_store(repo, "CREATE TABLE notes (x)")


def test_json_commands_print_exactly_one_document(repo: Path, run_cli, invoke_cli) -> None:
    # through a real process: stdout holds exactly one JSON document and nothing goes to stderr
    rc, doc, err = run_cli("memory", "status", json=True)
    assert rc == 0, err
    assert isinstance(doc, dict) and doc["state"] == "healthy"
    assert err == ""
    for args in (("memory", "status"), ("memory", "list"), ("memory", "export"), ("new",)):
        rc, text, err = invoke_cli(*args)
        assert rc == 0, (args, err)
        rc, doc, err = invoke_cli(*args, json=True)  # parse_single_json: exactly one document
        assert rc == 0, (args, err)
        assert isinstance(doc, dict), args
        assert err == "", (args, err)
    rc, out, err = invoke_cli("memory", "list", "--json")
    assert parse_single_json(out) == {"items": [], "next": None}  # issue 33: the next page's cursor, null: the last


def test_repo_option_before_and_after_the_subcommand(repo: Path, tmp_path: Path, run_cli, invoke_cli) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    expected = str(db_path(repo))
    rc, out, err = run_cli("--repo", repo, "memory", "status", json=True, cwd=elsewhere)
    assert rc == 0, err
    assert out["db_path"] == expected
    for args in (("--repo", repo, "memory", "status"), ("memory", "--repo", repo, "status"),
                 ("memory", "status", "--repo", repo)):
        rc, out, err = invoke_cli(*args, json=True, cwd=elsewhere)
        assert rc == 0, (args, err)
        assert out["db_path"] == expected, args
    rc, out, err = invoke_cli("new", "--repo", repo, json=True, cwd=elsewhere)
    assert rc == 0, err
    rc, out, err = invoke_cli("--repo", repo, "new", cwd=elsewhere)
    assert rc == 0, err
    assert not (elsewhere / ".autopatch-j").exists()
    assert scalar(db_path(repo), "SELECT count(*) FROM threads") == 3


def test_repo_resolves_to_the_git_top_level(repo: Path, tmp_path: Path, invoke_cli) -> None:
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    rc, out, err = invoke_cli("memory", "status", "--repo", sub, json=True, cwd=tmp_path)
    assert rc == 0, err
    assert out["db_path"] == str(db_path(repo))
    rc, out, err = invoke_cli("memory", "status", json=True, cwd=sub)  # from the working directory
    assert rc == 0, err
    assert out["db_path"] == str(db_path(repo))
    assert not (sub / ".autopatch-j").exists()


def test_missing_repo_path_is_a_usage_error(tmp_path: Path, run_cli) -> None:
    missing = tmp_path / "no" / "such" / "repo"
    rc, out, err = run_cli("memory", "status", "--repo", missing, json=True, cwd=tmp_path)
    assert rc == 2, (out, err)
    assert is_error_doc(out, 2) and "does not exist" in out["error"]["message"]
    assert str(missing) in err and "does not exist" in err
    assert "Traceback" not in err
    assert not missing.exists() and not (tmp_path / ".autopatch-j").exists()


def test_usage_errors_exit_2(invoke_cli) -> None:
    for args in (("memory",), ("memory", "bogus"), ("memory", "list", "--kind", "repair_procedure"),
                 ("memory", "show"), ("new", "--timeout", "soon"), ("--no-such-flag", "memory", "status")):
        rc, out, err = invoke_cli(*args)
        assert rc == 2, (args, rc, err)
        assert out == "" and err, args


def test_show_unknown_id_exits_1(repo: Path, invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "show", "mem-01UNKNOWN", json=True)
    assert rc == 1, err
    assert is_error_doc(out, 1) and "mem-01UNKNOWN" in out["error"]["message"]
    assert "mem-01UNKNOWN" in err


def test_degraded_store_refuses_commands_that_need_a_healthy_store(repo: Path, run_cli, invoke_cli) -> None:
    db = _make_v3(repo)
    before = db.read_bytes()
    rc, out, err = run_cli("new", "--json")
    assert rc == 3, err
    assert is_error_doc(parse_single_json(out), 3) and "degraded" in err
    for args in (("new",), ("new", "--json"), ("memory", "list"), ("memory", "show", "mem-x"),
                 ("memory", "forget", "mem-x")):
        rc, out, err = invoke_cli(*args)
        assert rc == 3, (args, rc, err)
        assert out == "" if "--json" not in args else is_error_doc(parse_single_json(out), 3)
        assert "degraded" in err and "found 3" in err and "4" in err
    # status still reports on a degraded store (and exits 3 like the rest)
    rc, out, err = invoke_cli("memory", "status")
    assert rc == 3 and "degraded" in out and "clear --confirm" in out
    assert db.read_bytes() == before


def test_new_json_shape(repo: Path, settings: Settings, invoke_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        old = mgr.status().active_thread_id
        for i in range(2):
            h = mgr.begin_turn(f"q{i}")
            mgr.complete_turn(h, "a")
    finally:
        mgr.close()
    rc, out, err = invoke_cli("new", "--timeout", "0.5", json=True)
    assert rc == 0, err
    assert set(out) == {"old_thread_id", "new_thread_id", "flush"}
    assert set(out["flush"]) == {"completed", "pending", "timed_out"}
    assert out["old_thread_id"] == old and out["new_thread_id"] != old
    assert isinstance(out["flush"]["timed_out"], bool)
    assert out["flush"]["completed"] + out["flush"]["pending"] == 2
    db = db_path(repo)
    assert scalar(db, "SELECT id FROM threads WHERE status = 'active'") == out["new_thread_id"]
    assert scalar(db, "SELECT status FROM threads WHERE id = ?", (old,)) == "archived"

    rc, text, err = invoke_cli("new")
    assert rc == 0 and "New thread" in text
    assert scalar(db, "SELECT count(*) FROM threads") == 3
    assert scalar(db, "SELECT count(*) FROM threads WHERE status = 'active'") == 1


def test_export_json_path(repo: Path, invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "export", json=True)
    assert rc == 0, err
    assert set(out) == {"path"}
    path = Path(out["path"])
    assert path.is_file() and path.parent == state_dir(repo) / "memory-exports"
    rc, text, err = invoke_cli("memory", "export")
    assert rc == 0 and Path(text.strip()).is_file() and Path(text.strip()) != path
