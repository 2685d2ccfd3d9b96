"""The log file (issue 10, deliverable 9; contracts §1 and §6): `$AUTOPATCH_HOME/logs/autopatch.log`,
rotated, 0600 in a 0700 folder, safe structure only — after failing turns and failing jobs it holds
their structure (IDs, categories, exit codes) and none of the API key, the endpoint, the user's
quote, the model's reply or the provider's error body, in normal and debug mode alike."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from autopatch_tui.core import logs
from autopatch_tui.core.settings import load_settings
from tests.support.fixtures import db_path, query
from tests.support.llm_stub import Reply

API_KEY = "sk-PLANTED-KEY-77aa1c"
ENDPOINT_PATH = "tenant-PLANTED-path-5c1e"
QUOTE = "PLANTED-QUOTE-b71 please always run the linter before pushing"
PROVIDER_BODY = "PLANTED-PROVIDER-BODY-3e9d"
MODEL_REPLY = "PLANTED-MODEL-REPLY-0f42"
EXCEPTION_TEXT = "PLANTED-EXCEPTION-TEXT-91cc"
PLANTED = (API_KEY, ENDPOINT_PATH, QUOTE, "PLANTED-QUOTE-b71", PROVIDER_BODY, MODEL_REPLY, EXCEPTION_TEXT)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def secret_env(llm_stub, isolated_env) -> dict[str, str]:
    (isolated_env / "config.toml").write_text("llm_max_retries = 0\nllm_timeout_seconds = 10\n", encoding="utf-8")
    return {"AUTOPATCH_LLM_BASE_URL": f"http://127.0.0.1:{llm_stub.port}/{ENDPOINT_PATH}/v1",
            "AUTOPATCH_LLM_API_KEY": API_KEY, "AUTOPATCH_LLM_MODEL": "gpt-4o",
            "AUTOPATCH_MEMORY_EXTRACTION_MAX_WAIT_SECONDS": "0"}


@pytest.mark.parametrize("debug", [False, True], ids=["normal", "debug"])
def test_failing_turns_and_jobs_are_logged_as_safe_structure_only(repo, llm_stub, secret_env, invoke_cli,
                                                                   isolated_env, monkeypatch, debug) -> None:
    env = dict(secret_env, AUTOPATCH_DEBUG="1" if debug else "0")
    body = {"error": {"message": f"{PROVIDER_BODY} key {API_KEY}", "type": PROVIDER_BODY, "code": PROVIDER_BODY}}
    llm_stub.default("chat", Reply(status=500, error_body=body))
    llm_stub.default("extraction", f"not json at all: {MODEL_REPLY} {QUOTE}")  # a contract violation
    llm_stub.default("extraction_repair", Reply(status=400, error_body=body))  # and its repair fails
    rc, out, err = invoke_cli("ask", QUOTE, "--intent", "general_chat", env=env)
    assert rc == 1, err
    rc, out, err = invoke_cli("ask", QUOTE, "--intent", "general_chat", env=env)  # a second failing turn
    assert rc == 1, err
    # the log is where the product says
    log_file = isolated_env / "logs" / "autopatch.log"
    assert llm_stub.requests_for("extraction") and llm_stub.requests_for("extraction_repair")
    failed = query(db_path(repo), "SELECT id FROM memory_jobs WHERE status = 'failed'")
    assert failed, "the planted replies should have failed the extraction"
    # a bug's exception text never reaches the log either
    from autopatch_tui.core.agent import chat as chat_module

    def boom(self, *a, **k):
        raise RuntimeError(f"{EXCEPTION_TEXT} {API_KEY} {QUOTE}")

    monkeypatch.setattr(chat_module.ChatService, "ask", boom)
    rc, out, err = invoke_cli("ask", QUOTE, "--intent", "general_chat", env=env)
    assert rc == 1 and "Traceback" not in err
    assert f"unexpected error (RuntimeError); see the log at {log_file}" in err
    assert EXCEPTION_TEXT not in err
    rc, out, err = invoke_cli("memory", "status", env=env)
    assert rc == 0, err
    logging.getLogger("autopatch_tui").handlers[-1].flush()

    text = log_file.read_text(encoding="utf-8")
    for secret in PLANTED:
        assert secret not in text, f"{secret!r} reached the log"
    assert "127.0.0.1" not in text
    # safe structure that is there
    assert "command ask exit 1" in text and "command memory status exit 0" in text
    assert "ProviderError category=transient_provider status_code=500" in text  # the failing turns
    assert f"job {failed[0]['id']}: failed (category=" in text  # the failing job, by ID and category
    assert "command ask crashed [RuntimeError]" in text
    if debug:
        assert " DEBUG " in text and "command ask started" in text
        assert "chat_cmds.py:" in text  # a crash's frames, never its text
    else:
        assert " DEBUG " not in text and "chat_cmds.py:" not in text
    assert _mode(log_file) == 0o600 and _mode(log_file.parent) == 0o700


def test_the_log_rotates_and_every_file_is_private(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 400)
    home = tmp_path / "state"
    path = logs.setup_file_log(load_settings({"AUTOPATCH_HOME": str(home)}))
    assert path == home / "logs" / "autopatch.log"
    log = logging.getLogger("autopatch_tui.test")
    for n in range(40):
        log.info("line %d of safe structure", n)
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["autopatch.log", "autopatch.log.1", "autopatch.log.2", "autopatch.log.3"]
    assert all(_mode(p) == 0o600 for p in path.parent.iterdir())
    assert _mode(path.parent) == 0o700 and _mode(home) == 0o700
    # set up again for the same home: still one handler
    logs.setup_file_log(load_settings({"AUTOPATCH_HOME": str(home)}))
    ours = [h for h in logging.getLogger("autopatch_tui").handlers if isinstance(h, logs.PrivateRotatingFileHandler)]
    assert len(ours) == 1


def test_without_autopatch_home_the_log_is_in_the_platformdirs_data_dir(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("AUTOPATCH_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = load_settings()
    path = logs.setup_file_log(settings)
    assert path == settings.home / "logs" / "autopatch.log"
    assert path == tmp_path / "data" / "autopatch-tui" / "logs" / "autopatch.log"
    logging.getLogger("autopatch_tui.test").info("hello")
    assert "hello" in path.read_text(encoding="utf-8")


def test_a_symlinked_logs_folder_is_never_written_through(tmp_path) -> None:
    home = tmp_path / "state"
    home.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "logs").symlink_to(elsewhere, target_is_directory=True)
    assert logs.setup_file_log(load_settings({"AUTOPATCH_HOME": str(home)})) is None
    logging.getLogger("autopatch_tui.test").warning("must not land elsewhere")
    assert list(elsewhere.iterdir()) == []


def test_the_filter_reduces_exceptions_and_masks_configured_secrets() -> None:
    f = logs.SafeRecords((API_KEY, ENDPOINT_PATH), debug=False)
    try:
        raise ValueError(f"{PROVIDER_BODY}")
    except ValueError as exc:
        record = logging.LogRecord("autopatch_tui.x", logging.ERROR, __file__, 1, "failed %s with %s",
                                   (exc, f"key {API_KEY} at /{ENDPOINT_PATH}/v1"), (type(exc), exc, exc.__traceback__))
    assert f.filter(record)
    line = logging.Formatter("%(message)s").format(record)
    assert line == "failed ValueError with key [redacted] at /[redacted]/v1 [ValueError]"


def test_a_sqlite_error_is_logged_by_its_result_code_never_its_message() -> None:
    """A database error must be diagnosable from the log (which result code) without its message,
    which can quote SQL or a path."""
    import sqlite3

    f = logs.SafeRecords(debug=False)
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("BEGIN")
        conn.execute("BEGIN")
    except sqlite3.OperationalError as exc:
        record = logging.LogRecord("autopatch_tui.x", logging.ERROR, __file__, 1, "worker failed: %s", (exc,),
                                   (type(exc), exc, exc.__traceback__))
    finally:
        conn.close()
    assert f.filter(record)
    line = logging.Formatter("%(message)s").format(record)
    assert line == ("worker failed: OperationalError sqlite_errorname=SQLITE_ERROR"
                    " [OperationalError sqlite_errorname=SQLITE_ERROR]")
    assert "transaction" not in line
