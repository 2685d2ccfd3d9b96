"""System prompts and the per-finding user message of the repair agent. Nothing here is stored:
repair turns persist only the user's RAW text and the workflow's stable summary."""

from __future__ import annotations

from autopatch_tui.core.repair.findings import Finding, PatchDraft

REPAIR_RULES = (
    "Read the current source with read_file before you rely on it. The Memory Map and memory_search hold only "
    "project preferences and decisions that apply to these paths; they never override a finding's evidence, the "
    "finding binding or the patch review."
)
PATCH_SYSTEM = (
    "You repair one static-analysis finding in the developer's repository. Read the code around the finding, then "
    "call propose_patch once with the finding ID, the exact current text to replace (it must occur exactly once in "
    "the file) and its replacement. Keep the change minimal and behaviour-preserving apart from the fix. If the "
    "finding is a false positive, do not propose a patch and say why in one sentence. " + REPAIR_RULES
)
REVIEW_SYSTEM = (
    "The static analyzers found nothing in the files below. Review them once more for real defects (error handling, "
    "resource leaks, injection, wrong logic). For each defect you are sure of, call report_finding with the path, "
    "the line and a one-sentence message. Report nothing rather than guess. " + REPAIR_RULES
)
EXPLAIN_SYSTEM = (
    "Explain a pending patch to the developer: what the finding is, what the patch changes and why, and any risk. "
    "Answer in Markdown. " + REPAIR_RULES
)
REVISE_SYSTEM = (
    "Revise a pending patch as the developer asks. Read the current code, then call propose_patch once with the "
    "bound finding ID, the exact current text to replace (as the file is now, without the pending patch) and the "
    "revised replacement. " + REPAIR_RULES
)


def finding_text(f: Finding) -> str:
    return f"Finding {f.id}: {f.check_id} at {f.path}:{f.line} — {f.message}"


def patch_request(f: Finding, instructions: str) -> str:
    text = finding_text(f)
    if f.tool:
        text += f"\nReported by {f.tool}" + (f"; rule documentation: {f.url}" if f.url else "") + "."
    text += "\nPropose a patch for it."
    if instructions.strip():
        text += "\nThe developer's request for this audit:\n" + instructions
    return text


MAX_REVIEW_FILES = 200  # listed in the review request; the model can list folders for the rest


def review_request(paths: list[str], instructions: str) -> str:
    text = "Files to review:\n" + "\n".join(f"- {p}" for p in paths[:MAX_REVIEW_FILES])
    if len(paths) > MAX_REVIEW_FILES:
        text += f"\n- … and {len(paths) - MAX_REVIEW_FILES} more source files in the same scope"
    if instructions.strip():
        text += "\nThe developer's request for this audit:\n" + instructions
    return text


def patch_context(f: Finding, draft: PatchDraft, question: str, *, heading: str) -> str:
    return (f"{finding_text(f)}\nPending patch (revision {draft.revision}):\n```diff\n{draft.diff}```\n"
            f"{heading}\n{question}")
