"""`--path` and the tools' shared confinement check (`core.confine`): `--path .` is the repository
root and stays "." (it once became "", which every tool refuses, so a code question about the whole
repository got no source at all); a path the tools refuse — under `.git/` or `.autopatch-j/`, in any
case, directly or through a symlink — is a one-line usage error (rc 2) and never saved as scope."""

from __future__ import annotations

import json

from tests.support.fixtures import db_path, is_error_doc, query
from tests.support.pipeline_helpers import stub_env


def test_ask_path_dot_is_the_repository_root_and_reaches_the_tools(repo, invoke_cli, llm_stub) -> None:
    env = stub_env(llm_stub)
    llm_stub.default("chat", "an answer")
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("x = 1\n")
    rc, _, err = invoke_cli("ask", "explain the project", "--intent", "code_explain", "--path", ".",
                              "--path", "./", "--path", str(repo), json=True, env=env)
    assert rc == 0, err
    [row] = query(db_path(repo), "SELECT scope_paths FROM turns")
    assert json.loads(row[0]) == ["."]
    # and "." is a scope the tools accept (the model was offered the repository, not refused)
    from autopatch_tui.core.agent.scoped_files import scoped_files
    assert "src/a.py" in scoped_files(repo, ["."], 5000).included


def test_paths_the_tools_refuse_are_usage_errors(repo, invoke_cli, llm_stub) -> None:
    env = stub_env(llm_stub)
    llm_stub.default("chat", "an answer")
    (repo / "gitlink").symlink_to(repo / ".git")
    refused = [".git/config", ".git", ".autopatch-j/memory.db", ".GIT/config", "gitlink/config",
               str(repo / ".git" / "config")]
    for path in refused:
        for args in (["ask", "what is this?", "--intent", "code_explain"], ["memory", "search", "parser"]):
            rc, out, err = invoke_cli(*args, "--path", path, json=True, env=env)
            assert rc == 2 and is_error_doc(out, 2), (args, path, rc, err)
            assert "--path" in err and "Traceback" not in err, (path, err)
            assert len(err.strip().splitlines()) == 1, err
            assert not db_path(repo).exists(), path  # refused before a store was opened
    assert llm_stub.requests_for("chat") == []
