"""The repair workflows: `code_audit` (static scan → zero-finding review when the scan is empty →
a batch of patch drafts), `/audit next`, `patch_explain`, `patch_revise`, and the local patch
actions (show, apply, discard).

Each workflow turn saves the user's RAW text first (`begin_turn`) and, at its end, the stable
summary it shows (`complete_turn`) — the same text. A scan that fails before the workspace exists
marks the turn `failed` and re-raises the scan error; so does an exception of the agent or the
workspace. The agent runs under the repair policy (path-applicable project preferences and
decisions only; no history, no discussion). A request keeps the workspace it started with, even
if `/new` ends the review state meanwhile — and an audit that began before `/new` or `/reset` does
not make its workspace the session's current audit afterwards."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autopatch_tui.core.agent.loop import AgentCallbacks, AgentLoop, AgentRun
from autopatch_tui.core.agent.request_context import chat_model, open_request
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.llm.errors import RETRYABLE_PROVIDER_CATEGORIES, ProviderError
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.recall.query import RecallQuery
from autopatch_tui.core.repair import prompts
from autopatch_tui.core.repair.analyzers import default_analyzers
from autopatch_tui.core.repair.analyzers.base import AnalyzerError
from autopatch_tui.core.repair.findings import (
    REVIEW,
    REVIEW_CHECK_ID,
    Finding,
    PatchDraft,
)
from autopatch_tui.core.repair.patching import (
    BindingError,
    DraftError,
    Edit,
    apply_draft,
    make_draft,
    read_text,
)
from autopatch_tui.core.repair.scan_progress import ScanTicker
from autopatch_tui.core.repair.scanner import ScanError, Scanner
from autopatch_tui.core.repair.summary import apply_text, audit_summary, patch_text, revise_summary
from autopatch_tui.core.repair.tools import RepairToolBox, repair_toolbox
from autopatch_tui.core.repair.workspace import (
    APPLIED,
    DISCARDED,
    PATCHED,
    RESOLVED,
    STILL_PRESENT,
    UNVERIFIED,
    AuditWorkspace,
    FindingState,
    ReviewState,
    WorkspaceError,
)

AUDIT_BATCH = 5  # findings drafted per audit turn


@dataclass(frozen=True)
class RepairResult:
    turn_id: str
    thread_id: str
    answer: str  # exactly what was saved as the turn's assistant text
    state: str
    intent: str


def _noop(_: str) -> None:
    return None


def normalized_scope(paths: Sequence[str]) -> tuple[str, ...]:
    """Stripped, without trailing slashes, duplicates dropped. "/" stays "/" (absolute: the scanner
    refuses it) — it must not become "." (the whole repository)."""
    return tuple(dict.fromkeys(p.strip().rstrip("/") or p.strip() for p in paths if p.strip()))


def patch_query(intent: str, text: str, f: Finding, draft: PatchDraft) -> RecallQuery:
    """The typed recall query of a request about one finding's patch."""
    return RecallQuery(intent, text, (f.path,), finding_path=f.path, check_id=f.check_id, finding_message=f.message,
                       patch_path=draft.path, finding_id=f.id)


class RepairService:
    def __init__(self, manager: MemoryManager, review: ReviewState) -> None:
        self.manager = manager
        self.review = review

    def scanner(self) -> Scanner:
        """The scanner with the analyzers the user's settings select."""
        return Scanner(self.manager.repo, default_analyzers(getattr(self.manager, "settings", None)))

    # --- turns --------------------------------------------------------------------------
    def _turn(self, text: str, intent: str, scope: Sequence[str], keys: Sequence[str],
              body: Callable[[turn_ops.TurnHandle], str]) -> RepairResult:
        mgr = self.manager
        handle = mgr.begin_turn(text, intent=intent, scope_paths=list(scope), evidence_keys=list(keys))
        with mgr.failing_turn(handle):
            answer = body(handle)
        mgr.complete_turn(handle, answer)
        return RepairResult(handle.turn_id, handle.thread_id, answer, "completed", intent)

    def _run_agent(self, handle: turn_ops.TurnHandle, intent: str, query: RecallQuery, system_text: str,
                   user_text: str, *, workspace: AuditWorkspace | None, mode: str,
                   review_paths: tuple[str, ...] = (), callbacks: AgentCallbacks | None = None
                   ) -> tuple[AgentRun, RepairToolBox]:
        """One agent request through the request door: the repair policy's Map and tools, the
        instruction files of the request's paths, no history."""
        with open_request(self.manager, handle, intent, query) as req:
            toolbox = repair_toolbox(req.session, self.manager.repo, workspace=workspace, mode=mode,
                                     review_paths=review_paths)
            # ToolsRequiredError without tools
            loop = AgentLoop(req.client, req.model, profile=req.profile, require_tools=True)
            return req.run(loop, system_text, user_text, toolbox, callbacks), toolbox

    # --- code_audit ---------------------------------------------------------------------
    def audit(self, text: str, scope_paths: Sequence[str] = (), *, progress: Callable[[str], None] = _noop,
              callbacks: AgentCallbacks | None = None) -> RepairResult:
        scope = normalized_scope(scope_paths)
        since = self.review.generation  # before the turn begins: a /new from now on ends this audit
        return self._turn(text, "code_audit", scope, (),
                          lambda handle: self._audit_body(handle, text, scope, progress, callbacks, since))

    def audit_generation(self) -> int:
        """The review state's generation (read before a routed turn begins: see `audit_turn`)."""
        return self.review.generation

    def pending_patches(self) -> int:
        """The open audit's pending patches (routing never starts an audit that would drop them)."""
        return self.review.pending_patches()

    def audit_turn(self, handle: turn_ops.TurnHandle, text: str, *, progress: Callable[[str], None] = _noop,
                   callbacks: AgentCallbacks | None = None, since: int | None = None) -> str:
        """The audit of a turn that routing already started (its caller completes or fails it).
        `since`: the review state's `generation` read before the turn began (default: now)."""
        return self._audit_body(handle, text, normalized_scope(handle.scope_paths), progress, callbacks,
                                self.review.generation if since is None else since)

    def _audit_body(self, handle: turn_ops.TurnHandle, text: str, scope: tuple[str, ...],
                    progress: Callable[[str], None], callbacks: AgentCallbacks | None, since: int) -> str:
        progress("scanning…")
        with ScanTicker(progress) as ticker:  # files done of the total and the time, while it runs
            report = self.scanner().scan(scope, step=ticker.step)  # ScanError: no workspace, the turn fails
        ws = AuditWorkspace.from_report(new_id("scan"), scope, report, thread_id=handle.thread_id)
        # the session's current audit — unless /new or /reset ran since the request began: then the
        # request keeps its workspace to itself and the new thread starts without an open audit
        previous = self.review.workspace
        became_current = self.review.start(
            ws, since=since, still_current=lambda: self.manager.active_thread_id() == handle.thread_id)
        dropped = previous.count(PATCHED) if became_current and previous is not None else 0
        has_model = self.manager.client is not None
        reviewed: int | None = None
        review_error = ""
        if not report.findings and has_model:
            progress("second review of the zero-finding scan…")
            try:
                reviewed = self._zero_finding_review(handle, ws, text, callbacks)
            except ProviderError as exc:  # like a finding of the batch: a transient failure is a result
                if exc.category not in RETRYABLE_PROVIDER_CATEGORIES:
                    raise
                review_error = f"model error ({exc.category})"
        if has_model:
            self._batch(handle, ws, text, progress, callbacks)
        return audit_summary(ws, reviewed_now=reviewed, model=has_model, review_error=review_error,
                             dropped_patches=dropped)

    def audit_next(self, text: str = "/audit next", *, progress: Callable[[str], None] = _noop,
                   callbacks: AgentCallbacks | None = None) -> RepairResult:
        ws = self.review.require()
        if not ws.open_findings():
            raise WorkspaceError("every finding of this audit was already processed")
        chat_model(self.manager)  # drafting needs a model: refuse before anything is stored

        def body(handle: turn_ops.TurnHandle) -> str:
            self._batch(handle, ws, text, progress, callbacks)
            return audit_summary(ws)

        return self._turn(text, "code_audit", ws.scope, (), body)

    def _zero_finding_review(self, handle: turn_ops.TurnHandle, ws: AuditWorkspace, text: str,
                             callbacks: AgentCallbacks | None) -> int:
        paths = self._reviewable(ws)
        query = RecallQuery("zero_finding_review", text, paths)
        _, tools = self._run_agent(handle, "zero_finding_review", query, prompts.REVIEW_SYSTEM,
                                   prompts.review_request(list(paths), text), workspace=ws, mode="review",
                                   review_paths=paths, callbacks=callbacks)
        start = len(ws.findings())
        found = [Finding(f"F{start + n}", r.path, r.line, REVIEW_CHECK_ID, r.message, REVIEW)
                 for n, r in enumerate(sorted(tools.reported, key=lambda r: (r.path, r.line)), 1)]
        ws.add_findings(found)
        ws.reviewed = True
        return len(found)

    def _reviewable(self, ws: AuditWorkspace) -> tuple[str, ...]:
        return tuple(self.scanner().files(ws.scope))

    def _batch(self, handle: turn_ops.TurnHandle, ws: AuditWorkspace, text: str, progress: Callable[[str], None],
               callbacks: AgentCallbacks | None) -> None:
        """Draft patches for the next AUDIT_BATCH open findings. A transient model failure fails
        that finding; any other model failure stops the batch and fails the turn."""
        batch = ws.open_findings()[:AUDIT_BATCH]
        turn_ops.set_evidence_keys(self.manager.store.conn(), handle.turn_id,
                                   [ws.evidence_key(f.id) for f in batch])
        for n, finding in enumerate(batch, 1):
            progress(f"drafting a patch for {finding.id} ({n} of {len(batch)})…")
            query = RecallQuery("code_audit", text, (finding.path,), finding_path=finding.path,
                                check_id=finding.check_id, finding_message=finding.message, finding_id=finding.id)
            try:
                _, tools = self._run_agent(handle, "code_audit", query, prompts.PATCH_SYSTEM,
                                           prompts.patch_request(finding, text), workspace=ws, mode="patch",
                                           callbacks=callbacks)
            except ProviderError as exc:
                if exc.category not in RETRYABLE_PROVIDER_CATEGORIES:
                    raise
                ws.set_failed(finding.id, f"model error ({exc.category})")
                continue
            proposal = tools.proposal
            if proposal is None:  # a proposal the check refused is not "none proposed": say why
                ws.set_failed(finding.id, f"draft refused: {tools.refused}" if tools.refused
                              else "no patch was proposed")
                continue
            try:
                ws.set_draft(make_draft(self.manager.repo, finding, finding_id=proposal.finding_id,
                                        old_text=proposal.old_text, new_text=proposal.new_text))
            except DraftError as exc:
                ws.set_failed(finding.id, f"draft refused: {exc}")

    # --- patch_explain / patch_revise ---------------------------------------------------
    def _pending_patch(self, finding_id: str) -> tuple[AuditWorkspace, Finding, PatchDraft]:
        """The open audit, the finding and its pending draft — refused before anything is stored
        (no audit, no pending patch, no model)."""
        ws = self.review.require()
        state = ws.pending_patch(finding_id)
        chat_model(self.manager)
        assert state.draft is not None
        return ws, state.finding, state.draft

    def explain(self, finding_id: str, question: str, text: str, *,
                callbacks: AgentCallbacks | None = None) -> RepairResult:
        ws, f, draft = self._pending_patch(finding_id)

        def body(handle: turn_ops.TurnHandle) -> str:
            query = patch_query("patch_explain", question, f, draft)
            run, _ = self._run_agent(handle, "patch_explain", query, prompts.EXPLAIN_SYSTEM,
                                     prompts.patch_context(f, draft, question or "Explain this patch.",
                                                           heading="The developer asks:"),
                                     workspace=ws, mode="explain", callbacks=callbacks)
            if not run.answer.strip():
                raise WorkspaceError("the model returned an empty explanation")
            return run.answer

        return self._turn(text, "patch_explain", (f.path,), (ws.evidence_key(f.id),), body)

    def revise(self, finding_id: str, instructions: str, text: str, *,
               callbacks: AgentCallbacks | None = None) -> RepairResult:
        ws, f, current = self._pending_patch(finding_id)

        def body(handle: turn_ops.TurnHandle) -> str:
            query = patch_query("patch_revise", instructions, f, current)
            _, tools = self._run_agent(handle, "patch_revise", query, prompts.REVISE_SYSTEM,
                                       prompts.patch_context(f, current, instructions,
                                                             heading="The developer wants this revision:"),
                                       workspace=ws, mode="patch", callbacks=callbacks)
            # the workflow reads the draft, checks its binding, then replaces the current patch
            proposal = tools.proposal
            if proposal is None:
                if tools.refused:  # proposed, but refused by the check: never "no patch was proposed"
                    return revise_summary(f.id, "refused", reason=tools.refused)
                return revise_summary(f.id, "no_draft")
            try:
                draft = make_draft(self.manager.repo, f, finding_id=proposal.finding_id, old_text=proposal.old_text,
                                   new_text=proposal.new_text, revision=current.revision + 1)
            except BindingError as exc:
                return revise_summary(f.id, "refused", reason=f"binding: {exc}")
            except DraftError as exc:
                return revise_summary(f.id, "refused", reason=str(exc))
            ws.replace_draft(draft)  # only while still pending (not applied or discarded meanwhile)
            return revise_summary(f.id, "revised", draft=draft)

        return self._turn(text, "patch_revise", (f.path,), (ws.evidence_key(f.id),), body)

    # --- local actions (no model, no turn) ----------------------------------------------
    def show(self, finding_id: str) -> str:
        state = self.review.require().get(finding_id)
        if state.draft is None:
            raise WorkspaceError(f"{state.finding.id} has no patch ({state.status})")
        return patch_text(state.finding.id, state.draft, state.status)

    def summary(self) -> str:
        return audit_summary(self.review.require(), model=self.manager.client is not None)

    def apply(self, finding_id: str) -> str:
        """Write the pending patch, re-base (or mark stale) the other pending patches of its file,
        then re-run the finding's analyzer on the file: resolved, still present or unverified."""
        ws = self.review.require()
        edits: list[Edit] = []
        # the draft current at this moment is written and closed in one step (a revision cannot slip in)
        state = ws.close_patch(finding_id, APPLIED,
                               action=lambda draft: edits.append(apply_draft(self.manager.repo, draft)))
        assert state.draft is not None and edits
        rebased: list[str] = []
        stale: list[str] = []
        try:
            current = read_text(self.manager.repo, state.draft.path)
        except DraftError:
            current = None
        if current is not None:
            rebased, stale = ws.rebase_after_apply(state.finding.id, edits[0], current)
        self._verify(ws, state, edits[0])
        return apply_text(state, rebased, stale)

    def _verify(self, ws: AuditWorkspace, state: FindingState, edit: Edit) -> None:
        f = state.finding
        if not f.tool:
            ws.set_verification(f.id, UNVERIFIED, "no analyzer checks a finding the review reported")
            return
        try:
            fresh = self.scanner().recheck(f.path, f.tool)
        except (AnalyzerError, ScanError) as exc:
            ws.set_verification(f.id, UNVERIFIED, str(exc))
            return
        moved = edit.moved(f.line)
        lines = set(edit.new_span) if moved is None else {moved}
        left = sorted(t.line for t in fresh if t.rule_id == f.check_id and t.line in lines)
        if left:
            ws.set_verification(f.id, STILL_PRESENT, f"{f.tool} reports it at {f.path}:{left[0]}")
        else:
            ws.set_verification(f.id, RESOLVED)

    def discard(self, finding_id: str) -> str:
        ws = self.review.require()
        state = ws.close_patch(finding_id, DISCARDED)
        return f"Discarded the patch for {state.finding.id}; {state.finding.path} is unchanged."
