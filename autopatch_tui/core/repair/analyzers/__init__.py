"""The analyzers behind `/audit`: Ruff for Python, Semgrep (with our rule pack) for Java,
JavaScript, TypeScript and Go. `default_analyzers` builds them from the user's settings."""

from __future__ import annotations

from autopatch_tui.core.repair.analyzers.base import DEFAULT_TIMEOUT_SECONDS, Analyzer
from autopatch_tui.core.repair.analyzers.ruff import RuffAnalyzer
from autopatch_tui.core.repair.analyzers.semgrep import SemgrepAnalyzer

SUPPORTED = "Python (Ruff), Java, JavaScript, TypeScript and Go (Semgrep)"


def default_analyzers(settings: object | None = None) -> list[Analyzer]:
    """Ruff and Semgrep; `settings` (a `Settings`) may set `audit_ruff_select`, `audit_ruff_ignore`
    and `audit_timeout_seconds`."""
    timeout = getattr(settings, "audit_timeout_seconds", None) or DEFAULT_TIMEOUT_SECONDS
    return [RuffAnalyzer(select=getattr(settings, "audit_ruff_select", None),
                         ignore=getattr(settings, "audit_ruff_ignore", None), timeout=timeout),
            SemgrepAnalyzer(timeout=timeout)]
