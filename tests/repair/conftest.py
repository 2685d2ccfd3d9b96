"""Repair workflow tests: the agent fixtures (a manager whose model is the scripted stub) plus
Python sources Ruff flags (`MESSAGES`: Ruff's own words for the rules they trip)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.repair.workflows import RepairService
from autopatch_tui.core.repair.workspace import ReviewState
from tests.agent.conftest import chat_mgr, model_env, open_manager  # noqa: F401  (fixtures)

SWALLOW = "def load(path):\n    try:\n        return open(path).read()\n    except:\n        pass\n"
MUTABLE = "def add(item, bucket=[]):\n    bucket.append(item)\n    return bucket\n"
CLEAN = "def double(x):\n    return 2 * x\n"
EVAL = "x = eval('1')\n"
MESSAGES = {  # ruff 0.17's messages (the pinned range)
    "S110": "`try`-`except`-`pass` detected, consider logging the exception",
    "B006": "Do not use mutable data structures for argument defaults",
    "S307": "Use of possibly insecure function; consider using `ast.literal_eval`",
}


def fake_tool(folder: Path, name: str, body: str) -> str:
    """An executable shell script standing in for an analyzer binary; its path."""
    path = folder / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def write(repo: Path, rel: str, text: str) -> Path:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def review() -> ReviewState:
    return ReviewState()


@pytest.fixture
def repair(chat_mgr: MemoryManager, review: ReviewState) -> RepairService:  # noqa: F811
    return RepairService(chat_mgr, review)
