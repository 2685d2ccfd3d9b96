"""Patch drafts as exact search-and-replace edits: validated against the finding they are bound
to and the file as it is now, shown as a unified diff, applied atomically.

A draft is accepted only when its finding ID is the bound one, its old text occurs exactly once in
the finding's current file, and its new text differs. Applying re-checks the file (it may have
changed since the draft) and replaces it through a temporary file and `os.replace`, keeping the
file's mode; a refused apply leaves the file untouched."""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path

from autopatch_tui.core.agent.source_tools import SourceToolError, SourceTools
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.repair.findings import Finding, PatchDraft

MAX_EDIT_CHARS = 20_000


class DraftError(AutopatchError):
    """A proposed patch was refused; the message says why (safe to show the model and the user)."""


class BindingError(DraftError):
    """The draft names a finding other than the one this request is bound to."""


class PatchApplyError(AutopatchError):
    """A pending patch cannot be applied to the file as it is now."""


def _read(tools: SourceTools, rel: str) -> tuple[Path, str]:
    try:
        target = tools.resolve(rel)
    except SourceToolError as exc:
        raise DraftError(str(exc)) from None
    if not target.is_file():
        raise DraftError(f"{rel} is not a file")
    try:
        return target, target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise DraftError(f"{rel} cannot be read as UTF-8 text") from None


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


def make_draft(repo: Path, finding: Finding, *, finding_id: str, old_text: str, new_text: str,
               revision: int = 1) -> PatchDraft:
    if finding_id != finding.id:
        raise BindingError(f"this draft is bound to {finding.id}, not {finding_id or 'no finding'}")
    if not isinstance(old_text, str) or not old_text.strip():
        raise DraftError("old_text must be the exact, non-empty text to replace")
    if not isinstance(new_text, str):
        raise DraftError("new_text must be a string")
    if old_text == new_text:
        raise DraftError("new_text equals old_text: nothing would change")
    if len(old_text) > MAX_EDIT_CHARS or len(new_text) > MAX_EDIT_CHARS:
        raise DraftError(f"an edit is limited to {MAX_EDIT_CHARS} characters")
    _, current = _read(SourceTools(repo), finding.path)
    count = current.count(old_text)
    if count != 1:
        raise DraftError(f"old_text occurs {count} times in {finding.path}; it must occur exactly once")
    after = current.replace(old_text, new_text, 1)
    return PatchDraft(finding.id, finding.path, old_text, new_text, unified_diff(finding.path, current, after),
                      revision)


def apply_draft(repo: Path, draft: PatchDraft) -> None:
    try:
        target, current = _read(SourceTools(repo), draft.path)
    except DraftError as exc:
        raise PatchApplyError(str(exc)) from None
    if current.count(draft.old_text) != 1:
        raise PatchApplyError(f"{draft.path} changed since the patch was drafted; revise or discard it")
    after = current.replace(draft.old_text, draft.new_text, 1)
    mode = target.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".autopatch", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(after)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
