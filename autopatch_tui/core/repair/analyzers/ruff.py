"""Ruff for Python: `ruff check --output-format json` on the scope's Python files.

The rule selection is ours (`DEFAULT_SELECT` minus `DEFAULT_IGNORE`, or the user's
`audit_ruff_select` / `audit_ruff_ignore` in config.toml); everything else comes from the
repository's own Ruff configuration — read by us, not by Ruff (`ruff_config`: the closest
pyproject.toml / ruff.toml / .ruff.toml of each file, its `extend` chain only inside the
repository), written to a private temporary pyproject.toml and given to Ruff with `--config`, from
the configuration's folder: per-file ignores, excludes (`--force-exclude` applies them to the files
we name), target version. What was skipped (an `extend` outside the repository, a FIFO, invalid
TOML) is a note of the audit summary. `# noqa` comments are honoured. Ruff never writes its cache
into the repository (`--no-cache`) and never fixes anything. A file Ruff cannot parse or read (`invalid-syntax`,
E902) is reported as unparsed, not as a finding.

Ruff can crash on a hostile file (a stack overflow on a deeply nested expression aborts the whole
process). A crashed run is split in halves and re-run, so the file that crashes it ends up as
unparsed and the others are still analyzed; a tool that crashes on everything is reported as
failed (`MAX_CRASH_RUNS` bounds the search)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from autopatch_tui.core.repair.analyzers.base import (
    DEFAULT_TIMEOUT_SECONDS,
    ERROR,
    WARNING,
    Analysis,
    AnalyzerError,
    ToolFinding,
    failed,
    file_args,
    positive,
    relative,
    run_tool,
)
from autopatch_tui.core.repair.analyzers.ruff_config import ConfigReader, RuffConfig
from autopatch_tui.core.repair.languages import PYTHON

NAME = "ruff"
# security (flake8-bandit), bug-prone patterns (flake8-bugbear), blind except, Pyflakes
DEFAULT_SELECT = ("S", "B", "BLE", "F")
# style rather than defects: assert in tests, unused imports and variables, star imports
DEFAULT_IGNORE = ("S101", "F401", "F403", "F405", "F841")
_SYNTAX = ("invalid-syntax", "E999", "E902", "", None)
_ALWAYS = ("E902",)  # an unreadable file is reported in the JSON (as unparsed), not only on stderr
MAX_CRASH_RUNS = 64
RUFF_MEMORY_LIMIT = 4 << 30  # address space (RLIMIT_AS): click needs ~130 MiB; threads grow with cores (docs/repair.md)


def crashed(returncode: int) -> bool:
    """A signal (abort on stack overflow), a Rust panic (101) or a shell-reported signal (≥128);
    exit 2 is Ruff's own clean failure (bad configuration, bad arguments)."""
    return returncode < 0 or returncode == 101 or returncode >= 128


def find_ruff() -> str | None:
    try:
        from ruff import find_ruff_bin
    except ImportError:
        return None
    try:
        return find_ruff_bin()
    except FileNotFoundError:
        return None


def severity(code: str) -> str:
    """Ruff gives every diagnostic the same severity; Pyflakes codes are errors, the rest warnings."""
    return ERROR if code.startswith("F") else WARNING


class RuffAnalyzer:
    name = NAME
    languages = frozenset({PYTHON})

    def __init__(self, *, select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
                 binary: str | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS,
                 memory_limit: int | None = RUFF_MEMORY_LIMIT) -> None:
        self.select = tuple(select) if select else DEFAULT_SELECT
        self.ignore = tuple(DEFAULT_IGNORE if ignore is None else ignore)
        self.binary = binary
        self.timeout = timeout
        self.memory_limit = memory_limit

    def argv(self, binary: str, files: list[str], config: str | None = None) -> list[str]:
        argv = [binary, "check", "--output-format", "json", "--no-cache", "--no-fix", "--exit-zero",
                "--force-exclude", "--select", ",".join(dict.fromkeys(self.select + _ALWAYS))]
        if self.ignore:
            argv += ["--ignore", ",".join(self.ignore)]
        argv += ["--config", config] if config is not None else ["--isolated"]
        return argv + ["--", *files]

    def analyze(self, repo: Path, files: Sequence[str]) -> Analysis:
        binary = self.binary or find_ruff()
        if binary is None:
            raise AnalyzerError("ruff is not installed (pip install ruff)")
        result = Analysis()
        self._runs = 0
        reader = ConfigReader(repo)
        groups: dict[tuple[str, str | None], tuple[RuffConfig, list[str]]] = {}
        for f in files:  # each file under its closest configuration, as Ruff groups them
            config = reader.for_file(f)
            groups.setdefault((config.folder, config.source), (config, []))[1].append(f)
        with tempfile.TemporaryDirectory(prefix="autopatch-ruff-") as private:
            for n, (config, members) in enumerate(groups.values()):
                config_file = Path(private) / str(n) / "pyproject.toml"
                config_file.parent.mkdir(mode=0o700)
                config_file.write_text(config.pyproject(), encoding="utf-8")
                cwd = repo if config.folder == "." else repo / config.folder
                names = [os.path.relpath(f, config.folder) for f in members]
                for chunk in file_args(names):
                    if not self._run(repo, cwd, binary, chunk, result, str(config_file)):
                        raise self._crash
        result.unparsed = sorted(set(result.unparsed))
        result.notes = [f"Ruff configuration: {note}" for note in reader.notes]
        return result

    def _run(self, repo: Path, cwd: Path, binary: str, chunk: list[str], result: Analysis, config: str) -> bool:
        """Analyze `chunk` (paths relative to `cwd`); on a crash, its halves. False when no file of
        it could be analyzed."""
        self._runs += 1
        output = run_tool(NAME, self.argv(binary, chunk, config), cwd=cwd, timeout=self.timeout,
                          memory_limit=self.memory_limit)
        if output.returncode == 0:
            self._parse(repo, output.stdout, result)
            return True
        if not crashed(output.returncode):
            raise failed(NAME, output, self.memory_limit)
        self._crash = failed(NAME, output, self.memory_limit)
        if len(chunk) == 1:
            path = relative(repo, os.path.join(cwd, chunk[0]))
            if path is not None:
                result.unparsed.append(path)
            return False
        if self._runs + 2 > MAX_CRASH_RUNS:
            raise self._crash
        mid = len(chunk) // 2
        first = self._run(repo, cwd, binary, chunk[:mid], result, config)
        second = self._run(repo, cwd, binary, chunk[mid:], result, config)
        return first or second

    def _parse(self, repo: Path, stdout: bytes, result: Analysis) -> None:
        try:
            items = json.loads(stdout or b"[]")
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise AnalyzerError("ruff printed output that is not JSON") from None
        if not isinstance(items, list):
            raise AnalyzerError("ruff printed JSON of an unexpected shape")
        for item in items:
            if not isinstance(item, dict):
                raise AnalyzerError("ruff printed JSON of an unexpected shape")
            path = relative(repo, str(item.get("filename") or ""))
            if path is None:
                continue
            code = item.get("code")
            if code in _SYNTAX or not isinstance(code, str):
                result.unparsed.append(path)
                continue
            start = item.get("location") or {}
            end = item.get("end_location") or {}
            line = positive(start.get("row"))
            result.findings.append(ToolFinding(
                NAME, code, severity(code), " ".join(str(item.get("message") or code).split()), path, line,
                positive(start.get("column")), positive(end.get("row"), line), positive(end.get("column")),
                str(item.get("url") or "")))
