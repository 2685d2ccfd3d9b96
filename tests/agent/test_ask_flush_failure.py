"""`ask` whose exit flush fails with an unexpected error (a bug, not a typed store error): the answer
is still printed, one warning names the log, and neither stderr nor the log shows a traceback or the
error's message (it may quote the user, contracts §6)."""

from __future__ import annotations

from autopatch_tui.core.logs import log_path
from autopatch_tui.core.pipeline import flush as flush_module

SECRET = "user said: secret plan"


def test_an_unexpected_error_in_the_exit_flush_warns_without_leaking(repo, model_env, llm_stub, invoke_cli,
                                                                    isolated_env, monkeypatch) -> None:
    def broken(runner):
        raise KeyError(SECRET)

    monkeypatch.setattr(flush_module, "exit_flush", broken)
    llm_stub.default("chat", "The build is slow because of the linker.")
    rc, out, err = invoke_cli("ask", "Why is the build slow?", "--intent", "general_chat")
    assert rc == 0, err  # the answer was given; the Memory jobs stay queued for the next start
    assert out == "The build is slow because of the linker.\n"
    log_file = log_path(isolated_env)
    assert err == f"warning: the Memory flush failed; see {log_file}\n"
    text = log_file.read_text("utf-8")
    assert "exit flush failed: KeyError" in text
    assert "secret plan" not in text and "Traceback" not in text
