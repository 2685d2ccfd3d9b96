"""Input checks and no side effects (issue 10, deliverables 6 and 8; contracts §1 and §4):

* registry-level commands (`memory stores [add|label]`, `merge-scan`, `merge`) never open or create a
  store for the working directory — run from a home folder they once littered `.autopatch-j/` there
  and registered it, so it later showed up in the store list and as a merge candidate;
* `--repo` must be an existing directory (`--repo <a file>` once created a store next to the file);
* `memory search ""` is a usage error (it was a traceback, rc 1);
* `ask --path` outside the repository or missing is a usage error and never saved as scope;
* a negative, NaN, infinite or absurd `new --timeout` is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
from tests.support.fixtures import (
    db_path,
    is_error_doc,
    make_git_repo,
    query,
    state_dir,
)
from tests.support.pipeline_helpers import stub_env
from tests.support.store_helpers import add_item, name_of


@pytest.fixture
def plain_home(tmp_path: Path) -> Path:
    """A folder like a user's home: no repository, no store."""
    home = tmp_path / "home"
    home.mkdir()
    return home


def _registered_roots(invoke_cli, cwd: Path) -> list[str]:
    rc, out, err = invoke_cli("memory", "stores", json=True, cwd=cwd)
    assert rc == 0, err
    return [s["root"] for s in out["stores"]]


def test_registry_commands_never_create_a_store_for_the_working_directory(tmp_path, plain_home, invoke_cli,
                                                                           settings) -> None:
    a = make_git_repo(tmp_path / "one" / "proj")
    b = make_git_repo(tmp_path / "two" / "proj")
    for where in (a, b):
        mgr = MemoryManager.open(where, settings)
        add_item(mgr, f"subject of {where.parent.name}")
        mgr.close()
    loose = tmp_path / "three"
    loose.mkdir()
    MemoryManager(loose, settings, register=False).close()  # a store the registry does not know yet
    commands = [
        ("memory", "stores"), ("memory", "stores", "--json"),
        ("memory", "stores", "add", str(loose)),
        ("memory", "stores", "label", name_of(a), "First clone"),
        ("memory", "merge-scan"), ("memory", "merge-scan", "--json"),
        ("memory", "merge", name_of(b), name_of(a), "--no-organize"),
    ]
    for args in commands:
        rc, out, err = invoke_cli(*args, cwd=plain_home)
        assert rc == 0, (args, err)
        assert not state_dir(plain_home).exists(), f"{args} created a store in the working directory"
    roots = _registered_roots(invoke_cli, plain_home)
    assert str(plain_home) not in roots and not any(r and r.startswith(str(plain_home)) for r in roots)
    rc, out, err = invoke_cli("memory", "merge-scan", json=True, cwd=plain_home)
    assert rc == 0, err
    evidence_roots = {p[side]["root"] for p in out["proposals"] for side in ("source_evidence", "target_evidence")}
    assert str(plain_home) not in evidence_roots
    assert not state_dir(plain_home).exists()
    assert not state_dir(tmp_path).exists()


def test_registry_commands_work_with_the_model_configured_and_from_a_store_less_folder(plain_home, invoke_cli,
                                                                                        llm_stub) -> None:
    env = {k: v for k, v in stub_env(llm_stub).items() if k.startswith("AUTOPATCH_LLM")}
    rc, out, err = invoke_cli("memory", "merge-scan", json=True, cwd=plain_home, env=env)
    assert rc == 0, err
    assert out == {"engine": "model", "truncated": False, "proposals": []}
    assert not state_dir(plain_home).exists()
    assert llm_stub.requests == []  # nothing to judge: the working directory is not a candidate


def test_repo_that_is_a_file_is_a_usage_error_and_creates_nothing(tmp_path, invoke_cli, run_cli) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    passwd = folder / "passwd"
    passwd.write_text("root:x:0:0::/root:/bin/sh\n")
    for args in (("memory", "status"), ("new",), ("memory", "list", "--json"), ("ask", "hello"),
                 ("memory", "stores")):
        rc, out, err = invoke_cli("--repo", passwd, *args, cwd=tmp_path)
        assert rc == 2, (args, rc, err)
        assert "not a directory" in err and str(passwd) in err, err
        assert not state_dir(folder).exists() and not state_dir(tmp_path).exists(), args
    rc, out, err = run_cli("memory", "status", "--repo", passwd, json=True, cwd=tmp_path)  # a real process
    assert rc == 2 and is_error_doc(out, 2) and "Traceback" not in err
    assert sorted(p.name for p in folder.iterdir()) == ["passwd"]


@pytest.mark.parametrize("query_text", ["", "   ", "\t\n"])
def test_empty_search_is_a_usage_error_without_a_store(tmp_path, plain_home, invoke_cli, query_text) -> None:
    rc, out, err = invoke_cli("memory", "search", query_text, json=True, cwd=plain_home)
    assert rc == 2 and is_error_doc(out, 2), err
    assert "query is empty" in err and "Traceback" not in err
    assert not state_dir(plain_home).exists()


def test_search_without_searchable_text_is_not_a_traceback(repo, invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "search", "!!!", json=True)
    assert rc in (0, 2) and "Traceback" not in err
    if rc == 0:
        assert out == {"results": [], "next": None}


def test_ask_path_outside_or_missing_is_a_usage_error_and_never_saved(repo, tmp_path, invoke_cli, llm_stub) -> None:
    env = stub_env(llm_stub)
    llm_stub.default("chat", "an answer")
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("x = 1\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("not the project's\n")
    (repo / "src" / "link.txt").symlink_to(outside)
    bad = ["../../etc/passwd", "../secret.txt", str(outside), "/etc", "src/missing.py", "src/link.txt", "", "  "]
    for path in bad:
        rc, out, err = invoke_cli("ask", "what is this?", "--intent", "general_chat", "--path", "src/a.py",
                                  "--path", path, json=True, env=env)
        assert rc == 2 and is_error_doc(out, 2), (path, rc, err)
        assert "--path" in err and "Traceback" not in err, (path, err)
    assert llm_stub.requests_for("chat") == []
    assert not db_path(repo).exists() or query(db_path(repo), "SELECT count(*) FROM turns")[0][0] == 0
    # inside and existing: stored repository-relative, whichever way it was written
    rc, out, err = invoke_cli("ask", "what is this?", "--intent", "general_chat", "--path", "./src/../src/a.py",
                              "--path", str(repo / "src"), "--path", "src/a.py", json=True, env=env)
    assert rc == 0, err
    [row] = query(db_path(repo), "SELECT scope_paths FROM turns")
    assert row[0] == '["src/a.py", "src"]'


def test_search_path_outside_the_repository_is_a_usage_error(repo, invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "search", "parser", "--path", "../../etc/passwd", json=True)
    assert rc == 2 and is_error_doc(out, 2) and "outside the repository" in err
    rc, out, err = invoke_cli("memory", "search", "parser", "--path", "src/deleted_since.py", json=True)
    assert rc == 0, err  # a file that no longer exists may still be what Memory is about


@pytest.mark.parametrize("value", ["-1", "-0.5", "nan", "NaN", "inf", "-inf", "1e9", "3601", "soon"])
def test_absurd_new_timeouts_are_refused(repo, invoke_cli, value) -> None:
    rc, out, err = invoke_cli("new", "--timeout", value, json=True)
    assert rc == 2 and is_error_doc(out, 2), (value, err)
    assert "--timeout" in err
    assert not db_path(repo).exists()  # refused before anything was opened


@pytest.mark.parametrize("value", ["0", "2.5", "3600"])
def test_sane_new_timeouts_are_accepted(repo, invoke_cli, value) -> None:
    rc, out, err = invoke_cli("new", "--timeout", value, json=True)
    assert rc == 0, err
    assert out["flush"]["timed_out"] is False


def test_registry_commands_keep_their_json_when_the_working_directory_store_is_degraded(tmp_path, invoke_cli) -> None:
    here = make_git_repo(tmp_path / "broken")
    state_dir(here).mkdir(mode=0o700)
    db_path(here).write_bytes(b"not a database at all" * 100)
    before = db_path(here).read_bytes()
    rc, out, err = invoke_cli("memory", "stores", json=True, cwd=here)
    assert rc == 0, err
    assert out == {"stores": []}
    assert db_path(here).read_bytes() == before
    assert os.listdir(state_dir(here)) == ["memory.db"]
    assert load_settings().home.exists()


@pytest.mark.parametrize("var", ["AUTOPATCH_LLM_TIMEOUT_SECONDS", "AUTOPATCH_MEMORY_LEASE_SECONDS"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_timeouts_in_the_environment_must_be_finite(repo, invoke_cli, var, value) -> None:
    rc, out, err = invoke_cli("memory", "status", json=True, env={var: value})
    assert rc == 1 and is_error_doc(out, 1), err  # a configuration error, named, and nothing opened
    assert "invalid setting" in err and "Traceback" not in err
    assert not db_path(repo).exists()
