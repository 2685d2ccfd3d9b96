"""What shaped an answer (issue 31.3, contracts §4 `memory_used`, §10): which Memory items reached
each request — the Map's standing lane (`standing`), the Map's relevant lane or a `memory_search`
result (`matched`), a `memory_read` (`read`) — by logical ID and revision; an item whose promoted
bullet reached the request through an instruction file names it (`via`, e.g. `AGENTS.md`).

**Where.** Not in `memory.db`: schema v4's tables are fixed (contracts §8 keeps review marks beside
the store for the same reason), and the turn's `evidence_keys` are the extraction's scan evidence —
they go into every extraction payload, and any `a:b` key there can bind as a finding
(`extraction_rules._is_evidence_key`), so Memory IDs there would be Memory context fed back to the
model as evidence, which the spec forbids for RAW turns. So: one private side file,
`<repo>/.autopatch-j/memory_used.jsonl` (0600, never through a link), one JSON line per request:

    {"turn": turn_id, "items": [{"id", "revision", "how", "via"?}, ...]}

IDs, revisions and the file names only — never an item's text — so nothing here can leak a quote.
Each line is one `O_APPEND` write (no fsync: a crash may lose the last records, which only costs
that History line); the file is bounded: past MAX_BYTES the newest half is rewritten atomically.
`memory clear --confirm` deletes it. The last records of this process are kept in memory too
(`recent`), so `ask --json` and the chat never read the file for the answer just given."""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass

from autopatch_tui.core.errors import SymlinkRefusedError
from autopatch_tui.core.paths import StorePaths, open_dir, write_private_text

HOWS = ("read", "standing", "matched")  # strongest first: an item reached several ways shows the strongest
MAX_BYTES = 4 * 1024 * 1024
MAX_ITEMS_PER_TURN = 200
_RECENT = 256
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class UsedItem:
    id: str
    revision: int
    how: str
    via: str | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"id": self.id, "revision": self.revision, "how": self.how}
        if self.via:
            out["via"] = self.via
        return out


def merge(items: list[UsedItem]) -> list[UsedItem]:
    """One entry per item: the strongest way it came (read > standing > matched), first seen order."""
    best: dict[str, UsedItem] = {}
    for it in items:
        old = best.get(it.id)
        if old is None or HOWS.index(it.how) < HOWS.index(old.how):
            best[it.id] = UsedItem(it.id, it.revision, it.how, it.via or (old.via if old else None))
        elif it.via and not old.via:
            best[it.id] = UsedItem(old.id, old.revision, old.how, it.via)
    return list(best.values())


_lock = threading.Lock()
_recent: OrderedDict[tuple[str, str], list[UsedItem]] = OrderedDict()


def record(paths: StorePaths, turn_id: str, items: list[UsedItem]) -> None:
    """Append one request's record for `turn_id` (several requests of one turn add up). Raises
    OSError / SymlinkRefusedError; the caller logs the type and goes on (the answer is unaffected)."""
    items = merge(items)[:MAX_ITEMS_PER_TURN]
    key = (str(paths.db), turn_id)
    with _lock:
        _recent[key] = merge(_recent.pop(key, []) + items)
        while len(_recent) > _RECENT:
            _recent.popitem(last=False)
    line = json.dumps({"turn": turn_id, "items": [i.as_json() for i in items]}, ensure_ascii=True,
                      separators=(",", ":")) + "\n"
    dfd = open_dir(paths.repo, paths.state_dir, create=True)
    try:
        try:
            fd = os.open(paths.memory_used.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
                         | os.O_NONBLOCK, 0o600, dir_fd=dfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise SymlinkRefusedError(f"{paths.memory_used} is a symbolic link; Memory never writes through "
                                          "a link", paths.memory_used) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                raise OSError(errno.EINVAL, "not a private regular file")
            os.write(fd, line.encode("ascii"))
            size = st.st_size + len(line)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
    if size > MAX_BYTES:
        _compact(paths)


def recent(paths: StorePaths, turn_id: str) -> list[UsedItem] | None:
    """This process's record of `turn_id`, if it made one (None: ask the file)."""
    with _lock:
        found = _recent.get((str(paths.db), turn_id))
    return list(found) if found is not None else None


def _read_tail(paths: StorePaths) -> str:
    try:
        dfd = open_dir(paths.repo, paths.state_dir, create=False)
    except FileNotFoundError:
        return ""
    try:
        try:
            fd = os.open(paths.memory_used.name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
        except FileNotFoundError:
            return ""
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                return ""
            start = max(0, st.st_size - 2 * MAX_BYTES)
            os.lseek(fd, start, os.SEEK_SET)
            raw = os.read(fd, 2 * MAX_BYTES)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
    text = raw.decode("ascii", errors="replace")
    return text if start == 0 else text[text.find("\n") + 1:]  # a cut first line is dropped


def _parse(line: str) -> tuple[str, list[UsedItem]] | None:
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("turn"), str) or not isinstance(doc.get("items"), list):
        return None
    items = []
    for i in doc["items"][:MAX_ITEMS_PER_TURN]:
        if (isinstance(i, dict) and isinstance(i.get("id"), str) and type(i.get("revision")) is int
                and i.get("how") in HOWS):
            via = i.get("via") if isinstance(i.get("via"), str) else None
            items.append(UsedItem(i["id"], i["revision"], i["how"], via))
    return doc["turn"], items


def for_turns(paths: StorePaths, turn_ids: list[str]) -> dict[str, list[UsedItem]]:
    """The records of these turns (History): this process's first, then the file (bounded read;
    lines that are not ours are skipped). A turn without a record is left out."""
    out: dict[str, list[UsedItem]] = {}
    missing = []
    for t in turn_ids:
        mine = recent(paths, t)
        if mine is not None:
            out[t] = mine
        else:
            missing.append(t)
    if missing:
        wanted = set(missing)
        found: dict[str, list[UsedItem]] = {}
        for line in _read_tail(paths).splitlines():
            if not any(t in line for t in wanted):
                continue
            parsed = _parse(line)
            if parsed and parsed[0] in wanted:
                found[parsed[0]] = found.get(parsed[0], []) + parsed[1]
        out.update({t: merge(v) for t, v in found.items()})
    return out


def _compact(paths: StorePaths) -> None:
    """Keep the newest half of the records (an append racing this may be lost: one History line)."""
    text = _read_tail(paths)
    keep = text[len(text) // 2:]
    keep = keep[keep.find("\n") + 1:]
    write_private_text(paths.memory_used, keep, root=paths.repo)


def reset(paths: StorePaths) -> None:
    """`memory clear --confirm`: the records go with the turns they name."""
    with _lock:
        for key in [k for k in _recent if k[0] == str(paths.db)]:
            del _recent[key]
    try:
        dfd = open_dir(paths.repo, paths.state_dir, create=False)
    except FileNotFoundError:
        return
    try:
        st = os.stat(paths.memory_used.name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            os.unlink(paths.memory_used.name, dir_fd=dfd)
    except FileNotFoundError:
        pass
    finally:
        os.close(dfd)


@dataclass(frozen=True)
class UsedDetail:
    """An item of a "Memory used" line, expanded: how it came, what it says (now: the revision it
    reached may have been replaced since — `current` says so) and its first user quote."""

    item: UsedItem
    kind: str
    statement: str
    quote: str
    current: bool


def describe(conn, items: list[UsedItem]) -> list[UsedDetail]:
    """The expanded line's rows (the user's own chat and History only; never logged)."""
    out = []
    for it in items:
        row = conn.execute("SELECT row_id, kind, statement, status FROM memory_items WHERE logical_id = ?"
                           " AND revision = ?", (it.id, it.revision)).fetchone()
        if row is None:
            out.append(UsedDetail(it, "", "(no longer in Memory)", "", False))
            continue
        quote = conn.execute(
            "SELECT s.quote FROM item_candidates ic JOIN candidate_sources s ON s.candidate_id = ic.candidate_id"
            " WHERE ic.item_row_id = ? AND s.role = 'user' ORDER BY s.ordinal LIMIT 1", (row["row_id"],)).fetchone()
        out.append(UsedDetail(it, row["kind"], row["statement"], quote[0] if quote else "", row["status"] == "active"))
    return out
