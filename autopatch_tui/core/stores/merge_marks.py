"""A store merge carries the source's review marks (contracts §8): a revision the user kept in the
source is kept in the target too. A merge imports revisions under their own IDs (`merge.py`), and
marks are keyed by revision ID, so the carried marks are the source's marks whose revision the
target now holds. Marks the source wrote for an earlier generation of itself (before a clear) are
not the source's any more and are not carried."""

from __future__ import annotations

import json
from pathlib import Path

from autopatch_tui.core.memory import review, review_marks
from autopatch_tui.core.memory.readonly import open_readonly
from autopatch_tui.core.memory.sqlite import open_readwrite, read_txn
from autopatch_tui.core.paths import StorePaths


def carry_review_marks(source_db: Path, target_db: Path) -> int:
    """Add the source's marks for the revisions the target now holds to the target's marks.
    Returns how many were carried. Raises `ReviewMarksError` (an unusable marks file), `OSError`
    or `sqlite3.Error`; the caller decides (a merge that succeeded is never undone for marks)."""
    src_paths, dst_paths = StorePaths.for_db(source_db), StorePaths.for_db(target_db)
    theirs, kept = review_marks.read_any(src_paths)
    if not kept or theirs is None:
        return 0
    src = open_readonly(source_db)
    try:
        if not review_marks.store_stamp(src).holds_marks_of(theirs):
            return 0
    finally:
        src.close()
    dst = open_readwrite(target_db)
    try:
        with read_txn(dst):
            present = frozenset(r[0] for r in dst.execute(
                "SELECT id FROM memory_items WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(kept)),)))
            stamp = review_marks.store_stamp(dst)
        if not present:
            return 0

        def add(current: frozenset[str]) -> frozenset[str]:
            with read_txn(dst):
                return review.prune(dst, current | present)

        after = review_marks.update_kept(dst_paths, stamp, add)
        return len(present & after)
    finally:
        dst.close()


def carry_rescues(source_db: Path, target_db: Path) -> int:
    """The source's rescue records ("kept over rule X", `refused_store`) of the items the target
    now holds. Returns how many were added."""
    from autopatch_tui.core.memory import refused_store

    src = open_readonly(source_db)
    try:
        dst = open_readwrite(target_db)
        try:
            with read_txn(src), read_txn(dst):
                return refused_store.carry(StorePaths.for_db(source_db), src, StorePaths.for_db(target_db), dst)
        finally:
            dst.close()
    finally:
        src.close()
