"""`ask` reads its message from stdin when TEXT is `-`, or omitted with stdin not a terminal
(contracts §4, added 2026-12-07); `ask --json` keeps its documented keys."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fixtures import PROJECT_ROOT, db_path, is_error_doc, parse_single_json, query

ASK_KEYS = {"turn_id", "thread_id", "answer", "state"}
MULTILINE = "Why does parse() fail\non this input?\n\n    key = [unclosed\n"


class _Stdin(io.TextIOWrapper):
    def __init__(self, data: bytes, *, tty: bool = False) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self._tty = tty
        self.reads = 0

    def isatty(self) -> bool:
        return self._tty


@pytest.fixture
def model_env(llm_stub) -> dict[str, str]:
    llm_stub.default("chat", "It is missing a bracket.")
    return {"AUTOPATCH_LLM_BASE_URL": llm_stub.base_url, "AUTOPATCH_LLM_MODEL": "gpt-4o"}


def _last_user(llm_stub) -> str:
    [req] = llm_stub.requests_for("chat")
    return [m for m in req.messages if m["role"] == "user"][-1]["content"]


@pytest.mark.parametrize("args", [("ask", "-"), ("ask",)], ids=["dash", "omitted"])
def test_the_message_comes_from_stdin_with_its_newlines(args, repo: Path, invoke_cli, llm_stub, model_env,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(MULTILINE.encode()))
    rc, out, err = invoke_cli(*args, json=True, env=model_env)
    assert rc == 0, err
    assert set(out) - {"memory_used"} == ASK_KEYS and out["answer"] == "It is missing a bracket."
    assert MULTILINE.strip() in _last_user(llm_stub)
    [row] = query(db_path(repo), "SELECT user_text FROM turns")
    assert row[0] == MULTILINE  # every newline kept, nothing trimmed from what was sent


def test_text_wins_over_a_pipe(repo: Path, invoke_cli, llm_stub, model_env, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b"from the pipe"))
    rc, out, err = invoke_cli("ask", "from the argument", json=True, env=model_env)
    assert rc == 0, err
    [row] = query(db_path(repo), "SELECT user_text FROM turns")
    assert row[0] == "from the argument"


@pytest.mark.parametrize("data, args, words", [
    (b"", ("ask",), "empty"),
    (b" \n\t\n", ("ask", "-"), "empty"),
    (b"caf\xe9 au lait", ("ask", "-"), "not UTF-8"),
    (b"x" * ((1 << 20) + 1), ("ask", "-"), "over 1 MiB"),
], ids=["empty", "blank", "latin1", "too-large"])
def test_a_bad_stdin_message_is_a_usage_error_and_sends_nothing(data, args, words, repo: Path, invoke_cli,
                                                                llm_stub, model_env, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(data))
    rc, out, err = invoke_cli(*args, json=True, env=model_env)
    assert rc == 2 and is_error_doc(out, 2), (rc, out, err)
    assert words in out["error"]["message"] and "Traceback" not in err
    assert llm_stub.requests == [] and not db_path(repo).exists()


def test_no_text_at_a_terminal_asks_for_one(repo: Path, invoke_cli, llm_stub, model_env, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b"never read", tty=True))
    rc, out, err = invoke_cli("ask", json=True, env=model_env)
    assert rc == 2 and is_error_doc(out, 2)
    assert "TEXT" in out["error"]["message"] and "stdin" in out["error"]["message"]
    assert sys.stdin.read() == "never read"  # a terminal is never waited on
    assert llm_stub.requests == []


def test_a_real_pipe(repo: Path, llm_stub, model_env) -> None:
    env = dict(os.environ, **model_env, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run([sys.executable, "-m", "autopatch_tui", "ask", "--json"], input=MULTILINE.encode(),
                          cwd=repo, env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = parse_single_json(proc.stdout.decode())
    assert set(out) - {"memory_used"} == ASK_KEYS
    assert MULTILINE.strip() in _last_user(llm_stub)
