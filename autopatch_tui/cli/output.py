"""Printing for the CLI: `--json` prints exactly one JSON document on stdout — on failure too
(`{"error": {"code": EXIT_CODE, "message": str}}`, contracts §4); human text goes to stdout;
warnings and errors go to stderr. Every line shows control characters as escapes (text from a
store, a model or a label is never written raw to the terminal)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from autopatch_tui.core.terminal_text import escape_controls, json_text


class _Run:
    """What one CLI run printed so far (the in-process entry point runs several in one process)."""

    json_mode = False
    json_written = False


RUN = _Run()


def start_run(*, json_mode: bool) -> None:
    RUN.json_mode = json_mode
    RUN.json_written = False


def emit_json(value: Any) -> None:
    if hasattr(value, "model_dump"):  # a contract shape (or a pydantic model): its JSON document
        value = value.model_dump(mode="json")
    RUN.json_written = True
    sys.stdout.write(json_text(json.dumps(value, ensure_ascii=False)) + "\n")
    sys.stdout.flush()


def emit_json_stream(key: str, entries: Iterable[Any], tail: dict[str, Any]) -> None:
    """One JSON document `{key: [entries...], **tail}` written entry by entry: constant memory for a
    listing of any length (`memory list --json` at 100k items). The same text `emit_json` would
    print, but for the line breaks between entries."""
    RUN.json_written = True
    out = sys.stdout
    out.write("{" + json.dumps(key) + ": [")
    for n, value in enumerate(entries):
        out.write(("," if n else "") + "\n" + json_text(json.dumps(value, ensure_ascii=False)))
    rest = json.dumps(tail, ensure_ascii=False)[1:]  # '"next": null}' (or '}' for an empty tail)
    out.write("]" + (", " + rest if tail else "}") + "\n")
    out.flush()


def say(text: str = "") -> None:
    sys.stdout.write(escape_controls(text) + "\n")
    sys.stdout.flush()


def warn(text: str) -> None:
    sys.stderr.write(f"warning: {escape_controls(text)}\n")
    sys.stderr.flush()


def error(text: str) -> None:
    sys.stderr.write(f"error: {escape_controls(text)}\n")
    sys.stderr.flush()


def fail(code: int, message: str, *hints: str) -> int:
    """A failed command: its line (and hints) on stderr and, with `--json`, its one JSON error
    document on stdout (unless the command already printed its document). Returns `code`."""
    error(message)
    for hint in hints:
        error(hint)
    if RUN.json_mode and not RUN.json_written:
        emit_json({"error": {"code": code, "message": message}})
    return code
