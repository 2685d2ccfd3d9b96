"""Schema v4 of `<repo>/.autopatch-j/memory.db`.

The DDL below is the whole catalog of a new store: a store is healthy only when its `sqlite_master`
equals, object for object and SQL text for SQL text, what these statements create (see `health.py`).
Any change here is a schema change.

The spec's tables are fixed. The recall index (`RECALL_DDL`) is derived data of our own: every row
can be computed again from the active items. Its layout changed once within v4 (issue 23): stores
written before hold it as `recall_terms` + `recall_terms_item` (`TERMS_RECALL_DDL`, the text exactly
as those releases created it). The app's Memory worker rebuilds such an index into the current
layout once, in short transactions (`core/recall/layout_rebuild.py`), through two intermediate
states; each of the four is an exact catalog (`RECALL_LAYOUTS`, chosen by `layout_ddl`). The spec's
tables and every row in them are left as they are.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from functools import cache

from autopatch_tui.core import constants as C


def _enum(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


# The recall index (docs/recall.md, "The index"): a dictionary of terms and phrase keys, their
# posting lists keyed by (term ID, field, item), and per item the list of what it posted (to take an
# item out in a few seeks; a posting carries no index on the item). No foreign key on the postings:
# they are reached from `recall_item_postings`, whose row is the item's (and cascades with it).
# Every integer column is checked to hold an integer (a text or real there would pass a plain
# comparison), and term IDs stay below MAX_TERM_ID, so a pair (term ID, field) always packs into 64 bits.
MAX_TERM_ID = 1 << 40


def _integer(column: str, low: int | None = None, high: int | None = None) -> str:
    bounds = f" AND {column} BETWEEN {low} AND {high}" if high is not None else (
        f" AND {column} >= {low}" if low is not None else "")
    return f"typeof({column}) = 'integer'{bounds}"


RECALL_DDL: tuple[str, ...] = (
    f"""CREATE TABLE recall_dict (
    term TEXT PRIMARY KEY,
    id INTEGER NOT NULL CHECK ({_integer('id', 1, MAX_TERM_ID)})
) WITHOUT ROWID""",
    f"""CREATE TABLE recall_postings (
    term_id INTEGER NOT NULL CHECK ({_integer('term_id', 1, MAX_TERM_ID)}),
    field INTEGER NOT NULL CHECK ({_integer('field', 1, len(C.RECALL_FIELDS))}),
    item_row_id INTEGER NOT NULL CHECK ({_integer('item_row_id')}),
    phrase INTEGER NOT NULL CHECK ({_integer('phrase', 0)}),
    need INTEGER CHECK ((need IS NULL) = (field = 1) AND (need IS NULL OR ({_integer('need', 1)}))),
    PRIMARY KEY (term_id, field, item_row_id, phrase)
) WITHOUT ROWID""",
    """CREATE TABLE recall_item_postings (
    item_row_id INTEGER PRIMARY KEY REFERENCES memory_items(row_id) ON DELETE CASCADE,
    postings BLOB NOT NULL CHECK (typeof(postings) = 'blob')
)""",
    f"""CREATE TABLE recall_meta (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_term_id INTEGER NOT NULL CHECK ({_integer('last_term_id', 0, MAX_TERM_ID)})
)""",
)

# Rules of the recall index that no CHECK can state (a CHECK sees one row): (table, what breaks it,
# a query counting what breaks it). `health.check_problem` runs those of the tables a store holds.
_COUNTER = "(SELECT last_term_id FROM recall_meta WHERE id = 1)"
RECALL_RULES: tuple[tuple[str, str, str], ...] = (
    ("recall_dict", "a term ID given to more than one text", "SELECT count(*) - count(DISTINCT id) FROM recall_dict"),
    ("recall_dict", "term IDs above the ID counter", f"SELECT count(*) FROM recall_dict WHERE id > {_COUNTER}"),
    ("recall_postings", "postings under a term ID above the ID counter",
     f"SELECT count(*) FROM (SELECT max(term_id) AS top FROM recall_postings) WHERE top > {_COUNTER}"),
)

# The recall index of the stores written before issue 23, exactly as they hold it (never created
# again; `layout_upgrade` rebuilds it into `RECALL_DDL`).
TERMS_RECALL_DDL: tuple[str, ...] = (
    """CREATE TABLE recall_terms (
    term TEXT NOT NULL,
    item_row_id INTEGER NOT NULL REFERENCES memory_items(row_id) ON DELETE CASCADE,
    field TEXT NOT NULL CHECK (field IN ('subject', 'alias', 'keyword', 'check_id', 'content', 'path')),
    phrase INTEGER NOT NULL,
    need INTEGER NOT NULL CHECK (need >= 1),
    PRIMARY KEY (term, item_row_id, field, phrase)
) WITHOUT ROWID""",
    "CREATE INDEX recall_terms_item ON recall_terms(item_row_id)",
)

DDL: tuple[str, ...] = (
    """CREATE TABLE memory_meta (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL CHECK (generation >= 1),
    created_at REAL NOT NULL,
    store_name TEXT NOT NULL,
    label TEXT,
    root TEXT,
    remote TEXT,
    data_version INTEGER NOT NULL DEFAULT 0,
    summary_version INTEGER,
    retired_into TEXT,
    retired_at REAL
)""",
    f"""CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL CHECK (status IN {_enum(C.THREAD_STATUSES)}),
    created_at REAL NOT NULL,
    archived_at REAL,
    checkpoint TEXT NOT NULL DEFAULT '' CHECK (length(checkpoint) <= {C.MAX_CHECKPOINT_CHARS}),
    checkpoint_sequence INTEGER NOT NULL DEFAULT 0,
    origin_store TEXT,
    CHECK ((status = 'archived') = (archived_at IS NOT NULL))
)""",
    "CREATE UNIQUE INDEX threads_one_active ON threads(status) WHERE status = 'active'",
    f"""CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    intent TEXT NOT NULL CHECK (intent IN {_enum(C.INTENTS)}),
    state TEXT NOT NULL CHECK (state IN {_enum(C.TURN_STATES)}),
    user_text TEXT NOT NULL,
    assistant_text TEXT,
    scope_paths TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(scope_paths) AND json_type(scope_paths) = 'array'
        AND json_array_length(scope_paths) <= {C.MAX_SCOPE_PATHS}),
    evidence_keys TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(evidence_keys) AND json_type(evidence_keys) = 'array'),
    owner TEXT,
    lease_expires_at REAL,
    created_at REAL NOT NULL,
    ended_at REAL,
    UNIQUE (thread_id, sequence),
    CHECK ((state = 'open') = (ended_at IS NULL))
)""",
    "CREATE INDEX turns_open ON turns(lease_expires_at) WHERE state = 'open'",
    "CREATE INDEX turns_owner_open ON turns(owner) WHERE state = 'open'",
    f"""CREATE TABLE memory_jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN {_enum(C.JOB_KINDS)}),
    status TEXT NOT NULL CHECK (status IN {_enum(C.JOB_STATUSES)}),
    thread_id TEXT REFERENCES threads(id) ON DELETE CASCADE,
    turn_id TEXT REFERENCES turns(id) ON DELETE CASCADE,
    parent_job_id TEXT REFERENCES memory_jobs(id) ON DELETE SET NULL,
    sequence INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    provider_calls INTEGER NOT NULL DEFAULT 0 CHECK (provider_calls >= 0),
    lease_owner TEXT,
    lease_expires_at REAL,
    lease_generation INTEGER,
    available_at REAL NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    completed_at REAL,
    no_output_reason TEXT CHECK (no_output_reason IS NULL OR no_output_reason IN {_enum(C.NO_OUTPUT_REASONS)}),
    failure_category TEXT CHECK (failure_category IS NULL OR failure_category IN {_enum(C.FAILURE_CATEGORIES)}),
    failure_phase TEXT CHECK (failure_phase IS NULL OR failure_phase IN {_enum(C.FAILURE_PHASES)}),
    failure_stage TEXT CHECK (failure_stage IS NULL OR failure_stage IN {_enum(C.FAILURE_STAGES)}),
    failure_rule TEXT CHECK (failure_rule IS NULL OR (length(failure_rule) <= 64
        AND failure_rule NOT GLOB '*[^a-z0-9_.:-]*')),
    CHECK ((kind = 'extraction') = (turn_id IS NOT NULL)),
    CHECK ((status IN ('succeeded', 'succeeded_no_output', 'failed')) = (completed_at IS NOT NULL)),
    CHECK ((status = 'leased') = (lease_owner IS NOT NULL))
)""",
    "CREATE UNIQUE INDEX memory_jobs_one_per_turn ON memory_jobs(turn_id) WHERE turn_id IS NOT NULL",
    "CREATE INDEX memory_jobs_queue ON memory_jobs(kind, status, thread_id, sequence)",
    "CREATE INDEX memory_jobs_parent ON memory_jobs(parent_job_id) WHERE parent_job_id IS NOT NULL",
    f"""CREATE TABLE memory_candidates (
    id TEXT PRIMARY KEY,
    job_id TEXT REFERENCES memory_jobs(id) ON DELETE SET NULL,
    consolidation_job_id TEXT REFERENCES memory_jobs(id) ON DELETE SET NULL,
    thread_id TEXT REFERENCES threads(id) ON DELETE SET NULL,
    status TEXT NOT NULL CHECK (status IN {_enum(C.CANDIDATE_STATUSES)}),
    kind TEXT NOT NULL CHECK (kind IN {_enum(C.ITEM_KINDS)}),
    subject TEXT NOT NULL,
    statement TEXT NOT NULL,
    content TEXT NOT NULL,
    strength TEXT NOT NULL CHECK (strength IN {_enum(C.STRENGTHS)}),
    origin TEXT NOT NULL CHECK (origin IN {_enum(C.ORIGINS)}),
    recall_mode TEXT NOT NULL CHECK (recall_mode IN {_enum(C.RECALL_MODES)}),
    applies_to_paths TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(applies_to_paths)),
    aliases TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(aliases)),
    keywords TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(keywords)),
    origin_store TEXT,
    created_at REAL NOT NULL
)""",
    "CREATE INDEX memory_candidates_pending ON memory_candidates(status, consolidation_job_id)",
    "CREATE INDEX memory_candidates_job ON memory_candidates(job_id)",
    f"""CREATE TABLE candidate_sources (
    candidate_id TEXT NOT NULL REFERENCES memory_candidates(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL CHECK (ordinal >= 0 AND ordinal < {C.MAX_SOURCES_PER_CANDIDATE}),
    turn_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN {_enum(C.SOURCE_ROLES)}),
    quote TEXT NOT NULL CHECK (length(quote) > 0),
    PRIMARY KEY (candidate_id, ordinal)
) WITHOUT ROWID""",
    "CREATE INDEX candidate_sources_turn ON candidate_sources(turn_id)",
    f"""CREATE TABLE memory_items (
    row_id INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    logical_id TEXT NOT NULL,
    revision INTEGER NOT NULL CHECK (revision >= 1),
    status TEXT NOT NULL CHECK (status IN {_enum(C.ITEM_STATUSES)}),
    kind TEXT NOT NULL CHECK (kind IN {_enum(C.ITEM_KINDS)}),
    subject TEXT NOT NULL,
    statement TEXT NOT NULL,
    content TEXT NOT NULL,
    strength TEXT NOT NULL CHECK (strength IN {_enum(C.STRENGTHS)}),
    origin TEXT NOT NULL CHECK (origin IN {_enum(C.ORIGINS)}),
    recall_mode TEXT NOT NULL CHECK (recall_mode IN {_enum(C.RECALL_MODES)}),
    applies_to_paths TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(applies_to_paths)),
    aliases TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(aliases)),
    keywords TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(keywords)),
    thread_id TEXT REFERENCES threads(id) ON DELETE SET NULL,
    identity_key TEXT NOT NULL,
    replaced_by TEXT,
    origin_store TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (logical_id, revision),
    CHECK ((kind = 'discussion_context') = (thread_id IS NOT NULL))
)""",
    "CREATE UNIQUE INDEX memory_items_active_logical ON memory_items(logical_id) WHERE status = 'active'",
    "CREATE UNIQUE INDEX memory_items_active_identity ON memory_items(identity_key) WHERE status = 'active'",
    "CREATE INDEX memory_items_standing ON memory_items(status, recall_mode, kind)",
    "CREATE INDEX memory_items_updated ON memory_items(status, updated_at)",
    """CREATE TABLE item_candidates (
    item_row_id INTEGER NOT NULL REFERENCES memory_items(row_id) ON DELETE CASCADE,
    candidate_id TEXT NOT NULL REFERENCES memory_candidates(id) ON DELETE CASCADE,
    PRIMARY KEY (item_row_id, candidate_id)
) WITHOUT ROWID""",
    "CREATE INDEX item_candidates_candidate ON item_candidates(candidate_id)",
    *RECALL_DDL,
    """CREATE TABLE store_aliases (
    alias TEXT PRIMARY KEY,
    added_at REAL NOT NULL
) WITHOUT ROWID""",
    f"""CREATE TABLE audit_events (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    event TEXT NOT NULL CHECK (event IN {_enum(C.AUDIT_EVENTS)}),
    detail TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(detail))
)""",
)

TABLES: tuple[str, ...] = (
    "memory_meta",
    "threads",
    "turns",
    "memory_jobs",
    "memory_candidates",
    "candidate_sources",
    "memory_items",
    "item_candidates",
    "recall_dict",
    "recall_postings",
    "recall_item_postings",
    "recall_meta",
    "store_aliases",
    "audit_events",
)

CatalogEntry = tuple[str, str, str, str]  # (type, name, tbl_name, sql)


def read_catalog(conn: sqlite3.Connection) -> list[CatalogEntry]:
    """The user-visible schema objects, in creation order (internal `sqlite_*` objects excluded)."""
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        " ORDER BY rowid"
    ).fetchall()
    return [(r[0], r[1], r[2], r[3] or "") for r in rows]


# The recall index's layouts a store may hold (docs/memory.md, "The recall index's first layout"):
# the first one, the two states of its one-time rebuild, and the current one. Each is exact: a
# catalog holding any other mix of these objects is degraded.
TERMS, BUILDING, SWITCHED, CURRENT = "terms", "building", "switched", "current"
RECALL_LAYOUTS: dict[str, tuple[str, ...]] = {
    CURRENT: RECALL_DDL,
    TERMS: TERMS_RECALL_DDL,  # written before issue 23
    BUILDING: TERMS_RECALL_DDL + RECALL_DDL,  # the current tables being filled; readers use the first ones
    SWITCHED: TERMS_RECALL_DDL[:1] + RECALL_DDL,  # the current ones in use; the old table waits to be dropped
}
_NAME = re.compile(r"^\s*CREATE\s+(?:TABLE|INDEX)\s+(\w+)", re.IGNORECASE)
RECALL_OBJECTS: dict[str, frozenset[str]] = {
    state: frozenset(m.group(1) for m in map(_NAME.match, ddl) if m) for state, ddl in RECALL_LAYOUTS.items()}
LAYOUT_DDLS: dict[str, tuple[str, ...]] = {
    state: DDL[:DDL.index(RECALL_DDL[0])] + ddl + DDL[DDL.index(RECALL_DDL[-1]) + 1:]
    for state, ddl in RECALL_LAYOUTS.items()}
TERMS_LAYOUT_DDL = LAYOUT_DDLS[TERMS]  # the whole catalog of a store written before issue 23


def recall_layout(names: Iterable[str]) -> str | None:
    """The state whose recall objects are exactly those among `names` (None: no accepted layout)."""
    found = frozenset(n for n in names if n.startswith("recall_"))
    return next((state for state, objects in RECALL_OBJECTS.items() if objects == found), None)


@cache
def expected_catalog(ddl: tuple[str, ...] = DDL) -> tuple[CatalogEntry, ...]:
    """What `ddl` (by default: a new store's) creates, read back from a scratch in-memory database."""
    conn = sqlite3.connect(":memory:")
    try:
        for stmt in ddl:
            conn.execute(stmt)
        return tuple(read_catalog(conn))
    finally:
        conn.close()


def layout_ddl(catalog: list[CatalogEntry] | tuple[CatalogEntry, ...]) -> tuple[str, ...]:
    """The DDL a found catalog must equal: the layout whose recall objects it holds. When it holds
    no accepted set of them, the nearest layout (so the diagnostic names what is missing or extra):
    among those holding `recall_terms` when it does, else the current one."""
    names = {entry[1] for entry in catalog}
    state = recall_layout(names)
    if state is None:
        found = {n for n in names if n.startswith("recall_")}
        near = [s for s, objects in RECALL_OBJECTS.items() if "recall_terms" in objects] if "recall_terms" in found \
            else [CURRENT]
        state = min(near, key=lambda s: len(RECALL_OBJECTS[s] ^ found))
    return LAYOUT_DDLS[state]
