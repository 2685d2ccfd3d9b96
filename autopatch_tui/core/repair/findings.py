"""The values of one audit: a finding (from an analyzer — Ruff, Semgrep — or the zero-finding
review) and a patch draft bound to one finding. Plain frozen values; the workspace owns their state."""

from __future__ import annotations

from dataclasses import dataclass

SCANNER = "scanner"
REVIEW = "review"
REVIEW_CHECK_ID = "APJ-REVIEW"
MAX_MESSAGE_CHARS = 4_000  # a finding's message, a failure or verification note (what the saved audit holds)


def bounded(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` cut to at most `limit` characters (an analyzer may quote a whole identifier or line)."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass(frozen=True)
class Finding:
    id: str  # "F1", "F2", … in scan order; stable for the life of the workspace
    path: str  # repository-relative, POSIX separators
    line: int
    check_id: str  # the analyzer's rule ID ("S324", "java.weak-md5") or REVIEW_CHECK_ID
    message: str
    origin: str = SCANNER  # SCANNER | REVIEW
    tool: str = ""  # the analyzer ("ruff", "semgrep"); "" for a finding the review reported
    severity: str = ""  # "error" | "warning" | "info"
    url: str = ""  # the rule's documentation, when the analyzer gives one
    column: int = 1
    end_line: int = 0
    end_column: int = 0

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class PatchDraft:
    """A search-and-replace of one exact, unique text in the finding's file, with its unified diff."""

    finding_id: str
    path: str
    old_text: str
    new_text: str
    diff: str
    revision: int = 1  # 1 for the first draft; +1 each accepted `patch_revise`
    base_digest: str = ""  # sha256 of the file text the diff was made against (a restart re-checks it)
    result_digest: str = ""  # sha256 of that text with the edit made (a restart tells an applied patch)
