"""The audit workspace: the review/runtime state of one `code_audit`.

It holds the findings, each finding's state (`open` → `patched` | `failed`, then `applied` or
`discarded` for a patched one; a patched one becomes `stale` when applying another patch changed
its text) and the current patch draft. An applied patch carries its verification (the analyzer's
re-run on the changed file): resolved, still present, or unverified. `/new` and `/reset` end it; the
project's Memory never stores it (repair turns store only their stable summaries). All methods
are thread-safe: a workflow runs in a worker thread while the UI reads.

The session's current audit is also kept on disk (`drafts_file`: `.autopatch-j/audit.json`), saved
after every change, so its pending patches survive a restart: `ReviewState.restore` reads it back
for the active thread and makes each pending draft again from its file as it is now (the diff shown
is always the edit apply makes, syntax-checked again): re-based when the file changed, `applied`
(unverified) when the file is already the draft's result, or `stale` when its text is gone; apply
checks once more."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.repair.review_state import ReviewState  # noqa: F401  (its home since issue 33)
from autopatch_tui.core.repair.findings import Finding, PatchDraft, bounded
from autopatch_tui.core.repair.patching import DraftError, Edit, digest, holds_result, read_text, rebase_draft
from autopatch_tui.core.repair.scanner import ScanReport

if TYPE_CHECKING:
    from autopatch_tui.core.repair.drafts_file import AuditFile

log = logging.getLogger(__name__)

OPEN, PATCHED, FAILED, APPLIED, DISCARDED, STALE = "open", "patched", "failed", "applied", "discarded", "stale"
RESOLVED, STILL_PRESENT, UNVERIFIED = "resolved", "still present", "unverified"


def _drafts() -> ModuleType:
    """`drafts_file` (its pydantic models), imported when an audit is saved, restored or ended —
    never for the app's first frame, which builds a `ReviewState` (issue 23)."""
    from autopatch_tui.core.repair import drafts_file

    return drafts_file


class WorkspaceError(AutopatchError):
    """No audit workspace, an unknown finding, or a finding in the wrong state for the action."""


@dataclass
class FindingState:
    finding: Finding
    status: str = OPEN
    draft: PatchDraft | None = None
    failure: str = ""  # a short, safe reason (no model text)
    verification: str = ""  # after apply: RESOLVED | STILL_PRESENT | UNVERIFIED
    verification_note: str = ""  # why it is unverified, or where the finding still is


@dataclass
class AuditWorkspace:
    scan_id: str
    scope: tuple[str, ...]
    report: ScanReport
    reviewed: bool = False  # the zero-finding review ran
    states: dict[str, FindingState] = field(default_factory=dict)
    thread_id: str = ""  # the thread the audit belongs to (a restart restores it for that thread only)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _listener: Callable[[AuditWorkspace], None] | None = field(default=None, repr=False)

    @classmethod
    def from_report(cls, scan_id: str, scope: tuple[str, ...], report: ScanReport,
                    thread_id: str = "") -> AuditWorkspace:
        ws = cls(scan_id, scope, report, thread_id=thread_id)
        for f in report.findings:
            ws.states[f.id] = FindingState(f)
        return ws

    def _changed(self) -> None:
        """After a change, under the lock: the listener (the session's saver) sees every state in order."""
        if self._listener is not None:
            self._listener(self)

    def listen(self, listener: Callable[[AuditWorkspace], None] | None) -> None:
        with self._lock:
            self._listener = listener

    def evidence_key(self, finding_id: str) -> str:
        """`<scan id>:<finding id>`: what a repair turn records (contracts §3.1 `evidence_keys`)."""
        return f"{self.scan_id}:{finding_id}"

    def add_findings(self, findings: list[Finding]) -> None:
        with self._lock:
            for f in findings:
                self.states[f.id] = FindingState(f)
            self._changed()

    def get(self, finding_id: str) -> FindingState:
        with self._lock:
            state = self.states.get(finding_id.strip().upper())
            if state is None:
                raise WorkspaceError(f"no finding {finding_id} in this audit")
            return state

    def findings(self) -> list[FindingState]:
        with self._lock:
            return list(self.states.values())

    def open_findings(self) -> list[Finding]:
        with self._lock:
            return [s.finding for s in self.states.values() if s.status == OPEN]

    def count(self, status: str) -> int:
        with self._lock:
            return sum(1 for s in self.states.values() if s.status == status)

    def set_draft(self, draft: PatchDraft) -> None:
        with self._lock:
            state = self.get(draft.finding_id)
            state.status, state.draft, state.failure = PATCHED, draft, ""
            self._changed()

    def set_failed(self, finding_id: str, reason: str) -> None:
        with self._lock:
            state = self.get(finding_id)
            state.status, state.failure = FAILED, bounded(reason)
            self._changed()

    def pending_patch(self, finding_id: str) -> FindingState:
        with self._lock:
            state = self.get(finding_id)
            if state.status != PATCHED or state.draft is None:
                raise WorkspaceError(f"{state.finding.id} has no pending patch (it is {state.status})")
            return state

    def replace_draft(self, draft: PatchDraft) -> None:
        """A revision replaces the current draft — only while the patch is still pending (one step:
        an apply or discard meanwhile is never undone)."""
        with self._lock:
            state = self.pending_patch(draft.finding_id)
            state.draft = draft
            self._changed()

    def close_patch(self, finding_id: str, status: str,
                    action: Callable[[PatchDraft], object] | None = None) -> FindingState:
        """End a pending patch as `status`. `action` (e.g. writing the file) runs first, on the draft
        that is current at that moment, under the lock; if it raises, the patch stays pending. A
        stale patch can only be discarded."""
        with self._lock:
            state = self.get(finding_id)
            if not (status == DISCARDED and state.status == STALE):
                state = self.pending_patch(finding_id)
            if action is not None:
                assert state.draft is not None
                action(state.draft)
            state.status = status
            self._changed()
            return state

    def set_verification(self, finding_id: str, outcome: str, note: str = "") -> None:
        with self._lock:
            state = self.get(finding_id)
            state.verification, state.verification_note = outcome, bounded(note)
            self._changed()

    def rebase_after_apply(self, applied_id: str, edit: Edit, current: str) -> tuple[list[str], list[str]]:
        """After `applied_id`'s patch changed its file (now `current`): every other finding of that
        file gets its moved line; each other pending patch is re-based on the new text, or marked
        stale when its old text is gone (or would no longer parse). (re-based IDs, stale IDs)."""
        rebased: list[str] = []
        stale: list[str] = []
        with self._lock:
            path = self.get(applied_id).finding.path
            for fid, state in self.states.items():
                if fid == applied_id or state.finding.path != path:
                    continue
                moved = edit.moved(state.finding.line)
                state.finding = replace(state.finding, line=edit.start_line if moved is None else moved)
                if state.status != PATCHED or state.draft is None:
                    continue
                done = _rebase(state, current, f"the file changed when the patch for {applied_id} was applied")
                (rebased if done else stale).append(fid)
            self._changed()
        return rebased, stale

    def recheck_drafts(self, repo: Path) -> Recheck:
        """After a restart: each pending draft is made again from its file as it is now — never
        taken from the file it was saved in: a fresh diff, the syntax check run again. A file that
        is exactly the draft's result was patched before the restart (the app ended before it saved
        that): the patch is applied, unverified. Otherwise the draft is re-based (named when the
        file changed since it was drafted) or stale: its text is gone, occurs more than once, the
        file already holds its result, or the result would not parse."""
        out = Recheck()
        with self._lock:
            for fid, state in self.states.items():
                if state.status != PATCHED or state.draft is None:
                    continue
                draft = state.draft
                try:
                    current: str | None = read_text(repo, draft.path)
                except DraftError:
                    current = None
                now = digest(current) if current is not None else ""
                if draft.result_digest and now == draft.result_digest:
                    state.status, state.verification = APPLIED, UNVERIFIED
                    state.verification_note = "applied before the restart; the analyzer did not run again"
                    out.applied.append(fid)
                    continue
                if current is not None and holds_result(current, draft):
                    why = f"{draft.path} already holds the patched text"
                elif now != draft.base_digest:
                    why = f"{draft.path} changed since the patch was drafted"
                else:
                    why = f"the saved patch does not check out against {draft.path}"
                if not _rebase(state, current, why):
                    out.stale.append(fid)
                elif now != draft.base_digest:
                    out.rebased.append(fid)
        return out


@dataclass
class Recheck:
    """What `recheck_drafts` did with each pending draft (finding IDs)."""

    rebased: list[str] = field(default_factory=list)  # the file changed: a fresh diff on its new text
    stale: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)  # the file is the draft's result: applied, unverified


def _rebase(state: FindingState, current: str | None, failure: str) -> bool:
    """`state`'s pending draft re-based on the file's text `current` (None: unreadable): a fresh
    diff and syntax check; or the patch becomes stale with `failure`. True when re-based."""
    assert state.draft is not None
    draft = rebase_draft(state.draft, current) if current is not None else None
    if draft is None:
        state.status, state.failure = STALE, bounded(failure)
        return False
    state.draft = draft
    return True


def workspace_of(saved: AuditFile) -> AuditWorkspace:
    r = saved.report
    report = ScanReport(files=r.files, unparsed=list(r.unparsed), truncated=r.truncated, languages=dict(r.languages),
                        analyzers=list(r.analyzers), errors=list(r.errors), too_large=list(r.too_large),
                        notes=list(r.notes))
    ws = AuditWorkspace(saved.scan_id, tuple(saved.scope), report, reviewed=saved.reviewed, thread_id=saved.thread_id)
    for s in saved.states:
        finding = _drafts().finding_of(s.finding)
        ws.states[finding.id] = FindingState(finding, s.status, _drafts().draft_of(s.draft), s.failure,
                                             s.verification, s.verification_note)
    report.findings = [s.finding for s in ws.states.values() if s.finding.origin == "scanner"]
    return ws

