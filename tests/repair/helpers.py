"""Helpers for the repair workflow tests: a scripted repair model for the stub (`Patcher`), readers
for the requests it received and for the stored turns."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.fixtures import db_path, query
from tests.support.llm_stub import CapturedRequest, Reply

FINDING_RE = re.compile(r"Finding (F\d+): (\S+) at (\S+):(\d+) — ")
FREE_TEXT = "done — MODEL-FREE-TEXT"  # the model's last words after a tool call; never in a summary
FIX_MARK = "  # fixed"


def user_message(request: CapturedRequest) -> str:
    return [m["content"] for m in request.messages if m["role"] == "user"][-1]


def finding_of(request: CapturedRequest) -> tuple[str, str, int]:
    """(finding ID, path, line) named by a patch / explain / revise request."""
    m = FINDING_RE.search(user_message(request))
    assert m is not None, user_message(request)
    return m.group(1), m.group(3), int(m.group(4))


def tool_names(request: CapturedRequest) -> set[str]:
    return {t["function"]["name"] for t in (request.body or {}).get("tools") or []}


def tool_results(request: CapturedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


def mode(request: CapturedRequest) -> str:
    names = tool_names(request)
    return "patch" if "propose_patch" in names else "review" if "report_finding" in names else "explain"


def line_fix(repo: Path, path: str, line: int, mark: str = FIX_MARK) -> tuple[str, str]:
    """A valid edit for the finding's line: the whole line, and the line with a comment appended."""
    text = (repo / path).read_text(encoding="utf-8").split("\n")[line - 1]
    return text, text + mark


def propose(finding_id: str, old_text: str, new_text: str) -> Reply:
    return Reply(tool_calls=[("propose_patch", json.dumps(
        {"finding_id": finding_id, "old_text": old_text, "new_text": new_text}))])


class Patcher:
    """The repair model: for a patch request (no tool result yet) it proposes `line_fix` for the
    named finding, then answers FREE_TEXT. `special[fid]` overrides the first reply for a finding
    (a Reply, or fn(request) -> reply). A review request reports `reports` (path, line, message)
    then answers; an explain request answers `explanation`."""

    def __init__(self, repo: Path, *, special: dict[str, Any] | None = None,
                 reports: list[tuple[str, int, str]] | None = None, explanation: str = "EXPLANATION") -> None:
        self.repo = repo
        self.special = dict(special or {})
        self.reports = list(reports or [])
        self.explanation = explanation

    def __call__(self, request: CapturedRequest) -> Any:
        if tool_results(request):
            return FREE_TEXT
        kind = mode(request)
        if kind == "review":
            if not self.reports:
                return "REVIEW-FREE-TEXT: nothing to report"
            return Reply(tool_calls=[("report_finding", json.dumps({"path": p, "line": n, "message": msg}))
                                     for p, n, msg in self.reports])
        if kind == "explain":
            return self.explanation
        fid, path, line = finding_of(request)
        if fid in self.special:
            spec = self.special[fid]
            return spec(request) if callable(spec) and not isinstance(spec, Reply) else spec
        return propose(fid, *line_fix(self.repo, path, line))


MARKUP = re.compile(r"\[/?[a-z #]+\]")  # Rich markup such as [bold] … [/bold]
TRACE = ("propose_patch", "report_finding", "read_file", "memory_search", "tool")


def assert_stable_summary(answer: str) -> None:
    """A workflow summary: built from the workspace, never the model's words or a tool trace."""
    assert FREE_TEXT not in answer and "done" not in answer.lower()
    assert not MARKUP.search(answer), answer
    for word in TRACE:
        assert word not in answer, word


def first_requests(stub) -> list:
    """The chat requests that opened an agent run (no tool result yet)."""
    return [r for r in stub.requests_for("chat") if not tool_results(r)]


def turns(repo: Path) -> list[dict[str, Any]]:
    """Every stored turn, in insertion order, JSON columns decoded."""
    rows = query(db_path(repo), "SELECT id, thread_id, state, intent, user_text, assistant_text, scope_paths,"
                                " evidence_keys FROM turns ORDER BY rowid")
    out = []
    for r in rows:
        row = dict(r)
        row["scope_paths"] = json.loads(row["scope_paths"])
        row["evidence_keys"] = json.loads(row["evidence_keys"])
        out.append(row)
    return out


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run `fn` in a daemon thread; the dict gets `result` or `error`."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box

