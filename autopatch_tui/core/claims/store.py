"""The still-true check over a store: every active decision and preference (`memory audit`'s
`stale_claims`), and the doubts the Memory Map shows beside the items it lists."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.claims.check import StaleClaim, item_claims
from autopatch_tui.core.claims.manifests import RepoFacts, repo_facts

CHECKED_KINDS = ("user_preference", "project_decision")
MAX_DOUBT_CHARS = 160


def _applies(text: str) -> tuple[str, ...]:
    value = loads_column(text, None)  # json_valid only: maybe nested past what Python parses
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _text(row: sqlite3.Row) -> str:
    return "\n".join((row["subject"], row["statement"], row["content"]))


def stale_claims(conn: sqlite3.Connection, repo: Path) -> list[StaleClaim]:
    """Every contradicted claim of the active decisions and preferences, by logical ID."""
    facts = repo_facts(repo)
    out: list[StaleClaim] = []
    for row in conn.execute("SELECT logical_id, subject, statement, content, applies_to_paths FROM memory_items"
                            " WHERE status = 'active' AND kind IN (?, ?) ORDER BY logical_id", CHECKED_KINDS):
        for claim, evidence in item_claims(_text(row), facts, repo, _applies(row["applies_to_paths"])):
            out.append(StaleClaim(row["logical_id"], claim, evidence))
    return out


# revision ID -> its doubt ("" when none), for the facts the entry was computed with
_doubts: dict[str, tuple[RepoFacts, str]] = {}
_lock = threading.Lock()
MAX_CACHED = 4096


def doubt_words(claims: list[tuple[str, str]]) -> str:
    """`says pnpm (javascript package manager); package-lock.json exists, no pnpm-lock.yaml`, bounded."""
    text = " · ".join(f"says {claim}; {evidence}" for claim, evidence in claims)
    return text if len(text) <= MAX_DOUBT_CHARS else text[:MAX_DOUBT_CHARS - 1] + "…"


def doubts(repo: Path, rows: Iterable[sqlite3.Row], contents: dict[str, str] | None = None) -> dict[str, str]:
    """Logical ID -> the repository's disagreement, for the decisions and preferences among `rows`
    (a Map's items; `contents`: revision ID -> content, for rows without a `content` column). A
    revision's verdict is kept while the manifests' stat is unchanged; a path claim is decided then
    too (a path created later is seen when a manifest changes or the item is revised; `memory audit`
    always checks afresh)."""
    facts = repo_facts(repo)
    out: dict[str, str] = {}
    for row in rows:
        if row["kind"] not in CHECKED_KINDS:
            continue
        key = row["id"]
        with _lock:
            hit = _doubts.get(key)
        if hit is None or hit[0] is not facts:
            has_content = "content" in row.keys()  # noqa: SIM118 (`in` on a Row looks at its values)
            content = row["content"] if has_content else (contents or {}).get(key, "")
            text = "\n".join((row["subject"], row["statement"], content))
            words = doubt_words(item_claims(text, facts, repo, _applies(row["applies_to_paths"])))
            with _lock:
                if len(_doubts) >= MAX_CACHED:
                    _doubts.clear()
                _doubts[key] = (facts, words)
        else:
            words = hit[1]
        if words:
            out[row["logical_id"]] = words
    return out


def _uncached(rows: list[sqlite3.Row], facts: RepoFacts) -> list[str]:
    with _lock:
        return [r["id"] for r in rows if r["kind"] in CHECKED_KINDS
                and (_doubts.get(r["id"]) is None or _doubts[r["id"]][0] is not facts)]


def item_doubt(conn: sqlite3.Connection, repo: Path, logical_id: str) -> str:
    """The repository's disagreement with one active item ("" when none, or not checkable)."""
    row = conn.execute("SELECT id, logical_id, kind, subject, statement, content, applies_to_paths FROM memory_items"
                       " WHERE logical_id = ? AND status = 'active'", (logical_id,)).fetchone()
    return doubts(repo, [row]).get(logical_id, "") if row is not None else ""


def map_doubts(conn: sqlite3.Connection, repo: Path, rows: list[sqlite3.Row]) -> dict[str, str]:
    """`doubts` for a Memory Map's rows (which carry no content: it is read, in one query, only for
    revisions not judged yet); never fails a request (an unreadable repository: no doubts)."""
    try:
        missing = _uncached(rows, repo_facts(repo))
        contents: dict[str, str] = {}
        if missing:
            marks = ",".join("?" * len(missing))
            contents = dict(conn.execute(f"SELECT id, content FROM memory_items WHERE id IN ({marks})", missing))
        return doubts(repo, rows, contents)
    except (OSError, ValueError, sqlite3.Error):
        return {}


__all__ = ["CHECKED_KINDS", "doubt_words", "doubts", "item_doubt", "map_doubts", "stale_claims"]
