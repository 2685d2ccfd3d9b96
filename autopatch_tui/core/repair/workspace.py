"""The audit workspace: the review/runtime state of one `code_audit`, held in memory only.

It holds the findings, each finding's state (`open` → `patched` | `failed`, then `applied` or
`discarded` for a patched one; a patched one becomes `stale` when applying another patch changed
its text) and the current patch draft. An applied patch carries its verification (the analyzer's
re-run on the changed file): resolved, still present, or unverified. `/new` and `/reset` end it; the
project's Memory never stores it (repair turns store only their stable summaries). All methods
are thread-safe: a workflow runs in a worker thread while the UI reads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.repair.findings import Finding, PatchDraft
from autopatch_tui.core.repair.patching import Edit, rebase_draft
from autopatch_tui.core.repair.scanner import ScanReport

OPEN, PATCHED, FAILED, APPLIED, DISCARDED, STALE = "open", "patched", "failed", "applied", "discarded", "stale"
RESOLVED, STILL_PRESENT, UNVERIFIED = "resolved", "still present", "unverified"


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
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @classmethod
    def from_report(cls, scan_id: str, scope: tuple[str, ...], report: ScanReport) -> AuditWorkspace:
        ws = cls(scan_id, scope, report)
        for f in report.findings:
            ws.states[f.id] = FindingState(f)
        return ws

    def evidence_key(self, finding_id: str) -> str:
        """`<scan id>:<finding id>`: what a repair turn records (contracts §3.1 `evidence_keys`)."""
        return f"{self.scan_id}:{finding_id}"

    def add_findings(self, findings: list[Finding]) -> None:
        with self._lock:
            for f in findings:
                self.states[f.id] = FindingState(f)

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

    def set_failed(self, finding_id: str, reason: str) -> None:
        with self._lock:
            state = self.get(finding_id)
            state.status, state.failure = FAILED, reason

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
            return state

    def set_verification(self, finding_id: str, outcome: str, note: str = "") -> None:
        with self._lock:
            state = self.get(finding_id)
            state.verification, state.verification_note = outcome, note

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
                draft = rebase_draft(state.draft, current)
                if draft is None:
                    state.status, state.failure = STALE, f"the file changed when the patch for {applied_id} was applied"
                    stale.append(fid)
                else:
                    state.draft = draft
                    rebased.append(fid)
        return rebased, stale


class ReviewState:
    """The one current audit workspace of an app session (or none)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workspace: AuditWorkspace | None = None
        self._generation = 0  # +1 at each end(): a request can tell that /new or /reset ran meanwhile

    @property
    def workspace(self) -> AuditWorkspace | None:
        with self._lock:
            return self._workspace

    def require(self) -> AuditWorkspace:
        ws = self.workspace
        if ws is None:
            raise WorkspaceError("no audit is open; start one with /audit [@path]")
        return ws

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def start(self, workspace: AuditWorkspace, *, since: int | None = None,
              still_current: Callable[[], bool] | None = None) -> bool:
        """Make `workspace` the current audit. With `since` (a `generation` read when the request
        began), refused when the review state ended after it; with `still_current`, refused when
        it answers False (checked under the lock). A refused request keeps its workspace to itself.
        True when the workspace became current."""
        with self._lock:
            if since is not None and since != self._generation:
                return False
            if still_current is not None and not still_current():
                return False
            self._workspace = workspace
            return True

    def end(self) -> bool:
        """End the current audit (on /new and /reset); True when there was one."""
        with self._lock:
            had, self._workspace = self._workspace is not None, None
            self._generation += 1
            return had
