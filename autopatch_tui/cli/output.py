"""Printing for the CLI: `--json` prints exactly one JSON document on stdout; human text goes to
stdout; warnings and errors go to stderr."""

from __future__ import annotations

import json
import sys
from typing import Any


def emit_json(value: Any) -> None:
    if hasattr(value, "model_dump"):  # a contract shape (or a pydantic model): its JSON document
        value = value.model_dump(mode="json")
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def warn(text: str) -> None:
    sys.stderr.write(f"warning: {text}\n")
    sys.stderr.flush()


def error(text: str) -> None:
    sys.stderr.write(f"error: {text}\n")
    sys.stderr.flush()
