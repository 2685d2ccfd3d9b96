"""The Memory Map: a synthetic context message (never persisted) with two lanes.

- standing lane: active `always` items whose applies-to paths cover the request scope;
- relevant lane: `on_match` items that match the query lexically, ranked by path specificity then a
  deterministic lexical tuple.
Each lane gets its own share of the token budget so hundreds of standing items cannot starve the
relevant lane; a lane's unused share goes to the other. What does not fit is counted as omitted
and stays reachable through `memory_search`. No hit → no padding."""

from __future__ import annotations

import bisect
import functools
import re
import sqlite3
from dataclasses import dataclass, field

from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.recall import standing_carry
from autopatch_tui.core.recall.matching import (
    GLOB,
    UNIVERSAL,
    Match,
    lexical_matches,
    parsed_applies,
    standing_rows,
)
from autopatch_tui.core.recall.memo import memo
from autopatch_tui.core.recall.paths import normalize_path, path_covers
from autopatch_tui.core.recall.query import RecallPolicy, RecallQuery
from autopatch_tui.core.secrets import mask_once

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
    # logical ID -> what the repository contradicts in it (`claims.store.map_doubts`): shown beside its line
    doubts: dict[str, str] = field(default_factory=dict)

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
            lines += [self._line(m) for m in self.standing]
        if self.relevant:
            lines.append("Relevant:")
            lines += [self._line(m) for m in self.relevant]
        omitted = self.omitted_standing + self.omitted_relevant
        if omitted:
            lines.append(f"({omitted} more matching item(s) omitted for space: "
                         f"{self.omitted_standing} standing, {self.omitted_relevant} relevant)")
        return "\n".join(lines)


    def _line(self, m: Match) -> str:
        doubt = self.doubts.get(m.row["logical_id"]) if self.doubts else None
        # an item older than the `secret` rule may hold one: masked (judged once per revision)
        line = mask_once(m.row["id"], item_line(m))
        return line + (f" (the repository disagrees: {doubt})" if doubt else "")


class _Lane:
    """A lane's ranked matches with their line costs. Greedy fill in rank order: an item that does
    not fit is skipped and a later, shorter one may still fit. The exact cost (the token estimate of
    the rendered line) is computed only for an item whose cheap lower bound fits: every character
    weighs at least a quarter token, so ceil(len(line) / 4) + 1 never exceeds the exact cost."""

    def __init__(self, matches: list[Match], bounds: dict[int, int] | None = None,
                 min_bound: int | None = None, exact: dict[int, int] | None = None,
                 segments: list[list] | None = None) -> None:
        self.matches = matches
        # lower bounds by row ID (a standing lane shares its base's); once the room left is below the
        # cheapest one, nothing more can fit and the fill stops
        self.bounds = bounds if bounds is not None else {m.row["row_id"]: _lower_bound(m) for m in matches}
        self.min_bound = (min((self.bounds[m.row["row_id"]] for m in matches), default=0)
                          if min_bound is None else min_bound)  # any lower value stays correct
        self.exact: dict[int, int] = {} if exact is None else exact  # row ID -> exact line cost
        # the lane as consecutive parts [matches, skip bytes or None, start, end]: `matches[start:end]`
        # in rank order. A standing lane's project-wide parts are ranges of its base's ranked list and
        # share its skip bytes (`skip_bytes`); a long part without bytes gets its own on first use
        self.segments = segments if segments is not None else [[matches, None, 0, len(matches)]]

    def fill(self, budget: int, leave: frozenset[int] = frozenset()) -> tuple[list[Match], int]:
        """`leave`: row IDs never put in (items a loaded instruction file already holds)."""
        kept: list[Match] = []
        used = 0
        for seg in self.segments:
            if seg[1] is None and len(seg[0]) > SKIP_SCAN_MIN:
                seg[1] = skip_bytes(seg[0], self.bounds, self.exact)
            used, stop = self._fill_part(seg[0], seg[1], seg[2], seg[3], budget, used, kept, leave)
            if stop:
                break
        return kept, used

    def _fill_part(self, matches: list[Match], skip: bytearray | None, i: int, n: int, budget: int, used: int,
                   kept: list[Match], leave: frozenset[int]) -> tuple[int, bool]:
        bounds, exact = self.bounds, self.exact
        while i < n:
            room = budget - used
            if room < self.min_bound:
                return used, True
            if skip is not None:  # jump to the next item that may fit (the ones between cannot)
                found = _fits(room).search(skip, i, n)
                if found is None:
                    return used, False
                i = found.start()
            m = matches[i]
            i += 1
            row_id = m.row["row_id"]
            if used + bounds[row_id] > budget or (leave and row_id in leave):
                continue
            cost = exact.get(row_id)
            if cost is None:
                cost = exact[row_id] = estimate_tokens(item_line(m)) + 1
            if skip is not None:
                skip[i - 1] = min(cost, 255)  # from now on this part is skipped by its exact cost
            if used + cost > budget:
                continue
            kept.append(m)
            used += cost
        return used, False


def skip_bytes(matches: list[Match], bounds: dict[int, int], exact: dict[int, int]) -> bytearray:
    """One byte per match: its exact line cost if known, else its lower bound, capped at 255 (the cap
    only lets more through to the exact check, never fewer), so the next item that may fit is found
    by a C-level scan (`_fits`). Exact costs found later are written in by the fill."""
    return bytearray(min(exact.get(r, bounds[r]), 255) for r in (m.row["row_id"] for m in matches))


SKIP_SCAN_MIN = 256  # a lane longer than this is scanned for fitting items with `_fits`


@functools.lru_cache(maxsize=512)
def _fits(room: int) -> re.Pattern[bytes]:
    """A byte class matching every lower bound <= `room` (>= 0)."""
    return re.compile(b"[\\x00-" + re.escape(bytes([min(room, 255)])) + b"]")


_LINE_FIXED_CHARS = len("- [] (): — ") + 2  # the separators of item_line


def _lower_bound(m: Match) -> int:
    return _lower_bound_row(m.row)


def _lower_bound_row(r: sqlite3.Row) -> int:
    chars = (_LINE_FIXED_CHARS + len(r["logical_id"]) + len(r["kind"]) + len(r["strength"]) + len(r["subject"])
             + min(len(r["statement"]), MAX_STATEMENT_CHARS))
    return (chars + 3) // 4 + 1


MAX_LANE_SCOPES = 64  # standing lanes kept per Memory version (one per policy and scope)


@dataclass
class _StandingBase:
    """A policy's `always` items, read once per Memory version: the project-wide ones already ranked
    (for every scope they rank by logical ID, after the path-specific ones) with their logical IDs,
    the path-scoped rows indexed by what covers a scope (see `_ScopeIndex`), each item's line-cost
    bound, and the exact line costs computed so far (a line does not depend on the scope, so every
    lane of this base shares them)."""

    project_wide: list[Match]
    scoped: list[sqlite3.Row]
    bounds: dict[int, int]
    index: "_ScopeIndex" = field(init=False)
    wide_ids: list[str] = field(init=False)
    min_bound: int = field(init=False)
    exact: dict[int, int] = field(default_factory=dict)
    wide_skip: bytearray | None = field(init=False)  # `skip_bytes` of project_wide, shared by its lanes

    def __post_init__(self) -> None:
        self.index = _ScopeIndex(self.scoped)
        self.wide_ids = [m.row["logical_id"] for m in self.project_wide]
        self.min_bound = min(self.bounds.values(), default=0)
        self.wide_skip = (skip_bytes(self.project_wide, self.bounds, self.exact)
                          if len(self.project_wide) > SKIP_SCAN_MIN else None)


class _ScopeIndex:
    """The path-scoped `always` rows by applies-to entry, so that a new scope costs a few dict
    lookups instead of a pass over every row: a literal entry covers a scope path exactly when it is
    the path or one of its ancestor directories (`path_covers` on normalized forms), so the scope's
    own prefixes are looked up; universal entries (``""``, ``*``, ``**``) cover every scope; glob
    entries (few) are tested with `path_covers`. The specificity of a row is the highest of its
    covering entries' (as `path_applicability`); a row whose list is empty is project-wide (0)."""

    def __init__(self, rows: list[sqlite3.Row]) -> None:
        self.literal: dict[str, list[tuple[int, int]]] = {}
        self.glob: dict[str, list[tuple[int, int]]] = {}
        self.universal: list[tuple[int, int]] = []
        self.empty: list[int] = []
        for i, r in enumerate(rows):
            applies = parsed_applies(r["applies_to_paths"])
            if not applies:
                self.empty.append(i)
            for kind, entry, pattern, spec in applies:
                if kind == UNIVERSAL:
                    self.universal.append((i, spec))
                elif kind == GLOB:
                    self.glob.setdefault(entry, []).append((i, spec))
                else:
                    self.literal.setdefault(pattern, []).append((i, spec))

    def specificities(self, paths: tuple[str, ...]) -> dict[int, int]:
        """Row position -> specificity >= 0 for the rows that apply to `paths` (the others: -1)."""
        best: dict[int, int] = dict.fromkeys(self.empty, 0)
        if not paths:
            return best
        hits: list[tuple[int, int]] = list(self.universal)
        for target in dict.fromkeys(normalize_path(p) for p in paths):
            if not target:
                continue
            segments = target.split("/")
            for k in range(1, len(segments) + 1):
                hits += self.literal.get("/".join(segments[:k]), ())
        for entry, rows in self.glob.items():
            if any(path_covers(entry, p) for p in paths):
                hits += rows
        for i, spec in hits:
            if spec > best.get(i, -1):
                best[i] = spec
        return best


def _base_of(rows: list[sqlite3.Row]) -> _StandingBase:
    project_wide, scoped, bounds = [], [], {}
    for r in rows:
        (scoped if r["applies_to_paths"] != "[]" else project_wide).append(r)
        bounds[r["row_id"]] = _lower_bound_row(r)
    wide = [Match(r, 0, 0, 0) for r in project_wide]
    wide.sort(key=Match.sort_key)
    return _StandingBase(wide, scoped, bounds)


def _standing_caches(conn: sqlite3.Connection) -> standing_carry.Caches:
    """(standing bases, standing lanes) of the memo of `conn` — carried over from the previous memo
    when the Memory writes in between changed no `always` row (`standing_carry`)."""
    return standing_carry.caches_for(conn, memo(conn))


def _standing_base(conn: sqlite3.Connection, policy: RecallPolicy) -> _StandingBase:
    """`_visible_base`, without what approval mode hides — every revision not in the policy's kept
    snapshot: a filtered base of its own per base and kept set (a keep replaces the set, and with it
    the key), so the carried caches stay right whatever the review marks do."""
    base, key = _visible_base(conn, policy)
    kept = policy.kept
    if kept is None:
        return base
    cache = _standing_caches(conn)[0]
    kept_key = ("kept", key, kept)  # the marks' frozenset is shared across requests: its hash is cached
    filtered = cache.get(kept_key)
    if filtered is None:
        for stale in [k for k in cache if k[0] == "kept" and k[1] == key]:
            del cache[stale]  # one filtered base per base: the marks moved on
        rows = [m.row for m in base.project_wide] + base.scoped
        visible = [r for r in rows if r["id"] in kept]
        filtered = cache[kept_key] = base if len(visible) == len(rows) else _base_of(visible)
    return filtered


def _visible_base(conn: sqlite3.Connection, policy: RecallPolicy) -> tuple[_StandingBase, object]:
    """The project items' base is shared by every policy with the same project kinds (ordinary and
    repair requests, every thread); a thread's `always` discussions are a small base of their own.
    Returns (base, its cache key)."""
    cache = _standing_caches(conn)[0]
    kinds = tuple(k for k in policy.kinds if k != "discussion_context")
    shared = cache.get(kinds)
    if shared is None:
        shared = cache[kinds] = _base_of(standing_rows(conn, kinds))
    thread = policy.discussion_thread
    if thread is None:
        return shared, kinds
    mine = cache.get(("thread", thread))
    if mine is None:
        mine = cache[("thread", thread)] = _base_of(standing_rows(conn, (), thread))
    if not mine.bounds:
        return shared, kinds
    combined = cache.get((kinds, thread))
    if combined is None:
        combined = cache[(kinds, thread)] = _StandingBase(
            sorted(shared.project_wide + mine.project_wide, key=Match.sort_key), shared.scoped + mine.scoped,
            {**shared.bounds, **mine.bounds})
    return combined, (kinds, thread)


def _standing_lane(conn: sqlite3.Connection, policy: RecallPolicy, paths: tuple[str, ...]) -> _Lane:
    """The standing lane of one policy and scope (memoized per Memory version, `memo`): the
    path-scoped `always` items that cover the scope, ranked, then the spec-0 ones merged by logical
    ID with the pre-ranked project-wide ones. A new scope costs a few lookups in the base's
    `_ScopeIndex` (never a query, never a pass over every `always` row); a request then walks the
    lane only until its budget is spent (`_Lane.fill` stops when nothing later can fit)."""
    lanes = _standing_caches(conn)[1]
    key = (policy, paths)
    lane = lanes.get(key)
    if lane is None:
        base = _standing_base(conn, policy)
        scoped = base.scoped
        specific: list[Match] = []
        general: list[Match] = []
        for i, spec in sorted(base.index.specificities(paths).items()):
            (specific if spec > 0 else general).append(Match(scoped[i], 0, 0, spec))
        specific.sort(key=Match.sort_key)
        # the spec-0 path-scoped items (globs, "*"; few) go between the pre-ranked project-wide ones,
        # by logical ID: the lane is the specific items, then ranges of the base's list (sharing its
        # skip bytes) with the general items in between
        wide, ids = base.project_wide, base.wide_ids
        segments: list[list] = [[specific, None, 0, len(specific)]]
        matches = list(specific)
        start = 0
        for m in sorted(general, key=Match.sort_key):
            at = bisect.bisect_left(ids, m.row["logical_id"])
            segments += [[wide, base.wide_skip, start, at], [[m], None, 0, 1]]
            matches += wide[start:at]
            matches.append(m)
            start = at
        segments.append([wide, base.wide_skip, start, len(wide)])
        matches += wide[start:]
        lane = _Lane(matches, base.bounds, base.min_bound, base.exact, segments)
        if len(lanes) >= MAX_LANE_SCOPES:
            lanes.pop(next(iter(lanes)))
        lanes[key] = lane
    return lane


def build_map(conn: sqlite3.Connection, query: RecallQuery, policy: RecallPolicy, *, budget_tokens: int,
              leave: frozenset[int] = frozenset()) -> MemoryMap:
    """`leave`: row IDs of items the request's instruction files already hold (`recall.promoted`):
    neither shown nor counted as omitted."""
    paths = query.paths
    s_lane = _standing_lane(conn, policy, paths)
    standing = s_lane.matches
    relevant = [m for m in lexical_matches(conn, query.base_terms(), policy, paths,
                                                  query.base_phrase_keys())
                if m.row["recall_mode"] == "on_match"  # standing items are `always`: never here
                and m.row["row_id"] not in leave]
    r_lane = _Lane(relevant)
    share = int(budget_tokens * STANDING_SHARE)
    # each lane first within its share; then what one lane left unused goes to the other
    s_kept, s_used = s_lane.fill(share, leave)
    r_kept, r_used = r_lane.fill(budget_tokens - share)
    spare = budget_tokens - s_used - r_used
    if spare > 0 and len(r_kept) < len(relevant):
        r_kept, r_used = r_lane.fill(budget_tokens - share + max(0, share - s_used))
    standing_count = len(standing) - (sum(1 for m in standing if m.row["row_id"] in leave) if leave else 0)
    if spare > 0 and len(s_kept) < standing_count:
        s_kept, s_used = s_lane.fill(budget_tokens - r_used, leave)
    return MemoryMap(s_kept, r_kept, standing_count - len(s_kept), len(relevant) - len(r_kept))
