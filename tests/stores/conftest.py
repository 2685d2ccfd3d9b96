"""Fixtures of the duplicate-store tests.

* `open_mgr(path, settings=None)` – a `MemoryManager` on a checkout (registered in the per-user
  registry as the app does); closed after the test unless closed earlier.
* `model_settings` – settings whose Memory model is the `llm_stub` server (no SDK retries).
* `pair` – two seeded checkouts A (source) and B (target), see below.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import FakeClock
from tests.support.llm_stub import StubLLMServer
from tests.support.pipeline_helpers import stub_settings
from tests.support.store_helpers import add_item, checkout, db_of, name_of, seed_project


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def open_mgr(settings: Settings) -> Iterator[Callable[..., MemoryManager]]:
    made: list[MemoryManager] = []

    def make(path: Path, s: Settings | None = None, *, clock: object = None) -> MemoryManager:
        mgr = MemoryManager.open(path, s or settings, clock=clock)  # type: ignore[arg-type]
        made.append(mgr)
        return mgr

    yield make
    for mgr in reversed(made):
        mgr.close(join_timeout=5)


@pytest.fixture
def model_settings(llm_stub: StubLLMServer) -> Settings:
    return stub_settings(llm_stub, max_retries=0, timeout=5.0)


def _lease_one_job(db: Path) -> str:
    conn = sqlite3.connect(str(db), isolation_level=None, timeout=30)
    try:
        job = conn.execute("SELECT id FROM memory_jobs WHERE kind = 'extraction' ORDER BY rowid LIMIT 1").fetchone()[0]
        conn.execute("UPDATE memory_jobs SET status = 'leased', lease_owner = 'gone:1:x', lease_expires_at = 1e12,"
                     " lease_generation = 1, attempts = 1 WHERE id = ?", (job,))
        return job
    finally:
        conn.close()


@pytest.fixture
def pair(tmp_path, open_mgr, clock) -> SimpleNamespace:
    """Two checkouts of different projects, each with two threads of turns, items with provenance
    and pending jobs. A holds an item identical to one of B's and one conflicting with one of B's.
    Every manager is closed (the files are at rest)."""
    a = checkout(tmp_path, "alpha", remote="https://example.com/org/alpha.git")
    b = checkout(tmp_path, "beta", remote="https://example.com/org/beta.git")
    ma, mb = open_mgr(a, clock=clock), open_mgr(b, clock=clock)
    sa = seed_project(ma, tag="a", subjects=["only in alpha", "release checklist"])
    sb = seed_project(mb, tag="b", subjects=["only in beta"])
    same_a = add_item(ma, "build system", "Use make for every build.")
    same_b = add_item(mb, "build system", "Use make for every build.")
    conflict_a = add_item(ma, "indentation", "Use tabs.")
    conflict_b = add_item(mb, "indentation", "Use four spaces.")
    talk_a = add_item(ma, "current refactor", "We are splitting the parser.", kind="discussion_context")
    a_active_thread = ma.active_thread_id()
    b_active_thread = mb.active_thread_id()
    ma.close()
    mb.close()
    leased = _lease_one_job(db_of(a))
    return SimpleNamespace(a=a, b=b, na=name_of(a), nb=name_of(b), adb=db_of(a), bdb=db_of(b), sa=sa, sb=sb,
                           same_a=same_a, same_b=same_b, conflict_a=conflict_a, conflict_b=conflict_b,
                           talk_a=talk_a, a_thread=a_active_thread, b_thread=b_active_thread, leased=leased)
