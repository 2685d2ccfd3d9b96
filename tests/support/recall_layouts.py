"""What the recall-layout tests compare: every spec row, the old rows, and recall results (searches,
Maps, the consolidation's related items) against the naive scan."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import schema
from autopatch_tui.core.pipeline import consolidation
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from autopatch_tui.core.settings import load_settings
from tests.support.fixtures import make_git_repo
from tests.support.recall_seed import active_thread, map_keys, naive_map, naive_search

QUERIES = ["backward compatibility", "我们要不要向后兼容", "what about the legacy config keys", "disk cache loader",
           "parse_user_config in python", "release train friday", "config loader", "why does no-unused-vars fire",
           "兼容旧配置怎么处理", "the the of"]


def fully_healthy(db: Path) -> bool:
    """The open-time check *and* the deep check (b-trees, CHECKs, the recall rules, foreign keys,
    duplicate identities): `inspect_store` alone is only the open-time check since issue 23."""
    from autopatch_tui.core.memory.deep_check import deep_problem
    from autopatch_tui.core.memory.health import inspect_store

    health = inspect_store(db, then=deep_problem)
    assert health.read is None, health.read
    return health.healthy


def spec_rows(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every row of every spec table (all but the recall index), in a stable order."""
    tables = [t for t in schema.TABLES if not t.startswith("recall_")]
    return {t: sorted(map(tuple, conn.execute(f"SELECT * FROM {t}").fetchall()), key=repr) for t in tables}


def old_rows(conn: sqlite3.Connection) -> set[tuple]:
    return set(map(tuple, conn.execute("SELECT * FROM recall_terms").fetchall()))


def layout_state(conn: sqlite3.Connection) -> str | None:
    return schema.recall_layout(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))


def _requests(conn: sqlite3.Connection, queries: list[str]) -> list[tuple[str, object, RecallQuery, str]]:
    """(intent, policy, Map query, text) per query: ordinary and repair alternate, some scoped."""
    thread = active_thread(conn)
    out = []
    for n, text in enumerate(queries):
        intent = ("general_chat", "code_audit")[n % 2]
        out.append((intent, policy_for(intent, thread), RecallQuery(intent, text, ("src/cache/x.py",) if n % 3 == 0
                                                                     else ()), text))
    return out


def recall(conn: sqlite3.Connection, queries: list[str] = QUERIES) -> list[object]:
    """Searches and Maps for `queries`, plus the consolidation's related items."""
    out: list[object] = []
    for intent, policy, q, text in _requests(conn, queries):
        session = RecallSession(lambda: conn, RecallQuery(intent, ""), policy)
        out.append(session.search(text))
        out.append(map_keys(build_map(conn, q, policy, budget_tokens=600)))
        cand = consolidation.Candidate("probe", None, {"kind": "project_decision", "subject": text,
                                                       "applies_to_paths": [], "aliases": [], "keywords": []}, [])
        out.append([r["logical_id"] for r in consolidation.related_items(conn, [cand])])
    return out


def naive(conn: sqlite3.Connection, queries: list[str] = QUERIES) -> list[object]:
    out: list[object] = []
    for intent, policy, q, text in _requests(conn, queries):
        out.append(naive_search(conn, RecallQuery(intent, ""), policy, text))
        out.append(map_keys(naive_map(conn, q, policy, budget_tokens=600)))
    return out


def without_related(results: list[object]) -> list[object]:
    return [r for n, r in enumerate(results) if n % 3 != 2]


def open_manager(repo: Path) -> MemoryManager:
    return MemoryManager(repo, load_settings(), register=False)


def copy_store(src: Path, dest_root: Path) -> Path:
    """A new repository at `dest_root/project` holding a copy of `src`'s store folder."""
    repo = make_git_repo(dest_root / "project")
    shutil.copytree(src / ".autopatch-j", repo / ".autopatch-j", dirs_exist_ok=True)
    return repo
