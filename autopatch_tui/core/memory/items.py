"""Semantic items: append-only revisions under a Store-owned logical ID, their provenance, and
the user's audit operations (list, show, forget)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from autopatch_tui.core import constants as C
from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.clock import iso_utc
from autopatch_tui.core.errors import MemoryNotFoundError, UsageError
from autopatch_tui.core.ids import id_problem
from autopatch_tui.core.memory.models import ItemDetail, ItemSummary, RevisionSummary, SourceQuote
from autopatch_tui.core.memory import change_journal
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.memory.turns import ensure_writable
from autopatch_tui.core.secrets import mask, mask_value

ITEM_COLUMNS = (
    "kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
    "applies_to_paths", "aliases", "keywords",
)


@dataclass(frozen=True)
class ItemFields:
    """The semantic fields of one item revision (contracts §3.1 candidate fields, minus sources)."""

    kind: str
    subject: str
    statement: str
    content: str
    strength: str
    origin: str
    recall_mode: str
    applies_to_paths: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    thread_id: str | None = field(default=None)

    def as_json_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind, "subject": self.subject, "statement": self.statement, "content": self.content,
            "strength": self.strength, "origin": self.origin, "recall_mode": self.recall_mode,
            "applies_to_paths": list(self.applies_to_paths), "aliases": list(self.aliases),
            "keywords": list(self.keywords),
        }


def _loads(text: str) -> list[str]:
    value = loads_column(text, None)
    return [str(v) for v in value] if isinstance(value, list) else []


def summary_from_row(row: sqlite3.Row) -> ItemSummary:
    return ItemSummary(
        id=row["logical_id"], kind=row["kind"], subject=row["subject"], statement=row["statement"],
        strength=row["strength"], origin=row["origin"], recall_mode=row["recall_mode"],
        applies_to_paths=_loads(row["applies_to_paths"]), updated_at=iso_utc(row["updated_at"]),
    )


def list_items(conn: sqlite3.Connection, *, kind: str | None = None, status: str = "active",
               limit: int | None = None, offset: int = 0) -> list[ItemSummary]:
    """Items whose latest revision has `status`, newest first."""
    if kind is not None and kind not in C.ITEM_KINDS:
        raise UsageError(f"unknown kind {kind!r}; expected one of {', '.join(C.ITEM_KINDS)}")
    if status not in C.ITEM_STATUSES:
        raise UsageError(f"unknown status {status!r}; expected one of {', '.join(C.ITEM_STATUSES)}")
    sql = "SELECT * FROM memory_items m WHERE status = ?"
    args: list[object] = [status]
    if status != "active":  # only the latest revision of a chain represents the item
        sql += " AND revision = (SELECT max(revision) FROM memory_items x WHERE x.logical_id = m.logical_id)"
    if kind is not None:
        sql += " AND kind = ?"
        args.append(kind)
    sql += " ORDER BY updated_at DESC, row_id DESC"
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        args += [limit, offset]
    return [summary_from_row(r) for r in conn.execute(sql, args).fetchall()]


def _like(word: str) -> str:
    return "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def items_containing(conn: sqlite3.Connection, text: str, *, limit: int = 50) -> list[ItemSummary]:
    """Active items whose subject, statement or content contain every word of `text` (NFKC
    case-folded substrings; newest first): plain text search for people, beside deterministic
    recall. SQLite's LIKE narrows by the ASCII words; each row is then checked exactly."""
    from autopatch_tui.core.recall.terms import normalize_text  # the browser's search only

    words = list(dict.fromkeys(w for w in normalize_text(text).split() if w))[:8]
    if not words:
        return []
    ascii_words = [w for w in words if w.isascii()]
    where = "".join(" AND (subject LIKE ? ESCAPE '\\' OR statement LIKE ? ESCAPE '\\' OR content LIKE ? ESCAPE '\\')"
                    for _ in ascii_words)
    args = [p for w in ascii_words for p in (_like(w),) * 3]
    out: list[ItemSummary] = []
    for r in conn.execute(f"SELECT * FROM memory_items WHERE status = 'active'{where}"
                          " ORDER BY updated_at DESC, row_id DESC", args):
        haystack = normalize_text(f"{r['subject']}\n{r['statement']}\n{r['content']}")
        if all(w in haystack for w in words):
            out.append(summary_from_row(r))
            if len(out) >= limit:
                break
    return out


def resolve_logical_id(conn: sqlite3.Connection, item_id: str) -> str:
    """An exact logical ID, or a unique prefix of one (users type IDs by hand)."""
    if conn.execute("SELECT 1 FROM memory_items WHERE logical_id = ? LIMIT 1", (item_id,)).fetchone():
        return item_id  # the store's own ID, whatever it holds (a hand-edited store's is shown escaped)
    problem = id_problem(item_id)  # an over-long one once hit SQLite's LIKE pattern limit
    if problem:
        raise UsageError(problem)
    item_id = item_id.strip()
    if conn.execute("SELECT 1 FROM memory_items WHERE logical_id = ? LIMIT 1", (item_id,)).fetchone():
        return item_id
    like = item_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(
        "SELECT DISTINCT logical_id FROM memory_items WHERE logical_id LIKE ? ESCAPE '\\' LIMIT 2", (like,)
    ).fetchall()
    if len(rows) == 1:
        return rows[0][0]
    if rows:
        raise UsageError(f"item ID prefix {item_id!r} is ambiguous")
    raise MemoryNotFoundError(f"no Memory item {item_id!r}")


def item_sources(conn: sqlite3.Connection, item_row_id: int) -> list[SourceQuote]:
    rows = conn.execute(
        "SELECT s.turn_id, s.role, s.quote FROM item_candidates ic"
        " JOIN candidate_sources s ON s.candidate_id = ic.candidate_id"
        " JOIN memory_candidates c ON c.id = ic.candidate_id"
        " WHERE ic.item_row_id = ? ORDER BY c.created_at, s.candidate_id, s.ordinal",
        (item_row_id,),
    ).fetchall()
    # The same quote reached through two candidates is one piece of evidence, shown once: a topic
    # merge's candidate carries a copy of the imported item's quotes, and that item's own
    # candidates move along to the merged revision (see stores.topic_merge).
    seen: set[tuple[str, str, str]] = set()
    out: list[SourceQuote] = []
    for r in rows:
        key = (r["turn_id"], r["role"], r["quote"])
        if key not in seen:
            seen.add(key)
            out.append(SourceQuote(turn_id=r["turn_id"], role=r["role"], quote=r["quote"]))
    return out


def show_item(conn: sqlite3.Connection, item_id: str) -> ItemDetail:
    """The latest revision of a logical item in any status, its revision chain and provenance."""
    logical = resolve_logical_id(conn, item_id)
    revs = conn.execute(
        "SELECT * FROM memory_items WHERE logical_id = ? ORDER BY revision", (logical,)
    ).fetchall()
    latest = revs[-1]
    # a display (`memory show`, the item screens): an item older than the `secret` rule may hold one,
    # so every text is masked (contracts §10)
    base = mask_value(summary_from_row(latest).model_dump())
    return ItemDetail(
        **base,  # type: ignore[arg-type]
        status=latest["status"], revision=latest["revision"], content=mask(latest["content"]),
        aliases=mask_value(_loads(latest["aliases"])), keywords=mask_value(_loads(latest["keywords"])),
        thread_id=latest["thread_id"],
        revisions=[RevisionSummary(revision=r["revision"], status=r["status"], statement=mask(r["statement"]),
                                   updated_at=iso_utc(r["updated_at"])) for r in revs],
        sources=[SourceQuote(turn_id=q.turn_id, role=q.role, quote=mask(q.quote))
                 for q in item_sources(conn, latest["row_id"])],
    )


def forget_item(conn: sqlite3.Connection, item_id: str, *, now: float) -> str:
    """Take an item out of listing and recall at once and suppress its candidates. RAW turns stay.
    Returns the logical ID."""
    from autopatch_tui.core.memory.item_writes import unindex  # item_writes builds on this module

    with change_journal.tracked(conn), write_txn(conn):
        ensure_writable(conn)
        logical = resolve_logical_id(conn, item_id)
        row = conn.execute(
            "SELECT row_id FROM memory_items WHERE logical_id = ? AND status = 'active'", (logical,)
        ).fetchone()
        if row is None:
            raise MemoryNotFoundError(f"Memory item {logical} is not active (already forgotten or superseded)")
        conn.execute("UPDATE memory_items SET status = 'forgotten', updated_at = ? WHERE row_id = ?", (now, row[0]))
        change_journal.note_retired(conn, row[0])
        unindex(conn, row[0])
        conn.execute(
            "UPDATE memory_candidates SET status = 'suppressed' WHERE id IN"
            " (SELECT ic.candidate_id FROM item_candidates ic JOIN memory_items m ON m.row_id = ic.item_row_id"
            "  WHERE m.logical_id = ?)",
            (logical,),
        )
        bump_data_version(conn)
    return logical


def bump_data_version(conn: sqlite3.Connection) -> None:
    """Inside a write transaction: items changed, so the review summary is out of date."""
    conn.execute("UPDATE memory_meta SET data_version = data_version + 1 WHERE id = 1")
    change_journal.note_bump(conn)  # journaled only inside a `change_journal.tracked` transaction
