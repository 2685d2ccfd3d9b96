"""The repair agent's tools: the Memory tools (under the repair policy), read-only source tools,
and one workflow tool — `propose_patch` for patch drafting and revision, `report_finding` for the
zero-finding review. The tools only record what the model proposes; the workflow decides after
the agent ends (binding check, validation, replacement)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autopatch_tui.core.agent.source_tools import MAX_FILE_BYTES, SourceToolError, SourceTools
from autopatch_tui.core.agent.tools import MEMORY_TOOLS, SOURCE_TOOLS, ToolBox, _fn
from autopatch_tui.core.confine import ConfinementError, read_confined
from autopatch_tui.core.repair.patching import DraftError, make_draft
from autopatch_tui.core.repair.workspace import AuditWorkspace, WorkspaceError

MAX_REPORTED = 10
MAX_REPORT_MESSAGE = 300

PROPOSE_PATCH = _fn("propose_patch", "Propose the patch for a finding as an exact search-and-replace in its file.", {
    "finding_id": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
    ["finding_id", "old_text", "new_text"])
REPORT_FINDING = _fn("report_finding", "Report one defect the scanner missed.", {
    "path": {"type": "string"}, "line": {"type": "integer"}, "message": {"type": "string"}},
    ["path", "line", "message"])


@dataclass(frozen=True)
class Proposal:
    finding_id: str  # as the model named it
    old_text: str
    new_text: str


@dataclass(frozen=True)
class Reported:
    path: str
    line: int
    message: str


@dataclass
class RepairToolBox(ToolBox):
    workspace: AuditWorkspace | None = None
    mode: str = "explain"  # "patch" (propose_patch) | "review" (report_finding) | "explain"
    review_paths: tuple[str, ...] = ()
    proposal: Proposal | None = None
    refused: str | None = None  # why the last propose_patch was refused (the model may not try again)
    reported: list[Reported] = field(default_factory=list)

    @property
    def schemas(self) -> list[dict]:
        extra = [PROPOSE_PATCH] if self.mode == "patch" else [REPORT_FINDING] if self.mode == "review" else []
        return MEMORY_TOOLS + SOURCE_TOOLS + extra

    def _dispatch(self, name: str, args: dict) -> str:
        try:
            if name == "propose_patch" and self.mode == "patch":
                return self._propose(str(args["finding_id"]), args["old_text"], args["new_text"])
            if name == "report_finding" and self.mode == "review":
                return self._report(str(args["path"]), int(args["line"]), str(args["message"]))
        except (DraftError, WorkspaceError, SourceToolError) as exc:
            if name == "propose_patch":
                self.refused = str(exc)
            return f"error: {exc}"
        return super()._dispatch(name, args)

    def _propose(self, finding_id: str, old_text: object, new_text: object) -> str:
        assert self.workspace is not None and self.source is not None
        state = self.workspace.get(finding_id)
        if not isinstance(old_text, str) or not isinstance(new_text, str):
            raise DraftError("old_text and new_text must be strings")
        make_draft(self.source.repo, state.finding, finding_id=state.finding.id, old_text=old_text,
                   new_text=new_text)  # feedback now; the workflow checks again when the agent ends
        self.proposal = Proposal(finding_id.strip().upper(), old_text, new_text)
        self.refused = None
        return f"draft recorded for {state.finding.id}; it is checked when you finish. Reply with one sentence."

    def _report(self, path: str, line: int, message: str) -> str:
        assert self.source is not None
        target = self.source.resolve(path)
        rel = target.relative_to(self.source.repo).as_posix()
        if rel not in self.review_paths:
            raise SourceToolError(f"{rel} is not one of the reviewed files")
        try:  # never a FIFO swapped in since the scan (it would block the read)
            _, data = read_confined(self.source.repo, rel, MAX_FILE_BYTES)
        except ConfinementError as exc:
            raise SourceToolError(f"{rel}: {exc}") from None
        lines = data.decode("utf-8", errors="replace").count("\n") + 1
        if not 1 <= line <= lines:
            raise SourceToolError(f"line {line} is outside 1..{lines}")
        message = " ".join(message.split())[:MAX_REPORT_MESSAGE]
        if not message:
            raise SourceToolError("a message is required")
        if any(r.path == rel and r.line == line for r in self.reported):
            return f"already reported {rel}:{line}"
        if len(self.reported) >= MAX_REPORTED:
            raise SourceToolError(f"at most {MAX_REPORTED} findings can be reported")
        self.reported.append(Reported(rel, line, message))
        return f"reported {rel}:{line}"


def repair_toolbox(recall, repo: Path, **kw) -> RepairToolBox:  # type: ignore[no-untyped-def]
    return RepairToolBox(recall, SourceTools(repo), **kw)
