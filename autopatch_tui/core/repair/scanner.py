"""The static scan behind `code_audit`: the scope's source files, checked by real analyzers —
Ruff for Python, Semgrep with our rule pack for Java, JavaScript, TypeScript and Go
(`core/repair/analyzers/`).

The scope is checked before anything is read: every path must exist inside the repository (no
absolute paths, no `..` or symlink escapes, nothing under `.autopatch-j/` or `.git/`). A bad scope,
a scope without a file any analyzer covers, or a scan in which no analyzer could run raises
`ScanError` before an audit workspace exists. An analyzer that is missing or fails is named in the
report, and the audit goes on with the others. Files that do not parse (or are too large to read)
are counted and skipped, never guessed at. Results are sorted (path, line, column, rule ID),
numbered F1, F2, … and bounded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autopatch_tui.core.agent.source_tools import (
    MAX_FILE_BYTES,
    SKIPPED_DIRS,
    SourceToolError,
    SourceTools,
)
from autopatch_tui.core.confine import ConfinementError, is_regular, kind_of, read_regular, refused_name, shown
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.repair.analyzers import SUPPORTED, default_analyzers
from autopatch_tui.core.repair.analyzers.base import Analyzer, AnalyzerError, ToolFinding
from autopatch_tui.core.repair.scan_progress import ScanStep
from autopatch_tui.core.repair.findings import SCANNER, Finding, bounded
from autopatch_tui.core.repair.languages import PYTHON, language_of
from autopatch_tui.core.repair.syntax import NoParserError, syntax_error
from autopatch_tui.core.tree_walk import TreeWalk

MAX_SCAN_FILES = 5_000
MAX_FINDINGS = 200
MAX_NOTES = 20  # notes of the analyzers (skipped configuration); the rest are counted in one more line


class ScanError(AutopatchError):
    """The scan could not start or read its scope; the message names the cause (safe to show)."""


@dataclass
class ScanReport:
    files: int = 0
    unparsed: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    truncated: bool = False
    languages: dict[str, int] = field(default_factory=dict)  # files per language
    analyzers: list[str] = field(default_factory=list)  # the analyzers that ran
    errors: list[str] = field(default_factory=list)  # one line per analyzer that could not run
    too_large: list[str] = field(default_factory=list)  # files over MAX_FILE_BYTES: never given to an analyzer
    notes: list[str] = field(default_factory=list)  # what an analyzer skipped (e.g. Ruff settings outside)


def too_large_text(files: Sequence[str]) -> str:
    shown_files = ", ".join(files[:5]) + (" …" if len(files) > 5 else "")
    return (f"{len(files)} file(s) over the analyzers' size limit of {MAX_FILE_BYTES // 1_000_000} MB were not "
            f"analyzed: {shown_files}")


def to_finding(fid: str, t: ToolFinding) -> Finding:
    return Finding(fid, t.path, t.line, t.rule_id, bounded(t.message), SCANNER, tool=t.tool, severity=t.severity,
                   url=t.url, column=t.column, end_line=t.end_line, end_column=t.end_column)


class Scanner:
    def __init__(self, repo: Path, analyzers: Sequence[Analyzer] | None = None) -> None:
        self.tools = SourceTools(repo)
        self.repo = self.tools.repo
        self.analyzers = list(default_analyzers() if analyzers is None else analyzers)

    def _targets(self, scope: Sequence[str]) -> list[Path]:
        roots: list[Path] = []
        for rel in scope or ["."]:
            try:
                target = self.tools.resolve(rel)
            except SourceToolError as exc:
                raise ScanError(f"cannot scan {shown(rel)}: {exc}") from None
            if kind_of(target) is None:
                raise ScanError(f"cannot scan {shown(rel)}: no such file or folder in the repository")
            roots.append(target)
        return roots

    def _files(self, roots: list[Path]) -> list[Path]:
        seen: dict[Path, None] = {}
        for root in roots:
            if kind_of(root) != "dir":
                if language_of(root.name) and is_regular(root):
                    seen[root] = None
                continue
            for dirpath, dirnames, filenames in TreeWalk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not refused_name(d))
                for name in sorted(filenames):
                    f = Path(dirpath) / name
                    if language_of(name) and not f.is_symlink() and is_regular(f):  # no FIFO: it blocks
                        seen[f] = None
                    if len(seen) > MAX_SCAN_FILES:
                        raise ScanError(f"the scope holds more than {MAX_SCAN_FILES} source files; narrow it with "
                                        "@path")
        return sorted(seen, key=lambda p: p.relative_to(self.repo).as_posix())

    def files(self, scope: Sequence[str] = ()) -> list[str]:
        """The source files the scope covers (every language of `languages.SUFFIXES`),
        repository-relative, sorted."""
        return [f.relative_to(self.repo).as_posix() for f in self._files(self._targets(scope))]

    def scan(self, scope: Sequence[str] = (), *, step: ScanStep | None = None) -> ScanReport:
        """`step(done, total, analyzer)`: files analyzed so far of those the analyzers cover, before
        and after each analyzer's run (`scan_progress.ScanTicker` turns it into the progress line)."""
        files = self._files(self._targets(scope))
        if not files:
            where = ", ".join(scope) if scope else "the repository"
            raise ScanError(f"no source files to scan in {where}; the audit covers {SUPPORTED}")
        report = ScanReport(files=len(files))
        readable: list[str] = []
        for f in files:
            rel = f.relative_to(self.repo).as_posix()
            lang = language_of(rel)
            assert lang is not None
            report.languages[lang] = report.languages.get(lang, 0) + 1
            try:
                too_big = f.stat().st_size > MAX_FILE_BYTES
            except OSError:
                report.unparsed.append(rel)
                continue
            (report.too_large if too_big else readable).append(rel)
        if not readable and report.too_large:
            raise ScanError(f"{too_large_text(report.too_large)}; nothing else was left to analyze")
        hits: dict[tuple[str, int, int, str], ToolFinding] = {}
        covered = {lang for a in self.analyzers for lang in a.languages}
        uncovered = sorted({rel for rel in readable if language_of(rel) not in covered})
        if uncovered:
            report.errors.append(f"no analyzer is configured for {len(uncovered)} file(s) such as {uncovered[0]}; "
                                 "they were not analyzed")
        runs = [(a, [rel for rel in readable if language_of(rel) in a.languages]) for a in self.analyzers]
        runs = [(a, mine) for a, mine in runs if mine]
        total, done = sum(len(mine) for _, mine in runs), 0
        for analyzer, mine in runs:
            if step is not None:
                step(done, total, analyzer.name)
            try:
                analysis = analyzer.analyze(self.repo, mine)
            except AnalyzerError as exc:
                report.errors.append(f"{exc}; {len(mine)} file(s) were not analyzed")
                done += len(mine)
                continue
            done += len(mine)
            if step is not None:
                step(done, total, "")
            report.analyzers.append(analyzer.name)
            report.notes.extend(n for n in analysis.notes if n not in report.notes)
            unparsed = set(analysis.unparsed)
            if PYTHON not in analyzer.languages:  # Ruff reports syntax errors itself; the others may not
                unparsed |= self._unparseable(mine)
            report.unparsed.extend(sorted(unparsed))
            for t in analysis.findings:
                if t.path not in unparsed:
                    hits.setdefault((t.path, t.line, t.column, t.rule_id), t)
        if not report.analyzers:
            raise ScanError("no analyzer could run: " + "; ".join(report.errors) if report.errors else
                            f"no analyzer covers these files; the audit covers {SUPPORTED}")
        report.unparsed = sorted(set(report.unparsed))
        if len(report.notes) > MAX_NOTES:
            report.notes[MAX_NOTES:] = [f"…and {len(report.notes) - MAX_NOTES} more notes like these"]
        ordered = [hits[k] for k in sorted(hits)]
        report.truncated = len(ordered) > MAX_FINDINGS
        report.findings = [to_finding(f"F{n}", t) for n, t in enumerate(ordered[:MAX_FINDINGS], 1)]
        return report

    def _unparseable(self, files: list[str]) -> set[str]:
        bad = set()
        for rel in files:
            try:
                text = read_regular(self.repo / rel).decode("utf-8")
                if syntax_error(rel, text) is not None:
                    bad.add(rel)
            except (OSError, UnicodeDecodeError, NoParserError, ConfinementError):
                bad.add(rel)
        return bad

    def recheck(self, path: str, tool: str) -> list[ToolFinding]:
        """Run analyzer `tool` again on one file (after a patch was applied); raises
        `AnalyzerError` when it cannot, `ScanError` for a path outside the scan's rules."""
        target = self._targets([path])[0]
        rel = target.relative_to(self.repo).as_posix()
        analyzer = next((a for a in self.analyzers if a.name == tool and language_of(rel) in a.languages), None)
        if analyzer is None:
            raise AnalyzerError(f"no analyzer {tool or 'at all'} checks {rel}")
        analysis = analyzer.analyze(self.repo, [rel])
        if rel in analysis.unparsed:
            raise AnalyzerError(f"{tool} could not parse {rel}")
        return [t for t in analysis.findings if t.path == rel]
