"""The refused candidates kept for rescue (issue 31.2, contracts §10), and the record of the ones
the user kept over their rule — in a private file beside the store, never in `memory.db` (schema v4
is fixed), never in status, logs or exports.

`<repo>/.autopatch-j/refused.json` (0600, atomic writes under `refused.lock`):

    {"format": "autopatch-refused", "version": 1,
     "store": {"name", "created_at", "generation"},          # as the review marks: another store or
                                                             # an earlier clear generation counts as none
     "refused": [ENTRY, ...],                                # newest first, at most MAX_REFUSED
     "kept": [{"item", "revision_id", "rule", "turn_id", "at"}, ...]}   # rescues, at most MAX_KEPT

ENTRY = {"key", "at", "rule", "turn_id", "candidate": {every candidate field of contracts §3.1 but
`evidence`, "sources": [{"turn_id", "role", "quote"}]}}. The numbers users see (`memory refused`,
`keep N`) are positions in the newest-first list.

Secrets (issue 31.5, another engineer's item): `for_file` is the one door an entry passes on its way
in; a candidate refused with rule `secret` is stored masked (`mask_secrets`) and can never be kept."""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.memory.refusal_words import rule_words
from autopatch_tui.core.memory.review_marks import StoreStamp, store_stamp
from autopatch_tui.core.memory.side_json import (
    SideFileError,
    locked,
    read_document,
    remove,
    write_document,
)
from autopatch_tui.core.paths import StorePaths

FORMAT = "autopatch-refused"
VERSION = 1
MAX_REFUSED = 200
MAX_KEPT = 1000
MAX_BYTES = 32 * 1024 * 1024
SECRET_RULE = "secret"
CAND_FIELDS = ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode", "applies_to_paths",
               "aliases", "keywords")


def file_path(paths: StorePaths) -> Path:
    return paths.refused


def lock_path(paths: StorePaths) -> Path:
    return paths.refused_lock


def mask_secrets(text: str) -> str:
    """The secret values a detector finds (`core.secrets`, issue 31.5), masked."""
    from autopatch_tui.core.secrets import mask

    return mask(text)


@dataclass(frozen=True)
class Refused:
    """One refused candidate as `memory refused` lists it (n: 1 = newest)."""

    n: int
    key: str
    at: float
    rule: str
    turn_id: str
    candidate: dict

    @property
    def words(self) -> str:
        return rule_words(self.rule)

    @property
    def quote(self) -> str:
        users = [s for s in self.candidate.get("sources", []) if s.get("role") == "user"]
        return str((users or self.candidate.get("sources") or [{"quote": ""}])[0].get("quote", ""))

    def as_json(self) -> dict[str, object]:
        """contracts §4 `memory refused --json`."""
        return {"n": self.n, "rule": self.rule, "words": self.words, "quote": self.quote, "turn_id": self.turn_id,
                "kind": self.candidate.get("kind", ""), "statement": self.candidate.get("statement", "")}


def for_file(rule: str, turn_id: str, candidate: dict, *, key: str, at: float) -> dict:
    """The entry as it is written: a `secret` refusal never keeps the text it was refused for."""
    cand = {k: candidate.get(k) for k in CAND_FIELDS}
    sources = [dict(s) for s in candidate.get("sources", [])]
    if rule == SECRET_RULE:
        masked = "[secret masked]"
        for k in ("subject", "statement", "content"):
            cand[k] = masked
        cand["aliases"], cand["keywords"] = [], []
        sources = [{**s, "quote": masked} for s in sources]
    else:  # refused for another rule, yet holding a secret: masked too, and never kept (`masked`)
        before = [str(cand[k] or "") for k in ("subject", "statement", "content")] + [
            str(s.get("quote", "")) for s in sources]
        for k in ("subject", "statement", "content"):
            cand[k] = mask_secrets(str(cand[k] or ""))
        cand["aliases"] = [mask_secrets(str(a)) for a in cand.get("aliases") or []]
        cand["keywords"] = [mask_secrets(str(a)) for a in cand.get("keywords") or []]
        sources = [{**s, "quote": mask_secrets(str(s.get("quote", "")))} for s in sources]
        after = [str(cand[k]) for k in ("subject", "statement", "content")] + [s["quote"] for s in sources]
        if before != after:
            cand["masked"] = True
    cand["sources"] = [{"turn_id": str(s.get("turn_id", "")), "role": str(s.get("role", "")),
                        "quote": str(s.get("quote", ""))} for s in sources]
    return {"key": key, "at": at, "rule": rule, "turn_id": turn_id, "candidate": cand}


def _empty(stamp: StoreStamp) -> dict:
    return {"format": FORMAT, "version": VERSION, "store": stamp.as_json(), "refused": [], "kept": []}


def _mine(doc: dict | None, stamp: StoreStamp, paths: StorePaths) -> dict:
    """The document if it is this store's (this generation), else an empty one."""
    if doc is None:
        return _empty(stamp)
    if doc.get("version") != VERSION or not isinstance(doc.get("refused"), list) or not isinstance(
            doc.get("kept"), list) or not isinstance(doc.get("store"), dict):
        raise SideFileError(f"{file_path(paths)} is not a {FORMAT} document; move it away")
    s = doc["store"]
    try:
        theirs = StoreStamp(str(s["name"]), float(s["created_at"]), int(s["generation"]))
    except (KeyError, TypeError, ValueError):
        raise SideFileError(f"{file_path(paths)} has an invalid \"store\" field; move it away") from None
    return doc if theirs == stamp else _empty(stamp)


def _read(paths: StorePaths, stamp: StoreStamp) -> dict:
    return _mine(read_document(paths, file_path(paths), max_bytes=MAX_BYTES, fmt=FORMAT), stamp, paths)


def _valid(entry: object) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("candidate"), dict):
        return False
    return all(isinstance(entry.get(k), str) for k in ("key", "rule", "turn_id")) and isinstance(
        entry["candidate"].get("sources"), list)


def listing(paths: StorePaths, conn: sqlite3.Connection) -> list[Refused]:
    """The refused candidates, newest first, numbered from 1 (entries that are not well formed are skipped)."""
    doc = _read(paths, store_stamp(conn))
    entries = [e for e in doc["refused"] if _valid(e)]
    return [Refused(n, e["key"], float(e.get("at") or 0), e["rule"], e["turn_id"], e["candidate"])
            for n, e in enumerate(entries, 1)]


def add(paths: StorePaths, conn: sqlite3.Connection, entries: list[dict]) -> None:
    """Put `entries` (from `for_file`, oldest first) at the head of the list; the oldest beyond
    MAX_REFUSED go."""
    if not entries:
        return
    stamp = store_stamp(conn)
    with locked(paths, lock_path(paths)):
        doc = _read(paths, stamp)
        doc["refused"] = (list(reversed(entries)) + [e for e in doc["refused"] if _valid(e)])[:MAX_REFUSED]
        write_document(paths, file_path(paths), doc)


def take(paths: StorePaths, conn: sqlite3.Connection, key: str) -> bool:
    """Remove the entry `key` (it was kept); False when it is no longer there."""
    stamp = store_stamp(conn)
    with locked(paths, lock_path(paths)):
        doc = _read(paths, stamp)
        left = [e for e in doc["refused"] if not (_valid(e) and e["key"] == key)]
        if len(left) == len(doc["refused"]):
            return False
        doc["refused"] = left
        write_document(paths, file_path(paths), doc)
        return True


@dataclass(frozen=True)
class KeptOver:
    """A rescued item's history line: kept over `rule` (its words), from `turn_id`, at `at`."""

    item: str
    revision_id: str
    rule: str
    turn_id: str
    at: float

    @property
    def words(self) -> str:
        return rule_words(self.rule)


def note_kept(paths: StorePaths, conn: sqlite3.Connection, kept: KeptOver, *, key: str | None = None) -> None:
    """Record a rescue (and drop its entry `key` from the refused list) in one write."""
    stamp = store_stamp(conn)
    with locked(paths, lock_path(paths)):
        doc = _read(paths, stamp)
        if key is not None:
            doc["refused"] = [e for e in doc["refused"] if not (_valid(e) and e["key"] == key)]
        doc["kept"] = ([dataclasses.asdict(kept)] + [k for k in doc["kept"] if isinstance(k, dict)])[:MAX_KEPT]
        write_document(paths, file_path(paths), doc)


def kept_over(paths: StorePaths, conn: sqlite3.Connection, logical_id: str) -> list[KeptOver]:
    """The rescues recorded for one item (newest first)."""
    doc = _read(paths, store_stamp(conn))
    out = []
    for k in doc["kept"]:
        if isinstance(k, dict) and k.get("item") == logical_id:
            try:
                out.append(KeptOver(str(k["item"]), str(k["revision_id"]), str(k["rule"]), str(k["turn_id"]),
                                    float(k["at"])))
            except (KeyError, TypeError, ValueError):
                continue
    return out


def carry(source: StorePaths, source_conn: sqlite3.Connection, target: StorePaths,
          target_conn: sqlite3.Connection) -> int:
    """A store merge: the source's rescue records of the items the target now holds go along
    (its refused list does not: those candidates' turns are the source's). Returns how many."""
    doc = read_document(source, file_path(source), max_bytes=MAX_BYTES, fmt=FORMAT)
    if doc is None:
        return 0
    theirs = _mine(doc, store_stamp(source_conn), source)["kept"]
    records = [k for k in theirs if isinstance(k, dict) and isinstance(k.get("revision_id"), str)]
    present = {r[0] for r in target_conn.execute("SELECT id FROM memory_items")} if records else set()
    carried = [k for k in records if k["revision_id"] in present]
    if not carried:
        return 0
    stamp = store_stamp(target_conn)
    with locked(target, lock_path(target)):
        doc = _read(target, stamp)
        have = {(k.get("item"), k.get("revision_id")) for k in doc["kept"] if isinstance(k, dict)}
        new = [k for k in carried if (k.get("item"), k.get("revision_id")) not in have]
        doc["kept"] = (new + doc["kept"])[:MAX_KEPT]
        write_document(target, file_path(target), doc)
    return len(new)


def reset(paths: StorePaths, now: float) -> list:
    """`memory clear --confirm`: the file goes (a non-file there is moved aside, returned)."""
    moved = remove(paths, file_path(paths), now)
    return [moved] if moved is not None else []
