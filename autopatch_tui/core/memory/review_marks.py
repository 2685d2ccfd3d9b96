"""Review marks (contracts §8): which active item revisions the user has kept, in a small file
beside the store — never inside `memory.db`, whose schema v4 is fixed.

`<repo>/.autopatch-j/review_marks.json`, private (0600), one JSON object:

    {"format": "autopatch-review-marks", "version": 1,
     "store": {"name": str, "created_at": float, "generation": int},
     "kept": [revision ID, ...]}

- **Key.** A mark is a revision's own ID (`memory_items.id`, e.g. `rev-01J…`): unique per revision and
  kept as it is by a store merge. An active revision is `kept` when its ID is marked, else `new`. A
  revision that replaces a kept one has a new ID, so it is `new` again; the kept one stays marked
  while it is the latest kept revision of a live chain (the inbox diffs against it), and a mark whose
  revision was forgotten or is no longer anybody's base is dropped at the next write (`review.prune`).
- **Store.** The marks record the store they were written for (`memory_meta`: name, creation time,
  clear generation). They count for the store with the same creation time and generation, whatever
  its name: a copied or cloned checkout (`cp -a`) whose store was given a name of its own keeps its
  marks, since they follow the revisions, not the name. Marks written before a `memory clear` (which
  bumps the generation; a clean store after a degraded clear has a new creation time), or for
  another store, are not this store's and count as none.
- **Writers.** Every change is a read-modify-write under an exclusive `fcntl` lock on
  `.autopatch-j/review_marks.lock`, and the file is replaced atomically (a 0600 temp file, fsynced,
  renamed in the folder: `paths.write_private_text`), so two processes keeping items at once both
  land and a reader (who takes no lock) always sees a whole file.
- **Links.** Nothing is opened through a link: both names are on the store's no-follow preflight
  (`StorePaths.opened_paths`: a link there makes the store degraded, cause `symlink`, and `clear`
  moves it aside), and both are opened `O_NOFOLLOW` relative to the folder's descriptor. A marks file
  that is not a regular file, has another hard link, or is not a marks document is refused with
  `ReviewMarksError` naming it: never parsed into marks, never overwritten (the user moves it away).

Reads are cached per process by the file's identity (`lstat`: device, inode, size, times), so the
recall hot path pays one `lstat` in review mode."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.bounded_json import LINK, JsonFileError, read_json
from autopatch_tui.core.errors import AutopatchError, SymlinkRefusedError
from autopatch_tui.core.paths import StorePaths, move_aside, open_dir, write_private_text

FORMAT = "autopatch-review-marks"
VERSION = 1
MAX_BYTES = 64 * 1024 * 1024  # ~1.5 M marks; a bigger file is not ours
MAX_DEPTH = 8  # ours nests two levels (an object holding an object and a list): far deeper is not ours


class ReviewMarksError(AutopatchError):
    """The review marks file cannot be used (not a file, a link, not a marks document). Nothing is
    marked and the file is left as it is."""


@dataclass(frozen=True)
class StoreStamp:
    """Which store, and which clear generation of it, a set of marks belongs to."""

    name: str
    created_at: float
    generation: int

    def holds_marks_of(self, other: StoreStamp) -> bool:
        """Whether marks written for `other` are this store's: the same store file lineage (creation
        time) and clear generation. The name is not compared: a copy renamed keeps its marks."""
        return self.created_at == other.created_at and self.generation == other.generation

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "created_at": self.created_at, "generation": self.generation}


def store_stamp(conn: sqlite3.Connection) -> StoreStamp:
    row = conn.execute("SELECT store_name, created_at, generation FROM memory_meta WHERE id = 1").fetchone()
    if row is None:
        return StoreStamp("", 0.0, 0)
    return StoreStamp(str(row[0]), float(row[1]), int(row[2]))


Token = tuple[int, int, int, int, int, int]


def file_token(paths: StorePaths) -> Token | None:
    """The marks file's identity (None: there is none). A new write is a new inode, so a changed file
    always has a new token."""
    try:
        st = os.lstat(paths.review_marks)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


_cache_lock = threading.Lock()
_cache: dict[str, tuple[Token, StoreStamp, frozenset[str]]] = {}


def load_kept(paths: StorePaths, stamp: StoreStamp) -> frozenset[str]:
    """The kept revision IDs of the store `stamp` names (empty: no file, or marks of another store or
    generation). Raises `ReviewMarksError` for a file that is not a marks document."""
    return kept_with_token(paths, stamp)[1]


def kept_with_token(paths: StorePaths, stamp: StoreStamp) -> tuple[Token | None, frozenset[str]]:
    """(the file's token, the kept IDs): the token names the marks version for caches."""
    token = file_token(paths)
    if token is None:
        return None, frozenset()
    key = str(paths.review_marks)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] == token and hit[1].holds_marks_of(stamp):
        return token, hit[2]
    doc = _read(paths)
    kept = _kept_of(doc, stamp, paths)
    with _cache_lock:
        if len(_cache) > 64:
            _cache.clear()
        _cache[key] = (token, stamp, kept)
    return token, kept


def _refused(paths: StorePaths, why: str) -> ReviewMarksError:
    return ReviewMarksError(f"review marks file {paths.review_marks} {why}; nothing was marked — move it away "
                            "(every item then awaits review again) or run `memory clear --confirm`")


def _read(paths: StorePaths) -> dict | None:
    """The parsed document, or None when the file does not exist. Read by the bounded reader
    (`core/bounded_json.py`: no link, regular file, one hard link, size and nesting bounded, never
    blocking); whatever it refuses is a `ReviewMarksError` sentence."""
    try:
        dfd = open_dir(paths.repo, paths.state_dir, create=False)
    except FileNotFoundError:
        return None
    try:
        doc = read_json(paths.review_marks.name, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, dir_fd=dfd,
                        single_link=True, shown=paths.review_marks)
    except JsonFileError as exc:
        if exc.reason == LINK:
            raise SymlinkRefusedError(f"{paths.review_marks} is a symbolic link; Memory never opens or writes "
                                      "through a link", paths.review_marks) from None
        raise _refused(paths, exc.why) from None
    finally:
        os.close(dfd)
    if doc is None:
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _refused(paths, f"is not a {FORMAT} document")
    if doc.get("version") != VERSION:
        raise _refused(paths, f"has version {doc.get('version')!r} (this app reads version {VERSION})")
    kept, store = doc.get("kept"), doc.get("store")
    if not isinstance(kept, list) or not all(isinstance(k, str) for k in kept) or not isinstance(store, dict):
        raise _refused(paths, "has an invalid \"kept\" or \"store\" field")
    return doc


def _kept_of(doc: dict | None, stamp: StoreStamp, paths: StorePaths) -> frozenset[str]:
    if doc is None:
        return frozenset()
    store = doc["store"]
    try:
        theirs = StoreStamp(str(store["name"]), float(store["created_at"]), int(store["generation"]))
    except (KeyError, TypeError, ValueError):
        raise _refused(paths, "has an invalid \"store\" field") from None
    return frozenset(doc["kept"]) if stamp.holds_marks_of(theirs) else frozenset()


@contextmanager
def locked(paths: StorePaths) -> Iterator[None]:
    """An exclusive lock for one read-modify-write of the marks (held across processes): the side
    files' one lock (`side_json.locked`); a lock file that cannot be one is a `ReviewMarksError`."""
    from autopatch_tui.core.memory.side_json import locked as side_locked

    with side_locked(paths, paths.review_lock, error=ReviewMarksError, refused="nothing was marked"):
        yield


def update_kept(paths: StorePaths, stamp: StoreStamp,
                change: Callable[[frozenset[str]], frozenset[str]]) -> frozenset[str]:
    """Under the lock: read the marks (as they are now, whoever wrote them), apply `change`, write
    the result atomically. Returns the new kept set."""
    with locked(paths):
        current = _kept_of(_read(paths), stamp, paths)
        new = frozenset(change(current))
        if new != current or file_token(paths) is None:
            write_private_text(paths.review_marks, render(stamp, new), root=paths.repo)
        return new


def render(stamp: StoreStamp, kept: frozenset[str]) -> str:
    return json.dumps({"format": FORMAT, "version": VERSION, "store": stamp.as_json(), "kept": sorted(kept)},
                      ensure_ascii=True) + "\n"


def reset(paths: StorePaths, now: float) -> Path | None:
    """`memory clear --confirm`: no marks any more. A regular marks file is deleted; anything else
    there (a folder, a FIFO, a link: never followed) is moved aside, never deleted, and its new path
    returned. Missing folder or file: nothing to do."""
    moved = None
    try:
        dfd = open_dir(paths.repo, paths.state_dir, create=False)
    except FileNotFoundError:
        return None
    try:
        try:
            st = os.stat(paths.review_marks.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            os.unlink(paths.review_marks.name, dir_fd=dfd)
    finally:
        os.close(dfd)
    if st is not None and not stat.S_ISREG(st.st_mode):
        moved = move_aside(paths.review_marks, now)
    with _cache_lock:
        _cache.pop(str(paths.review_marks), None)
    return moved


def read_any(paths: StorePaths) -> tuple[StoreStamp | None, frozenset[str]]:
    """(the stamp the file names, its kept IDs), for a merge carrying a source's marks; (None, ∅)
    without a file."""
    doc = _read(paths)
    if doc is None:
        return None, frozenset()
    store = doc["store"]
    try:
        theirs = StoreStamp(str(store["name"]), float(store["created_at"]), int(store["generation"]))
    except (KeyError, TypeError, ValueError):
        raise _refused(paths, "has an invalid \"store\" field") from None
    return theirs, frozenset(doc["kept"])
