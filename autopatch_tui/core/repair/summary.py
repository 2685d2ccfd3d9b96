"""The stable workflow summaries that repair turns show and save: the same text for both, built
from the workspace's state only — never the model's raw answer, a tool trace or Rich markup."""

from __future__ import annotations

from autopatch_tui.core.repair.findings import PatchDraft
from autopatch_tui.core.repair.languages import counts_text
from autopatch_tui.core.repair.scanner import too_large_text
from autopatch_tui.core.repair.workspace import (
    APPLIED,
    DISCARDED,
    FAILED,
    OPEN,
    PATCHED,
    RESOLVED,
    STALE,
    STILL_PRESENT,
    AuditWorkspace,
    FindingState,
)

MAX_LISTED = 20
STATUS_TEXT = {OPEN: "not processed yet", PATCHED: "patch pending review", APPLIED: "patch applied",
               DISCARDED: "patch discarded", STALE: "patch stale"}


def verification_text(s: FindingState) -> str:
    """The outcome of the analyzer's re-run after an apply, as one clause."""
    f = s.finding
    if s.verification == RESOLVED:
        return f"verified: {f.check_id} is resolved" + (f" ({f.tool})" if f.tool else "")
    if s.verification == STILL_PRESENT:
        return f"{f.check_id} is still present ({s.verification_note})"
    if s.verification:
        return f"unverified ({s.verification_note})" if s.verification_note else "unverified"
    return ""


def _status(s: FindingState) -> str:
    if s.status == FAILED:
        return f"failed: {s.failure}"
    if s.status == STALE:
        return f"patch stale: {s.failure}"
    text = STATUS_TEXT[s.status]
    verified = verification_text(s) if s.status == APPLIED else ""
    return f"{text}, {verified}" if verified else text


def _scope(ws: AuditWorkspace) -> str:
    return ", ".join(ws.scope) if ws.scope else "the repository"


def audit_summary(ws: AuditWorkspace, *, reviewed_now: int | None = None, model: bool = True,
                  review_error: str = "", dropped_patches: int = 0) -> str:
    """`reviewed_now`: findings the zero-finding review reported in this turn (None: no review ran);
    `review_error`: why that review could not finish (a safe category, never the provider's text);
    `dropped_patches`: pending patches of the audit this one replaced (never applied)."""
    report = ws.report
    states = ws.findings()
    scanned = sum(1 for s in states if s.finding.origin == "scanner")
    languages = counts_text(report.languages)
    tools = " and ".join(report.analyzers) or "the static scan"
    lines = [f"Code audit of {_scope(ws)} ({report.files} file(s)" + (f": {languages}" if languages else "")
             + f"): {scanned} finding(s) from {tools}" + (" (the scan stopped at its limit)" if report.truncated
                                                         else "") + "."]
    for error in report.errors:
        lines.append(f"Not analyzed: {error}.")
    if report.too_large:
        lines.append(too_large_text(report.too_large) + ".")
    for note in report.notes:
        lines.append(f"{note}.")
    if dropped_patches:
        lines.append(f"This audit replaced the previous one; its {dropped_patches} pending patch(es) were not applied.")
    if report.unparsed:
        shown = ", ".join(report.unparsed[:5]) + (" …" if len(report.unparsed) > 5 else "")
        lines.append(f"{len(report.unparsed)} file(s) could not be parsed and were skipped: {shown}")
    if review_error:
        lines.append(f"Second review of the zero-finding scan failed: {review_error}; run /audit again to retry.")
    if reviewed_now is not None:
        lines.append(f"Second review of the zero-finding scan: {reviewed_now} finding(s) reported."
                     if reviewed_now else "Second review of the zero-finding scan: no issues found.")
    for s in states[:MAX_LISTED]:
        f = s.finding
        revision = f" (revision {s.draft.revision})" if s.draft is not None and s.draft.revision > 1 else ""
        lines.append(f"- {f.id} {f.path}:{f.line} {f.check_id} {f.message} — {_status(s)}{revision}")
    if len(states) > MAX_LISTED:
        lines.append(f"- … and {len(states) - MAX_LISTED} more")
    remaining = ws.count(OPEN)
    stale = ws.count(STALE)
    lines.append(f"Pending patches: {ws.count(PATCHED)} · failed: {ws.count(FAILED)} · remaining: {remaining}"
                 + (f" · stale: {stale}" if stale else ""))
    if not model and remaining:
        lines.append("No model is configured, so no patches were drafted; the findings stay open.")
    hints = []
    if ws.count(PATCHED):
        hints.append("/patch show ID, /patch apply ID, /patch explain ID, /patch revise ID TEXT")
    if remaining and model:
        hints.append("/audit next drafts the next batch")
    if stale:
        hints.append("/patch discard ID drops a stale patch (/audit again drafts anew)")
    if hints:
        lines.append("Next: " + "; ".join(hints) + ".")
    return "\n".join(lines)


def revise_summary(finding_id: str, outcome: str, *, draft: PatchDraft | None = None, reason: str = "") -> str:
    if outcome == "revised" and draft is not None:
        return (f"Patch for {finding_id} revised (revision {draft.revision}) in {draft.path}:\n\n"
                f"```diff\n{draft.diff}```")
    if outcome == "no_draft":
        return f"No revised draft was produced for {finding_id}; the pending patch is unchanged."
    return f"The revised draft was refused ({reason}); the pending patch for {finding_id} is unchanged."


def patch_text(finding_id: str, draft: PatchDraft, status: str) -> str:
    return (f"Patch for {finding_id} (revision {draft.revision}, {STATUS_TEXT.get(status, status)}) in "
            f"{draft.path}:\n\n```diff\n{draft.diff}```")


def apply_text(s: FindingState, rebased: list[str], stale: list[str]) -> str:
    """What `/patch apply` shows: the write, the analyzer's verdict, the other patches of the file."""
    assert s.draft is not None
    lines = [f"Applied the patch for {s.finding.id} to {s.draft.path}."]
    verified = verification_text(s)
    if verified:
        lines.append(verified[0].upper() + verified[1:] + ".")
    if rebased:
        lines.append(f"Re-based on the changed file: {', '.join(rebased)} (/patch show ID).")
    if stale:
        lines.append(f"Stale now (their text changed): {', '.join(stale)}; /patch discard ID, then /audit again.")
    return "\n".join(lines)
