"""`RecallSession`: the request-local recall state of one agent request.

Bound at `begin_turn` to its thread, policy and base query, it serves the Map, `memory_search`
(≤ 4 distinct queries, ≤ 8 results each, a repeat is free) and `memory_read` (only IDs the Map,
a search or a loaded instruction file's promoted bullets exposed, ≤ 8 distinct IDs; the policy —
approval mode's kept revisions, a repair request's paths — is checked again at read time). Every tool result draws from one recall token pool.
`close()` clears the readable-ID set; nothing here outlives the request."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.memory.items import item_sources
from autopatch_tui.core.recall.matching import (
    applicability,
    lexical_matches,
    policy_filter_sql,
)
from autopatch_tui.core.recall.memory_map import MemoryMap, build_map
from autopatch_tui.core.recall.query import RecallPolicy, RecallQuery
from autopatch_tui.core.recall.terms import normalize_text
from autopatch_tui.core.secrets import mask

MAX_SEARCHES = 4
MAX_RESULTS = 8
MAX_READS = 8
DEFAULT_POOL_TOKENS = 6000
DEFAULT_MAP_TOKENS = 1500
MAX_READ_CONTENT_CHARS = 2000
MAX_READ_QUOTE_CHARS = 300
MAX_READ_SOURCES = 4


def _inapplicable(row: sqlite3.Row, policy: RecallPolicy, paths: tuple[str, ...]) -> bool:
    """The policy's path rule, rechecked at read time (the item may have been revised since it was
    exposed): a repair request reads only items whose applies-to paths cover its scope."""
    if not policy.require_path_applicability:
        return False
    spec = applicability(row, paths)
    return spec is None or spec < 0


class RecallLimitError(Exception):
    """A tool call exceeded a request limit; the message is shown to the model."""


@dataclass
class RecallSession:
    conn_factory: object  # callable returning a sqlite3.Connection
    query: RecallQuery
    policy: RecallPolicy
    pool_tokens: int = DEFAULT_POOL_TOKENS
    map_tokens: int = DEFAULT_MAP_TOKENS
    map_leaves: frozenset[int] = frozenset()  # row IDs the Map leaves out (promoted into a loaded instruction file)
    readable: set[str] = field(default_factory=set)
    searches: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    reads: dict[str, dict[str, object]] = field(default_factory=dict)
    closed: bool = False
    # what reached the request (issue 31.3): (logical ID, revision row ID `memory_items.id`, how, via),
    # IDs only, never text; the revision numbers are looked up once when the request ends
    used: list[tuple[str, str, str, str | None]] = field(default_factory=list)

    def _conn(self) -> sqlite3.Connection:
        if self.closed:
            raise RecallLimitError("this request has ended")
        return self.conn_factory()  # type: ignore[operator]

    def _spend(self, payload: object) -> None:
        cost = estimate_tokens(json.dumps(payload, ensure_ascii=False))
        if cost > self.pool_tokens:
            raise RecallLimitError("the recall token budget of this request is used up")
        self.pool_tokens -= cost

    def memory_map(self) -> MemoryMap:
        mm = build_map(self._conn(), self.query, self.policy, budget_tokens=self.map_tokens, leave=self.map_leaves)
        self.readable.update(mm.ids)
        self.used += [(m.row["logical_id"], m.row["id"], "standing", None) for m in mm.standing]
        self.used += [(m.row["logical_id"], m.row["id"], "matched", None) for m in mm.relevant]
        return mm

    def expose(self, ids: Iterable[str]) -> None:
        """IDs the request's prompt shows outside the Map and the searches (the keys of the promoted
        bullets of its instruction files): `memory_read` takes them, under the same checks."""
        self.readable.update(ids)

    def search(self, text: str) -> list[dict[str, str]]:
        key = normalize_text(text)
        if not key:
            raise RecallLimitError("memory_search needs a non-empty query")
        if key in self.searches:
            return self.searches[key]
        if len(self.searches) >= MAX_SEARCHES:
            raise RecallLimitError(f"at most {MAX_SEARCHES} different memory_search queries per request")
        matches = lexical_matches(self._conn(), self.query.merged_terms(text), self.policy, self.query.paths,
                                  self.query.merged_phrase_keys(text))
        results = [{"id": m.row["logical_id"], "kind": m.row["kind"], "subject": m.row["subject"],
                    "statement": mask(m.row["statement"]), "match_type": m.match_type} for m in matches[:MAX_RESULTS]]
        self._spend(results)
        self.searches[key] = results
        self.used += [(m.row["logical_id"], m.row["id"], "matched", None) for m in matches[:MAX_RESULTS]]
        self.readable.update(r["id"] for r in results)
        return results

    def read(self, item_id: str) -> dict[str, object]:
        item_id = item_id.strip()
        if item_id in self.reads:
            return self.reads[item_id]
        if item_id not in self.readable:
            raise RecallLimitError("memory_read only accepts IDs shown in this request's Memory Map, searches or "
                                   "instruction files")
        if len(self.reads) >= MAX_READS:
            raise RecallLimitError(f"at most {MAX_READS} different memory_read IDs per request")
        clause, args = policy_filter_sql(self.policy)
        conn = self._conn()
        row = conn.execute(
            f"SELECT m.* FROM memory_items m WHERE m.logical_id = ? AND m.status = 'active' AND {clause}",
            [item_id, *args],
        ).fetchone()
        if row is None or not self.policy.allows(row["id"]) or _inapplicable(row, self.policy, self.query.paths):
            raise RecallLimitError("that Memory item is not available to this request")
        # an item older than the `secret` rule may hold one: masked before any cut (contracts §10)
        content = mask(row["content"])
        if len(content) > MAX_READ_CONTENT_CHARS:
            content = content[:MAX_READ_CONTENT_CHARS] + "…"
        sources = [{"role": s.role, "quote": mask(s.quote)[:MAX_READ_QUOTE_CHARS]}
                   for s in item_sources(conn, row["row_id"])[-MAX_READ_SOURCES:]]
        detail: dict[str, object] = {
            "id": row["logical_id"], "revision": row["revision"], "kind": row["kind"], "subject": mask(row["subject"]),
            "statement": mask(row["statement"]), "content": content, "strength": row["strength"],
            "origin": row["origin"], "recall_mode": row["recall_mode"],
            "applies_to_paths": loads_column(row["applies_to_paths"], []),
            "aliases": loads_column(row["aliases"], []), "keywords": loads_column(row["keywords"], []),
            "provenance": sources,
        }
        self._spend(detail)
        self.reads[item_id] = detail
        self.used.append((row["logical_id"], row["id"], "read", None))
        return detail

    def close(self) -> None:
        self.closed = True
        self.readable.clear()
        self.searches.clear()
        self.reads.clear()
