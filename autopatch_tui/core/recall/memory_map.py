"""The Memory Map: a synthetic context message (never persisted) with two lanes.

- standing lane: active `always` items whose applies-to paths cover the request scope;
- relevant lane: `on_match` items that match the query lexically, ranked by path specificity then a
  deterministic lexical tuple.
Each lane gets its own share of the token budget so hundreds of standing items cannot starve the
relevant lane; a lane's unused share goes to the other. What does not fit is counted as omitted
and stays reachable through `memory_search`. No hit → no padding."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.recall.matching import Match, lexical_matches, standing_items
from autopatch_tui.core.recall.memo import memo
from autopatch_tui.core.recall.query import RecallPolicy, RecallQuery

MAX_STATEMENT_CHARS = 240
STANDING_SHARE = 0.5


def item_line(m: Match) -> str:
    r = m.row
    statement = r["statement"]
    if len(statement) > MAX_STATEMENT_CHARS:
        statement = statement[: MAX_STATEMENT_CHARS - 1] + "…"
    return f"- [{r['logical_id']}] {r['kind']} ({r['strength']}): {r['subject']} — {statement}"


@dataclass
class MemoryMap:
    standing: list[Match] = field(default_factory=list)
    relevant: list[Match] = field(default_factory=list)
    omitted_standing: int = 0
    omitted_relevant: int = 0

    @property
    def ids(self) -> list[str]:
        return [m.row["logical_id"] for m in self.standing + self.relevant]

    @property
    def empty(self) -> bool:
        return not self.standing and not self.relevant and not (self.omitted_standing or self.omitted_relevant)

    def render(self) -> str:
        if self.empty:
            return ""
        lines = ["Project Memory Map (program-selected; current user instructions and current source code win "
                 "over Memory; use memory_read(id) for details, memory_search(query) for more):"]
        if self.standing:
            lines.append("Standing:")
            lines += [item_line(m) for m in self.standing]
        if self.relevant:
            lines.append("Relevant:")
            lines += [item_line(m) for m in self.relevant]
        omitted = self.omitted_standing + self.omitted_relevant
        if omitted:
            lines.append(f"({omitted} more matching item(s) omitted for space: "
                         f"{self.omitted_standing} standing, {self.omitted_relevant} relevant)")
        return "\n".join(lines)


class _Lane:
    """A lane's ranked matches with their line costs. Greedy fill in rank order: an item that does
    not fit is skipped and a later, shorter one may still fit. The exact cost (the token estimate of
    the rendered line) is computed only for an item whose cheap lower bound fits: every character
    weighs at least a quarter token, so ceil(len(line) / 4) + 1 never exceeds the exact cost."""

    def __init__(self, matches: list[Match]) -> None:
        self.matches = matches
        self.bounds = [_lower_bound(m) for m in matches]
        self.exact: list[int | None] = [None] * len(matches)
        # the cheapest bound from each position on: once the room left is below it, nothing later fits
        self.suffix_min = self.bounds[:]
        for i in range(len(self.bounds) - 2, -1, -1):
            self.suffix_min[i] = min(self.suffix_min[i], self.suffix_min[i + 1])

    def fill(self, budget: int) -> tuple[list[Match], int]:
        kept: list[Match] = []
        used = 0
        for i, m in enumerate(self.matches):
            if budget - used < self.suffix_min[i]:
                break
            if used + self.bounds[i] > budget:
                continue
            cost = self.exact[i]
            if cost is None:
                cost = self.exact[i] = estimate_tokens(item_line(m)) + 1
            if used + cost > budget:
                continue
            kept.append(m)
            used += cost
        return kept, used


_LINE_FIXED_CHARS = len("- [] (): — ") + 2  # the separators of item_line


def _lower_bound(m: Match) -> int:
    r = m.row
    chars = (_LINE_FIXED_CHARS + len(r["logical_id"]) + len(r["kind"]) + len(r["strength"]) + len(r["subject"])
             + min(len(r["statement"]), MAX_STATEMENT_CHARS))
    return (chars + 3) // 4 + 1


def _standing_lane(conn: sqlite3.Connection, policy: RecallPolicy, paths: tuple[str, ...]) -> tuple[_Lane, frozenset]:
    """The standing lane of one policy and scope, precomputed once per Memory version (`memo`): its
    ranked items, their line-cost bounds and (filled in lazily) exact costs. A request then walks it
    only until its budget is spent (`_Lane.fill` stops when nothing later can fit), so its cost does
    not grow with the number of `always` items beyond what fits."""
    cache = memo(conn).setdefault("standing_lane", {})
    key = (policy, paths)
    hit = cache.get(key)
    if hit is None:
        standing = standing_items(conn, policy, paths)
        hit = cache[key] = (_Lane(standing), frozenset(m.row["row_id"] for m in standing))
    return hit


def build_map(conn: sqlite3.Connection, query: RecallQuery, policy: RecallPolicy, *, budget_tokens: int) -> MemoryMap:
    paths = query.paths
    s_lane, standing_ids = _standing_lane(conn, policy, paths)
    standing = s_lane.matches
    relevant = [m for m in lexical_matches(conn, query.base_terms(), policy, paths,
                                                  query.base_phrase_keys())
                if m.row["row_id"] not in standing_ids and m.row["recall_mode"] == "on_match"]
    r_lane = _Lane(relevant)
    share = int(budget_tokens * STANDING_SHARE)
    # each lane first within its share; then what one lane left unused goes to the other
    s_kept, s_used = s_lane.fill(share)
    r_kept, r_used = r_lane.fill(budget_tokens - share)
    spare = budget_tokens - s_used - r_used
    if spare > 0 and len(r_kept) < len(relevant):
        r_kept, r_used = r_lane.fill(budget_tokens - share + max(0, share - s_used))
    if spare > 0 and len(s_kept) < len(standing):
        s_kept, s_used = s_lane.fill(budget_tokens - r_used)
    return MemoryMap(s_kept, r_kept, len(standing) - len(s_kept), len(relevant) - len(r_kept))
