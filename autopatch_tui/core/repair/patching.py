"""Patch drafts as exact search-and-replace edits: validated against the finding they are bound
to and the file as it is now, shown as a unified diff, applied atomically.

A draft is accepted only when its finding ID is the bound one, its old text occurs exactly once in
the finding's current file, its new text differs, and the patched file still parses with a real
parser for its language (`syntax.py`: Python's `ast`, tree-sitter for the others) — unless it did
not parse before the draft either. Applying re-checks the file (it may have
changed since the draft) and replaces it through a temporary file and `os.replace`, keeping the
file's mode (`patch_files`: the temporary file lives in `.autopatch-j/tmp/`, so a crash leaves no
trace beside the source); a refused apply leaves the file untouched. Every path goes through the
one confinement check (`core.confine`): a loop, a NUL byte or an over-long path is a `DraftError`
or `PatchApplyError`, never a raw `RuntimeError`/`ValueError`/`OSError`.

Files are read and written without newline translation: everything outside the replaced text stays
byte for byte as it was (a CRLF file keeps its CRLF line ends). The model sees files with `\n` line
ends (`read_file`), so in a CRLF file an edit whose `\n` text does not occur is matched in its
`\r\n` form, and its replacement gets the same line ends."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from autopatch_tui.core.agent.source_tools import MAX_FILE_BYTES
from autopatch_tui.core.confine import (
    NO_SUCH_FILE,
    ConfinementError,
    FileTooLargeError,
    NotRegularFileError,
    read_confined,
    shown,
)
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.repair.findings import Finding, PatchDraft
from autopatch_tui.core.repair.patch_files import PatchWriteError, replace_file
from autopatch_tui.core.repair.syntax import NoParserError, draft_breaks_syntax

MAX_EDIT_CHARS = 20_000
MAX_PATCHED_FILE_BYTES = MAX_FILE_BYTES  # what `read_file` shows the model, and what the analyzers read
# The longest diff a draft can have: each line of the file before and after the edit at most once
# (a file of one long line: that line removed and added) — 2 × the file limit plus the edit's growth —
# and for the lines an edit touches (its text spans at most MAX_EDIT_CHARS lines on each side) a
# prefix each, context lines and hunk headers, and the two file headers: well under 16 × MAX_EDIT_CHARS.
MAX_DIFF_CHARS = 2 * MAX_PATCHED_FILE_BYTES + 16 * MAX_EDIT_CHARS + 10_000


class DraftError(AutopatchError):
    """A proposed patch was refused; the message says why (safe to show the model and the user)."""


class BindingError(DraftError):
    """The draft names a finding other than the one this request is bound to."""


class PatchApplyError(AutopatchError):
    """A pending patch cannot be applied to the file as it is now."""


def digest(text: str) -> str:
    """The fingerprint of a file's text a draft was made against (`PatchDraft.base_digest`)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read(repo: Path, rel: str) -> tuple[Path, str]:
    """The confined file and its text (no newline translation); `DraftError` for everything else."""
    try:
        target, data = read_confined(repo.resolve(), rel, MAX_PATCHED_FILE_BYTES)
    except FileTooLargeError:
        raise DraftError(f"{shown(rel)} is larger than {MAX_PATCHED_FILE_BYTES // 1_000_000} MB, the limit for "
                         "patched files") from None
    except NotRegularFileError:
        raise DraftError(f"{shown(rel)} is not a file") from None
    except ConfinementError as exc:
        if str(exc) == NO_SUCH_FILE:
            raise DraftError(f"{shown(rel)} is not a file (it does not exist)") from None
        raise DraftError(f"{shown(rel)}: {exc}") from None
    try:
        return target, data.decode("utf-8")
    except UnicodeDecodeError:
        raise DraftError(f"{shown(rel)} cannot be read as UTF-8 text") from None


def _lines(text: str) -> list[str]:
    """`text` split after each "\n" only (not at the other separators `str.splitlines` knows)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def unified_diff(path: str, before: str, after: str) -> str:
    out = []
    for line in difflib.unified_diff(_lines(before), _lines(after), fromfile=f"a/{path}", tofile=f"b/{path}"):
        if line.endswith("\r\n"):
            line = line[:-2] + "\n"
        elif not line.endswith("\n"):  # the file's last line has no line end
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def _match(current: str, old_text: str, new_text: str) -> tuple[str, str, int]:
    """The edit as it occurs in `current` and how often: exactly as given, or — in a file with CRLF
    line ends, when the `\n` form does not occur exactly once — with `\r\n` line ends."""
    count = current.count(old_text)
    if count != 1 and "\r\n" in current and "\n" in old_text and "\r" not in old_text:
        crlf = old_text.replace("\n", "\r\n")
        if current.count(crlf) == 1:
            return crlf, new_text.replace("\r\n", "\n").replace("\n", "\r\n"), 1
    return old_text, new_text, count


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
    try:
        new_text.encode("utf-8")
    except UnicodeEncodeError:
        raise DraftError("new_text is not valid text (it holds a lone surrogate)") from None
    _, current = _read(repo, finding.path)
    old_text, new_text, count = _match(current, old_text, new_text)
    if count != 1:
        raise DraftError(f"old_text occurs {count} times in {finding.path}; it must occur exactly once")
    after = current.replace(old_text, new_text, 1)
    check_syntax(finding.path, current, after)
    diff = unified_diff(finding.path, current, after)
    if len(diff) > MAX_DIFF_CHARS:  # not reached by a file within the size limit; the saved audit's bound
        raise DraftError(f"the diff would be over {MAX_DIFF_CHARS} characters")
    return PatchDraft(finding.id, finding.path, old_text, new_text, diff, revision, digest(current), digest(after))


def check_syntax(path: str, before: str, after: str) -> None:
    try:
        error = draft_breaks_syntax(path, before, after)
    except NoParserError as exc:
        raise DraftError(f"the draft cannot be syntax-checked: {exc}") from None
    if error is not None:
        raise DraftError(f"the patched {path} would not parse ({error}); keep the code valid")


@dataclass(frozen=True)
class Edit:
    """Where an applied draft changed its file: the lines the replaced text spanned before
    (`start_line`..`old_end`) and the new text spans after (`start_line`..`new_end`), and how many
    lines the file grew by (`delta`, negative when it shrank)."""

    start_line: int
    old_end: int
    new_end: int
    delta: int

    @classmethod
    def of(cls, before: str, start: int, old_text: str, new_text: str) -> Edit:
        line = before.count("\n", 0, start) + 1
        return cls(line, line + old_text[:-1].count("\n"), line + new_text[:-1].count("\n"),
                   new_text.count("\n") - old_text.count("\n"))

    def moved(self, line: int) -> int | None:
        """A line of the file before the edit, in the file after it; None for a line that was
        inside the replaced text."""
        if line < self.start_line:
            return line
        if line > self.old_end:
            return line + self.delta
        return None

    @property
    def new_span(self) -> range:
        return range(self.start_line, self.new_end + 1)


def holds_result(current: str, draft: PatchDraft) -> bool:
    """Does `current` already hold the draft's new text where its old text is (the old text is part
    of the new one, and the edit was made)? Applying it again would make the edit twice."""
    at, inner = current.find(draft.old_text), draft.new_text.find(draft.old_text)
    return at >= 0 and inner >= 0 and at >= inner and current.startswith(draft.new_text, at - inner)


def rebase_draft(draft: PatchDraft, current: str) -> PatchDraft | None:
    """`draft` against the file as it is now (after another draft was applied, or after a restart),
    with a fresh diff; None when its old text no longer occurs exactly once, the file already holds
    its result, or the result would not parse."""
    if current.count(draft.old_text) != 1 or holds_result(current, draft):
        return None
    after = current.replace(draft.old_text, draft.new_text, 1)
    try:
        if draft_breaks_syntax(draft.path, current, after) is not None:
            return None
    except NoParserError:
        return None
    diff = unified_diff(draft.path, current, after)
    if len(diff) > MAX_DIFF_CHARS:
        return None
    return replace(draft, diff=diff, base_digest=digest(current), result_digest=digest(after))


def read_text(repo: Path, rel: str) -> str:
    """The current text of a repository file (no newline translation); raises DraftError."""
    return _read(repo, rel)[1]


def apply_draft(repo: Path, draft: PatchDraft) -> Edit:
    repo = repo.resolve()
    try:
        target, current = _read(repo, draft.path)
    except DraftError as exc:
        raise PatchApplyError(str(exc)) from None
    if current.count(draft.old_text) != 1:
        raise PatchApplyError(f"{draft.path} changed since the patch was drafted; revise or discard it")
    start = current.index(draft.old_text)
    after = current.replace(draft.old_text, draft.new_text, 1)
    try:
        mode = target.stat().st_mode & 0o7777
        replace_file(repo, target, after.encode("utf-8"), mode)
    except PatchWriteError as exc:
        raise PatchApplyError(str(exc)) from None
    except OSError as exc:
        raise PatchApplyError(f"cannot write {draft.path} ({type(exc).__name__}); the file is unchanged") from None
    return Edit.of(current, start, draft.old_text, draft.new_text)
