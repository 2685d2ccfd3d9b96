"""The deterministic static scanner behind `code_audit`: a few AST rules for Python sources.

The scope is checked before anything is read: every path must exist inside the repository (no
absolute paths, no `..` or symlink escapes, nothing under `.autopatch-j/` or `.git/`). A bad scope
raises `ScanError` before an audit workspace exists. Files that do not parse are counted and
skipped, never guessed at. Results are sorted (path, line, check ID) and bounded."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autopatch_tui.core.agent.source_tools import (
    MAX_FILE_BYTES,
    SKIPPED_DIRS,
    SourceToolError,
    SourceTools,
)
from autopatch_tui.core.confine import refused_name
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.repair.findings import SCANNER, Finding

MAX_SCAN_FILES = 5_000
MAX_FINDINGS = 200

RULES: dict[str, str] = {
    "APJ-PY001": "an exception handler swallows every error silently (`except: pass`)",
    "APJ-PY002": "`eval`/`exec` runs dynamic code",
    "APJ-PY003": "a mutable default argument is shared between calls",
    "APJ-PY004": "a subprocess runs through the shell (`shell=True`)",
}


class ScanError(AutopatchError):
    """The scan could not start or read its scope; the message names the cause (safe to show)."""


@dataclass
class ScanReport:
    files: int = 0
    unparsed: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    truncated: bool = False


def _broad(handler: ast.ExceptHandler) -> bool:
    t = handler.type
    if t is None:
        return True
    return isinstance(t, ast.Name) and t.id in ("Exception", "BaseException")


def _silent(body: list[ast.stmt]) -> bool:
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                           and s.value.value is Ellipsis) for s in body)


def _rule_hits(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and _broad(node) and _silent(node.body):
            yield node.lineno, "APJ-PY001"
        elif isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id in ("eval", "exec"):
                yield node.lineno, "APJ-PY002"
            if any(k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value is True
                   for k in node.keywords):
                yield node.lineno, "APJ-PY004"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            defaults = list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]
            for d in defaults:
                if isinstance(d, (ast.List, ast.Dict, ast.Set)):
                    yield d.lineno, "APJ-PY003"


class Scanner:
    def __init__(self, repo: Path) -> None:
        self.tools = SourceTools(repo)
        self.repo = self.tools.repo

    def _targets(self, scope: Sequence[str]) -> list[Path]:
        roots: list[Path] = []
        for rel in scope or ["."]:
            try:
                target = self.tools.resolve(rel)
            except SourceToolError as exc:
                raise ScanError(f"cannot scan {rel!r}: {exc}") from None
            if not target.exists():
                raise ScanError(f"cannot scan {rel!r}: no such file or folder in the repository")
            roots.append(target)
        return roots

    def _files(self, roots: list[Path]) -> list[Path]:
        seen: dict[Path, None] = {}
        for root in roots:
            if root.is_file():
                if root.suffix == ".py":
                    seen[root] = None
                continue
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not refused_name(d))
                for name in sorted(filenames):
                    f = Path(dirpath) / name
                    if name.endswith(".py") and not f.is_symlink():
                        seen[f] = None
                    if len(seen) > MAX_SCAN_FILES:
                        raise ScanError(f"the scope holds more than {MAX_SCAN_FILES} Python files; narrow it with "
                                        "@path")
        return sorted(seen, key=lambda p: p.relative_to(self.repo).as_posix())

    def files(self, scope: Sequence[str] = ()) -> list[str]:
        """The Python files the scope covers, repository-relative, sorted."""
        return [f.relative_to(self.repo).as_posix() for f in self._files(self._targets(scope))]

    def scan(self, scope: Sequence[str] = ()) -> ScanReport:
        files = self._files(self._targets(scope))
        if not files:
            where = ", ".join(scope) if scope else "the repository"
            raise ScanError(f"no Python files to scan in {where} (the scanner checks *.py files)")
        report = ScanReport(files=len(files))
        hits: list[tuple[str, int, str]] = []
        for f in files:
            rel = f.relative_to(self.repo).as_posix()
            try:
                if f.stat().st_size > MAX_FILE_BYTES:
                    report.unparsed.append(rel)
                    continue
                tree = ast.parse(f.read_bytes(), filename=rel)
            except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
                # RecursionError / MemoryError: CPython's parser gives up on deeply nested code
                # (e.g. a long generated `1 + 1 + …` chain); such a file is unparsed, not a crash
                report.unparsed.append(rel)
                continue
            hits.extend((rel, line, check) for line, check in set(_rule_hits(tree)))
        hits.sort()
        report.truncated = len(hits) > MAX_FINDINGS
        report.findings = [Finding(f"F{n}", path, line, check, RULES[check], SCANNER)
                           for n, (path, line, check) in enumerate(hits[:MAX_FINDINGS], 1)]
        return report
