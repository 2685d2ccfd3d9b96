"""Deterministic lexical matching over the SQLite term index — never a scan of every item.

A stored phrase (subject, alias, keyword, check ID) matches when all its terms are among the
query terms; content matches with at least two distinct terms. Candidates are then filtered by the
request policy inside SQL (kind, status, discussion thread) and by path applicability."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from autopatch_tui.core.recall.query import RecallPolicy
from autopatch_tui.core.recall.terms import path_covers, path_specificity

FIELD_RANK = {"check_id": 5, "subject": 4, "alias": 3, "keyword": 2, "content": 1}
MATCH_TYPES = {5: "check_id", 4: "subject", 3: "alias", 2: "keyword", 1: "content"}


@dataclass(frozen=True)
class Match:
    row: sqlite3.Row
    best_field: int  # FIELD_RANK of the strongest matching field
    phrases: int  # matched phrases (content counts its matched terms)
    specificity: int  # path specificity; -1 when the item is scoped to paths outside the request

    @property
    def match_type(self) -> str:
        return MATCH_TYPES[self.best_field] if self.best_field else "standing"

    def sort_key(self) -> tuple:
        return (-self.specificity, -self.best_field, -self.phrases, self.row["logical_id"])


def policy_filter_sql(policy: RecallPolicy) -> tuple[str, list[object]]:
    kinds = [k for k in policy.kinds if k != "discussion_context"]
    clause = f"(m.kind IN ({','.join('?' * len(kinds))})" if kinds else "(0"
    args: list[object] = list(kinds)
    if policy.discussion_thread is not None:
        clause += " OR (m.kind = 'discussion_context' AND m.thread_id = ?)"
        args.append(policy.discussion_thread)
    return clause + ")", args


def applicability(row: sqlite3.Row, paths: tuple[str, ...]) -> int | None:
    """Path specificity of the item for the request scope: 0 project-wide, higher = more specific,
    -1 scoped elsewhere (None when the policy requires applicability and it does not apply)."""
    applies = json.loads(row["applies_to_paths"])
    if not applies:
        return 0
    if not paths:
        return -1
    best = -1
    for a in applies:
        if any(path_covers(a, p) for p in paths):
            best = max(best, path_specificity(a))
    return best


def lexical_matches(conn: sqlite3.Connection, terms: list[str], policy: RecallPolicy,
                    paths: tuple[str, ...]) -> list[Match]:
    if not terms:
        return []
    values = ",".join("(?)" for _ in terms)
    hits = conn.execute(
        f"WITH q(term) AS (VALUES {values}) "
        f"SELECT rt.item_row_id AS row_id, rt.field AS field, rt.phrase AS phrase, rt.need AS need, "
        f"count(*) AS hit FROM recall_terms rt JOIN q ON rt.term = q.term "
        f"GROUP BY rt.item_row_id, rt.field, rt.phrase HAVING count(*) >= rt.need",
        terms,
    ).fetchall()
    per_item: dict[int, tuple[int, int]] = {}
    for h in hits:
        if h["field"] == "content" and h["hit"] < 2:
            continue
        rank = FIELD_RANK.get(h["field"], 0)
        if not rank:
            continue
        best, count = per_item.get(h["row_id"], (0, 0))
        per_item[h["row_id"]] = (max(best, rank), count + (h["hit"] if h["field"] == "content" else 1))
    if not per_item:
        return []
    return _load(conn, per_item, policy, paths)


def _load(conn: sqlite3.Connection, per_item: dict[int, tuple[int, int]], policy: RecallPolicy,
          paths: tuple[str, ...]) -> list[Match]:
    clause, args = policy_filter_sql(policy)
    ids = list(per_item)
    out: list[Match] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        rows = conn.execute(
            f"SELECT m.* FROM memory_items m WHERE m.row_id IN ({','.join('?' * len(chunk))})"
            f" AND m.status = 'active' AND {clause}", [*chunk, *args]
        ).fetchall()
        for r in rows:
            spec = applicability(r, paths)
            if spec is None or (spec < 0 and policy.require_path_applicability):
                continue
            best, count = per_item[r["row_id"]]
            out.append(Match(r, best, count, spec))
    out.sort(key=Match.sort_key)
    return out


def standing_items(conn: sqlite3.Connection, policy: RecallPolicy, paths: tuple[str, ...]) -> list[Match]:
    """Active `always` items whose applies-to paths cover the request scope (no term match needed)."""
    clause, args = policy_filter_sql(policy)
    rows = conn.execute(
        f"SELECT m.* FROM memory_items m WHERE m.status = 'active' AND m.recall_mode = 'always' AND {clause}", args
    ).fetchall()
    out = []
    for r in rows:
        spec = applicability(r, paths)
        if spec is None or spec < 0:
            continue
        out.append(Match(r, 0, 0, spec))
    out.sort(key=Match.sort_key)
    return out
