"""The stable workflow summaries that repair turns show and save: the same text for both, built
from the workspace's state only — never the model's raw answer, a tool trace or Rich markup."""

from __future__ import annotations

from autopatch_tui.core.repair.findings import PatchDraft
from autopatch_tui.core.repair.workspace import (
    APPLIED,
    DISCARDED,
    FAILED,
    OPEN,
    PATCHED,
    AuditWorkspace,
)

MAX_LISTED = 20
STATUS_TEXT = {OPEN: "not processed yet", PATCHED: "patch pending review", APPLIED: "patch applied",
               DISCARDED: "patch discarded"}


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
    lines = [f"Code audit of {_scope(ws)} ({report.files} Python file(s)): {scanned} finding(s) from the static "
             "scan" + (" (the scan stopped at its limit)" if report.truncated else "") + "."]
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
        status = f"failed: {s.failure}" if s.status == FAILED else STATUS_TEXT[s.status]
        revision = f" (revision {s.draft.revision})" if s.draft is not None and s.draft.revision > 1 else ""
        lines.append(f"- {f.id} {f.path}:{f.line} {f.check_id} {f.message} — {status}{revision}")
    if len(states) > MAX_LISTED:
        lines.append(f"- … and {len(states) - MAX_LISTED} more")
    remaining = ws.count(OPEN)
    lines.append(f"Pending patches: {ws.count(PATCHED)} · failed: {ws.count(FAILED)} · remaining: {remaining}")
    if not model and remaining:
        lines.append("No model is configured, so no patches were drafted; the findings stay open.")
    hints = []
    if ws.count(PATCHED):
        hints.append("/patch show ID, /patch apply ID, /patch explain ID, /patch revise ID TEXT")
    if remaining and model:
        hints.append("/audit next drafts the next batch")
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
