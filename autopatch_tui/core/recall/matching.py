"""Deterministic lexical matching over the SQLite term index — never a scan of every item.

The lexical gate (spec "无向量渐进检索"):
- a stored phrase (subject, one alias, one keyword, one check ID) matches when *all* its terms are
  among the query terms;
- the content (statement + content) matches when at least two distinct content terms are.

Document frequency. A query term indexed for more than `COMMON_TERM_ITEMS` active items is
*common*: it carries almost no evidence and its posting list is long. A common term still counts
toward completing a phrase (``config loader`` needs both words), but a phrase made only of common
terms does not match, and a common term never counts as one of the two content terms. So every
match is found from the postings of the query's non-common terms, and the cost of a query stays
around ``len(terms) * COMMON_TERM_ITEMS`` postings whatever the size of the store. A store with no more
than `COMMON_TERM_ITEMS` active items has no common term: the gate applies in full.

Candidates are then filtered by the request policy inside SQL (kind, status, discussion thread) and
by path applicability, and ranked by path specificity, then the lexical tuple
(strongest field, matched phrases + content hits, logical ID)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from functools import cache

from autopatch_tui.core import constants as C
from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.recall.memo import memo
from autopatch_tui.core.recall.query import RecallPolicy
from autopatch_tui.core.recall.paths import normalize_path, path_covers, path_specificity
from autopatch_tui.core.recall import layout_upgrade, phrase_index, postings
from autopatch_tui.core.recall.postings import Source

FIELD_RANK = dict(postings.FIELD)  # a field's rank is its stored code: content 1 … check ID 5
MATCH_TYPES = {rank: name for name, rank in FIELD_RANK.items()}
COMMON_TERM_ITEMS = 250
# what Match.row carries: exactly what the Map lines, search results and ranking read
ROW_COLUMNS = ("row_id", "id", "logical_id", "kind", "subject", "statement", "strength", "recall_mode", "applies_to_paths")
_SELECT = "SELECT " + ", ".join(f"m.{c}" for c in ROW_COLUMNS) + " FROM memory_items m"
_KNOWN_KINDS = C.ITEM_KINDS


@dataclass(frozen=True)
class Match:
    row: sqlite3.Row
    best_field: int  # FIELD_RANK of the strongest matching field
    phrases: int  # matched phrases (content counts its matched terms)
    specificity: int  # path specificity; -1 when the item is scoped to paths outside the request
    span: int = 0  # terms of the longest matched phrase (0: content only, or the standing lane)

    @property
    def match_type(self) -> str:
        return MATCH_TYPES[self.best_field] if self.best_field else "standing"

    def sort_key(self) -> tuple:
        return (-self.specificity, -self.span, -self.best_field, -self.phrases, self.row["logical_id"])


def policy_filter_sql(policy: RecallPolicy) -> tuple[str, list[object]]:
    kinds = [k for k in policy.kinds if k != "discussion_context"]
    clause = f"(m.kind IN ({','.join('?' * len(kinds))})" if kinds else "(0"
    args: list[object] = list(kinds)
    if policy.discussion_thread is not None:
        clause += " OR (m.kind = 'discussion_context' AND m.thread_id = ?)"
        args.append(policy.discussion_thread)
    return clause + ")", args


def path_applicability(applies_to_paths: str, paths: tuple[str, ...]) -> int:
    """Path specificity of an item (its JSON applies-to list) for the request scope: 0 project-wide,
    higher = more specific, -1 scoped elsewhere (or scoped while the request has no path)."""
    applies = applies_entries(applies_to_paths)
    if not applies:
        return 0
    if not paths:
        return -1
    best = -1
    for a in applies:
        if a is not None and any(path_covers(a, p) for p in paths):
            best = max(best, path_specificity(a))
    return best


def applicability(row: sqlite3.Row, paths: tuple[str, ...]) -> int | None:
    """`path_applicability` of a row (kept for callers that hold a row)."""
    return path_applicability(row["applies_to_paths"], paths)


UNIVERSAL, LITERAL, GLOB = 0, 1, 2
MAX_PARSED_APPLIES = 65536
_parsed_applies: dict[str, tuple[tuple[int, str, str, int], ...]] = {}


NOWHERE = "\x00"  # the pattern of an applies-to entry that is not a path: no path is ever it


def applies_entries(applies_to_paths: str) -> list[str | None]:
    """An applies-to JSON list's entries; None for one that is not a string (the schema checks only
    that the column is valid JSON, and a store can come from someone else's repository): such an
    entry covers no path, and a value that is not a list is one such entry, never "project-wide"."""
    data = loads_column(applies_to_paths, None)
    if not isinstance(data, list):
        return [None]
    return [entry if isinstance(entry, str) else None for entry in data]


def parsed_applies(applies_to_paths: str) -> tuple[tuple[int, str, str, int], ...]:
    """An applies-to JSON list as (kind, entry, normalized pattern, path specificity) per entry, where
    kind is UNIVERSAL (``""``, ``*``, ``**``: covers every path), LITERAL or GLOB. A pure function
    of its text, cached process-wide (many items share one list; bounded, starts over when full)."""
    hit = _parsed_applies.get(applies_to_paths)
    if hit is None:
        out = []
        for entry in applies_entries(applies_to_paths):
            if entry is None:
                out.append((LITERAL, NOWHERE, NOWHERE, 0))
                continue
            pattern = normalize_path(entry)
            kind = (UNIVERSAL if pattern in ("", "*", "**") else
                    GLOB if "*" in pattern or "?" in pattern else LITERAL)
            out.append((kind, entry, pattern, path_specificity(entry)))
        hit = tuple(out)
        if len(_parsed_applies) >= MAX_PARSED_APPLIES:
            _parsed_applies.clear()
        _parsed_applies[applies_to_paths] = hit
    return hit


class _Specificity:
    """`path_applicability` for one request: the scope is normalized once, literal applies-to
    entries are checked directly (globs go through `path_covers`), and results are cached per
    applies-to list (many items share one; the parsed lists are shared process-wide)."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        self.paths = paths
        self.targets = [t for t in (normalize_path(p) for p in paths)]
        self.seen: dict[str, int] = {"[]": 0}

    def _covers(self, kind: int, entry: str, pattern: str) -> bool:
        if kind == UNIVERSAL:
            return True
        if kind == GLOB:
            return any(path_covers(entry, p) for p in self.paths)
        prefix = pattern + "/"
        return any(t and (t == pattern or t.startswith(prefix)) for t in self.targets)

    def __call__(self, applies_to_paths: str) -> int:
        spec = self.seen.get(applies_to_paths)
        if spec is None:
            applies = parsed_applies(applies_to_paths)
            if not applies:
                spec = 0
            elif not self.paths:
                spec = -1
            else:
                spec = max((s for kind, entry, pattern, s in applies if self._covers(kind, entry, pattern)),
                           default=-1)
            self.seen[applies_to_paths] = spec
        return spec


# The gate in one statement of constant text per postings source (SQLite's statement cache keeps it
# prepared), given the IDs of the query's rare terms, common terms and phrase keys (JSON arrays).
# A posting's field is its rank (`postings.FIELD`: 1 is content):
#  g    postings of the rare terms grouped per (item, field, phrase); content needs two rare terms,
#       a phrase needs its remaining terms to be among the common ones;
#  h    such a phrase is completed by exact key lookups (term, field, item, phrase) of the common
#       query terms;
#  agg  per item: the strongest field and matched phrases + content hits;
#  then the policy filter (kind, discussion thread, status) on the item row, by rowid lookups
#  (NOT INDEXED: otherwise the planner may walk a (status, ...) index over every active item).
_LEXICAL_SQL = """
WITH rare(id) AS (SELECT value FROM json_each(:rare)),
common(id) AS MATERIALIZED (SELECT value FROM json_each(:common)),
keys(id) AS (SELECT value FROM json_each(:keys)),
g AS MATERIALIZED (
  SELECT p.item_row_id AS item, p.field AS field, p.phrase AS phrase, p.need AS need, count(*) AS hit
  FROM rare CROSS JOIN {postings} AS p ON p.term_id = rare.id
  GROUP BY p.item_row_id, p.field, p.phrase
  HAVING (p.field = 1 AND count(*) >= 2) OR (p.field > 1 AND count(*) + :ncommon >= p.need)),
h AS MATERIALIZED (
  SELECT item, field, phrase, need, CASE WHEN field = 1 OR hit >= need THEN hit ELSE hit + (
      SELECT count(*) FROM common c CROSS JOIN {postings} AS x
      ON x.term_id = c.id AND x.field = g.field AND x.item_row_id = g.item AND x.phrase = g.phrase) END AS total
  FROM g),
named AS MATERIALIZED (
  SELECT keys.id AS id FROM keys
  WHERE (SELECT count(*) FROM (SELECT 1 FROM {postings} AS k WHERE k.term_id = keys.id LIMIT :keycap + 1)) <= :keycap),
matched(item, field, phrase, total, need) AS (
  SELECT item, field, phrase, total, need FROM h WHERE field = 1 OR total >= need
  UNION
  SELECT k.item_row_id, k.field, k.phrase, k.need, k.need FROM named CROSS JOIN {postings} AS k ON k.term_id = named.id
  WHERE k.field > 1),
agg AS MATERIALIZED (
  SELECT item, max(field) AS best, sum(CASE WHEN field = 1 THEN total ELSE 1 END) AS hits,
    max(CASE WHEN field = 1 THEN 0 ELSE need END) AS span
  FROM matched GROUP BY item)
SELECT agg.best AS best, agg.hits AS hits, agg.span AS span, """ + ", ".join(f"m.{c} AS {c}" for c in ROW_COLUMNS) + """
FROM agg CROSS JOIN memory_items AS m NOT INDEXED ON m.row_id = agg.item
WHERE m.status = 'active' AND """


def _policy_sql(policy: RecallPolicy) -> tuple[str, dict[str, object]]:
    """The policy filter with named parameters (kinds are the fixed constants, inlined)."""
    kinds = [k for k in policy.kinds if k in _KNOWN_KINDS and k != "discussion_context"]
    clause = "(" + (f"m.kind IN ({', '.join(repr(k) for k in kinds)})" if kinds else "0")
    params: dict[str, object] = {}
    if policy.discussion_thread is not None:
        clause += " OR (m.kind = 'discussion_context' AND m.thread_id = :thread)"
        params["thread"] = policy.discussion_thread
    return clause + ")", params


def common_terms(conn: sqlite3.Connection, terms: list[str], index: Source | None = None,
                 ids: dict[str, int | str] | None = None) -> set[str]:
    """The query terms indexed for more than COMMON_TERM_ITEMS active items. Each count stops at
    COMMON_TERM_ITEMS + 1 items, so this reads a bounded number of index rows; counts are memoized
    while the database is unchanged (`memo`). `index` and `ids`: the postings source and the terms'
    IDs when the caller has them already."""
    if not terms:
        return set()
    known: dict[str, int] = memo(conn).setdefault("document_frequency", {})
    missing = [t for t in dict.fromkeys(terms) if t not in known]
    if missing:
        with layout_upgrade.reading(conn) as found:
            index = index or found
            if ids is None:
                ids = index.ids(conn, missing)
            counted = [t for t in missing if t in ids]
            rows = conn.execute(
                f"WITH q(id) AS (SELECT DISTINCT value FROM json_each(?)) SELECT q.id, (SELECT count(*) FROM"
                f" (SELECT DISTINCT p.item_row_id FROM {index.table} AS p WHERE p.term_id = q.id LIMIT ?)) FROM q",
                [json.dumps([ids[t] for t in counted], ensure_ascii=False), COMMON_TERM_ITEMS + 1],
            ).fetchall()
        by_id = dict(rows)
        known.update((t, by_id.get(ids[t], 0)) for t in counted)
        known.update((t, 0) for t in missing if t not in ids)  # never indexed: in no item
    return {t for t in terms if known[t] > COMMON_TERM_ITEMS}


def lexical_matches(conn: sqlite3.Connection, terms: list[str], policy: RecallPolicy,
                    paths: tuple[str, ...], keys: list[str] | tuple[str, ...] = ()) -> list[Match]:
    """Every active item the policy allows that passes the lexical gate, ranked. `keys` are the
    query's phrase keys (`phrase_index.query_phrase_keys`): a stored phrase whose key is among them
    matches however common its terms are (unless more than `PHRASE_KEY_ITEMS` phrases share it)."""
    terms = list(dict.fromkeys(terms))
    with layout_upgrade.reading(conn) as index:
        ids = index.ids(conn, [*terms, *keys])
        common = common_terms(conn, terms, index, ids)
        rare = [ids[t] for t in terms if t not in common and t in ids]
        key_ids = [ids[k] for k in dict.fromkeys(keys) if k in ids]
        if not rare and not key_ids:  # only common terms and no phrase: nothing can be found
            return []
        clause, params = _policy_sql(policy)
        rows = conn.execute(_lexical_sql(index.table) + clause, {
            "rare": json.dumps(rare, ensure_ascii=False),
            "common": json.dumps([ids[t] for t in terms if t in common], ensure_ascii=False),
            "ncommon": len(common), "keys": json.dumps(key_ids, ensure_ascii=False),
            "keycap": phrase_index.PHRASE_KEY_ITEMS, **params}).fetchall()
    spec_of = _Specificity(paths)
    kept = policy.kept  # approval mode: only revisions kept when the request started are recalled
    out: list[Match] = []
    for r in rows:
        if kept is not None and r["id"] not in kept:
            continue
        spec = spec_of(r["applies_to_paths"])
        if spec < 0 and policy.require_path_applicability:
            continue
        out.append(Match(r, r["best"], r["hits"], spec, r["span"]))
    out.sort(key=Match.sort_key)
    return out


@cache
def _lexical_sql(table: str) -> str:
    return _LEXICAL_SQL.replace("{postings}", table)


def standing_items(conn: sqlite3.Connection, policy: RecallPolicy, paths: tuple[str, ...]) -> list[Match]:
    """Active `always` items whose applies-to paths cover the request scope (no term match needed).
    Memoized per policy filter and scope while the database is unchanged (`memo`)."""
    clause, args = policy_filter_sql(policy)
    cache = memo(conn).setdefault("standing", {})
    key = (clause, tuple(args), paths)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = _standing(conn, clause, args, paths)
    kept = policy.kept
    return list(hit) if kept is None else [m for m in hit if m.row["id"] in kept]


def standing_rows(conn: sqlite3.Connection, kinds: tuple[str, ...], thread: str | None = None) -> list[sqlite3.Row]:
    """Every active `always` row of the project `kinds` (any scope), or, with `thread`, the active
    `always` discussions of that thread."""
    if thread is not None:
        return conn.execute(f"{_SELECT} WHERE m.status = 'active' AND m.recall_mode = 'always'"
                            " AND m.kind = 'discussion_context' AND m.thread_id = ?", (thread,)).fetchall()
    kinds = tuple(k for k in kinds if k in _KNOWN_KINDS and k != "discussion_context")
    if not kinds:
        return []
    return conn.execute(f"{_SELECT} WHERE m.status = 'active' AND m.recall_mode = 'always'"
                        f" AND m.kind IN ({','.join('?' * len(kinds))})", kinds).fetchall()


def _standing(conn: sqlite3.Connection, clause: str, args: list[object], paths: tuple[str, ...]) -> list[Match]:
    spec_of = _Specificity(paths)
    rows = conn.execute(
        f"{_SELECT} WHERE m.status = 'active' AND m.recall_mode = 'always' AND {clause}", args
    ).fetchall()
    out = []
    for r in rows:
        spec = spec_of(r["applies_to_paths"])
        if spec < 0:
            continue
        out.append(Match(r, 0, 0, spec))
    out.sort(key=Match.sort_key)
    return out
