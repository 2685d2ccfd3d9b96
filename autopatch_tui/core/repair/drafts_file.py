"""The open audit's drafts on disk: `<repo>/.autopatch-j/audit.json`, so pending patches survive a
restart (issue #20 item 4).

Like every file of ours under `.autopatch-j/` (contracts §1): private (0600 in a 0700 folder),
written atomically (a temporary file in `.autopatch-j/tmp/`, where the start's sweep removes what a
kill leaves, and a rename relative to the folders' descriptors), never through a link — a symlink
on the way, or a file with a second hard link, is not read — and bounded (MAX_BYTES; a larger audit
is not kept and the app says so). The file holds the audit's findings, their states and drafts, the
thread it belongs to, and for each draft the fingerprint of the file text it was made against and
of that text with the edit made (a draft belongs to its finding: same ID, same file); it is
validated (pydantic, every field bounded) when read back — and before it is written, with the same
model, so a file `save` writes is one `load` reads: what does not fit is not kept, and the app says
so (quitting then asks first). The bounds are those of what the product makes (a repository path, a
finding message, a diff of a file at the size limit). It is runtime state of one audit, not Memory:
`/new` and `/reset` remove it, and it is never read by Memory or sent to a model."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from autopatch_tui.core import constants as C
from autopatch_tui.core.bounded_json import JsonFileError, check_nesting, read_bytes
from autopatch_tui.core.confine import MAX_PATH_BYTES
from autopatch_tui.core.errors import AutopatchError, UnsafePathError
from autopatch_tui.core.paths import StorePaths, open_dir
from autopatch_tui.core.repair.findings import MAX_MESSAGE_CHARS, Finding, PatchDraft
from autopatch_tui.core.repair.patch_files import save_private
from autopatch_tui.core.repair.patching import MAX_DIFF_CHARS
from autopatch_tui.core.repair.scanner import MAX_SCAN_FILES

FILE_NAME = C.AUDIT_FILE_NAME
FORMAT = "autopatch-audit"
VERSION = 1
MAX_BYTES = 16 << 20
MAX_DEPTH = 16  # the saved audit nests five levels

Text = Annotated[str, Field(max_length=100_000)]
Short = Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]
RepoPath = Annotated[str, Field(max_length=MAX_PATH_BYTES)]


class DraftsFileError(AutopatchError):
    """The drafts file cannot be written or read; the message is safe to show."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class FindingModel(_Strict):
    id: Annotated[str, Field(pattern=r"^F[0-9]{1,5}$")]
    path: RepoPath
    line: Annotated[int, Field(ge=1)]
    check_id: Annotated[str, Field(max_length=200)]
    message: Short
    origin: Literal["scanner", "review"]
    tool: Annotated[str, Field(max_length=40)]
    severity: Annotated[str, Field(max_length=20)]
    url: Short
    column: Annotated[int, Field(ge=0)]
    end_line: Annotated[int, Field(ge=0)]
    end_column: Annotated[int, Field(ge=0)]


class DraftModel(_Strict):
    finding_id: Annotated[str, Field(pattern=r"^F[0-9]{1,5}$")]
    path: RepoPath
    old_text: Text
    new_text: Text
    diff: Annotated[str, Field(max_length=MAX_DIFF_CHARS)]
    revision: Annotated[int, Field(ge=1)]
    base_digest: Annotated[str, Field(pattern=r"^([0-9a-f]{64})?$")]
    result_digest: Annotated[str, Field(pattern=r"^([0-9a-f]{64})?$")] = ""  # absent in a file of the first version


class StateModel(_Strict):
    finding: FindingModel
    status: Literal["open", "patched", "failed", "applied", "discarded", "stale"]
    draft: DraftModel | None
    failure: Short
    verification: Annotated[str, Field(max_length=40)]
    verification_note: Short

    @model_validator(mode="after")
    def _draft_of_its_finding(self) -> StateModel:
        """A draft edits its own finding's file, nothing else (the app never saves another)."""
        draft = self.draft
        if draft is not None and (draft.finding_id != self.finding.id or draft.path != self.finding.path):
            raise ValueError("a draft for another finding or file")
        return self


class ReportModel(_Strict):
    files: Annotated[int, Field(ge=0)]
    unparsed: Annotated[list[RepoPath], Field(max_length=MAX_SCAN_FILES)]
    truncated: bool
    languages: dict[str, int]
    analyzers: Annotated[list[Short], Field(max_length=20)]
    errors: Annotated[list[Short], Field(max_length=50)]
    too_large: Annotated[list[RepoPath], Field(max_length=MAX_SCAN_FILES)]
    notes: Annotated[list[Short], Field(max_length=200)]


class AuditFile(_Strict):
    format: Literal["autopatch-audit"]
    version: Literal[1]
    thread_id: Annotated[str, Field(max_length=100)]
    scan_id: Annotated[str, Field(max_length=100)]
    scope: Annotated[list[RepoPath], Field(max_length=1_000)]
    reviewed: bool
    report: ReportModel
    states: Annotated[list[StateModel], Field(max_length=1_000)]

    @model_validator(mode="after")
    def _one_state_per_finding(self) -> AuditFile:
        ids = [s.finding.id for s in self.states]
        if len(set(ids)) != len(ids):
            raise ValueError("a finding ID twice")
        return self


def path_of(repo: Path) -> Path:
    return StorePaths(repo).saved_audit


def document(thread_id: str, ws: object) -> dict:
    """The file's content for the workspace `ws` (an `AuditWorkspace`; taken under its lock)."""
    report = ws.report  # type: ignore[attr-defined]
    return {
        "format": FORMAT, "version": VERSION, "thread_id": thread_id, "scan_id": ws.scan_id,  # type: ignore[attr-defined]
        "scope": list(ws.scope), "reviewed": ws.reviewed,  # type: ignore[attr-defined]
        "report": {"files": report.files, "unparsed": list(report.unparsed), "truncated": report.truncated,
                   "languages": dict(report.languages), "analyzers": list(report.analyzers),
                   "errors": list(report.errors), "too_large": list(report.too_large), "notes": list(report.notes)},
        "states": [{"finding": asdict(s.finding), "status": s.status,
                    "draft": asdict(s.draft) if s.draft is not None else None, "failure": s.failure,
                    "verification": s.verification, "verification_note": s.verification_note}
                   for s in ws.findings()],  # type: ignore[attr-defined]
    }


def save(repo: Path, doc: dict) -> None:
    """Write `doc` atomically (0600, never through a link); `DraftsFileError` when over MAX_BYTES,
    when `load` would not accept it, or when it is not writable. A `doc` that is not kept removes
    the file: an older state would come back wrong after a restart."""
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    if len(text.encode("utf-8")) > MAX_BYTES:
        remove(repo)
        raise DraftsFileError(f"the open audit's drafts are over {MAX_BYTES >> 20} MB and are not kept across a "
                              "restart")
    try:
        AuditFile.model_validate_json(text)  # exactly what `load` will check
    except ValidationError as exc:
        remove(repo)
        where = ".".join(str(part) for part in exc.errors()[0]["loc"])  # field names and indexes, no content
        raise DraftsFileError(f"the open audit's drafts could not be saved ({where} does not fit the saved "
                              "audit); they are not kept across a restart") from None
    from autopatch_tui.core.memory.store_files import ensure_gitignore  # git never sees .autopatch-j/

    try:
        save_private(repo, FILE_NAME, text.encode("utf-8"))  # a kill's leftover is swept at the next start
        ensure_gitignore(StorePaths(repo))
    except (OSError, UnsafePathError) as exc:
        raise DraftsFileError(f"the open audit's drafts could not be saved ({_why(exc)}); they are not kept "
                              "across a restart") from None


def _why(exc: BaseException) -> str:
    if isinstance(exc, (UnsafePathError, PermissionError)):
        return "a link or a read-only folder under .autopatch-j/"
    return type(exc).__name__


def remove(repo: Path) -> None:
    """Remove the file (the audit ended); a link there is removed as a link, never followed."""
    try:
        dfd = open_dir(repo, StorePaths(repo).state_dir, create=False)
    except (OSError, UnsafePathError):
        return
    try:
        os.unlink(FILE_NAME, dir_fd=dfd)
    except FileNotFoundError:
        pass
    except OSError:
        pass  # a read-only folder: a stale file is refused by its thread when it is read back
    finally:
        os.close(dfd)


def load(repo: Path) -> AuditFile | None:
    """The validated file, or None when there is none. `DraftsFileError` when it is there but
    cannot be trusted (a link, a second hard link, not a regular file — a folder, a FIFO: read by
    `core/bounded_json.py`, never blocking —, too large, nested too deep, invalid)."""
    try:
        dfd = open_dir(repo, StorePaths(repo).state_dir, create=False)
    except FileNotFoundError:
        return None
    except (OSError, UnsafePathError):
        raise DraftsFileError("the saved audit was not read: .autopatch-j/ is a link or not readable") from None
    try:
        data = read_bytes(FILE_NAME, max_bytes=MAX_BYTES, dir_fd=dfd, single_link=True,
                          shown=f".autopatch-j/{FILE_NAME}")
    except JsonFileError as exc:
        raise DraftsFileError(f"the saved audit was not read: {exc}") from None
    finally:
        os.close(dfd)
    if data is None:
        return None
    try:
        check_nesting(data, f".autopatch-j/{FILE_NAME}", MAX_DEPTH)
        return AuditFile.model_validate_json(data)
    except JsonFileError as exc:
        raise DraftsFileError(f"the saved audit was not read: {exc}") from None
    except ValidationError:
        raise DraftsFileError("the saved audit was not read: it is not a valid audit file") from None


def finding_of(m: FindingModel) -> Finding:
    return Finding(**m.model_dump())


def draft_of(m: DraftModel | None) -> PatchDraft | None:
    return PatchDraft(**m.model_dump()) if m is not None else None
