"""Semgrep for Java, JavaScript, TypeScript and Go: `semgrep scan --json` with only the rule pack
this package ships (`autopatch_tui/core/repair/rules/*.yml`).

Offline and private: `--metrics=off`, `--disable-version-check`, local rule files only (no
registry, no login), and the environment carries no app or provider settings. Semgrep writes its
settings and log under `$HOME/.semgrep/` and runs `git ls-remote --get-url` in its working folder
on every scan (and `git remote get-url origin` in its own package folder), so each run gets a
private temporary folder as `HOME` (its settings, log and cache go there and are removed after the
run) and a `GIT_DIR` there that does not exist: nothing is written to the user's home and no git
command reaches any repository. Its working folder is the repository itself (resolved), with the
files named by absolute path: Semgrep takes a named file under its working folder as it is, but
for a file outside it starts one `semgrep-core` process per file to find the file's project, which
made a private working folder 2.5x the CPU of a bare run (jsoup, 197 files; docs/repair.md).
Semgrep writes nothing there, and the repository's `.semgrepignore`, `.semgrepconfig` and git
configuration are never read for named files with git disabled. The run is bounded in time and in memory (`RLIMIT_AS`). `nosemgrep`
comments are honoured (Semgrep's default). Rule IDs are kept as written in the rule files
(`--no-rewrite-rule-ids`): `java.weak-md5`, never a path-derived prefix. A target Semgrep reports
as unparseable (or too slow to analyze) is listed as unparsed, not as a finding."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from autopatch_tui.core.agent.source_tools import MAX_FILE_BYTES
from autopatch_tui.core.repair.analyzers.base import (
    DEFAULT_TIMEOUT_SECONDS,
    ERROR,
    INFO,
    WARNING,
    Analysis,
    AnalyzerError,
    ToolFinding,
    failed,
    file_args,
    positive,
    reason,
    relative,
    run_tool,
    tool_env,
)
from autopatch_tui.core.repair.languages import GO, JAVA, JAVASCRIPT, TSX, TYPESCRIPT, language_of
from autopatch_tui.core.tool_path import which

NAME = "semgrep"
RULES_DIR = Path(__file__).resolve().parent.parent / "rules"
RULE_FILES = {JAVA: "java.yml", JAVASCRIPT: "javascript.yml", TYPESCRIPT: "javascript.yml",
              TSX: "javascript.yml", GO: "go.yml"}
PER_FILE_RULE_SECONDS = 5  # semgrep's own per-rule, per-file bound
SEMGREP_MEMORY_LIMIT = 16 << 30  # address space (RLIMIT_AS): jsoup needs ~4.4 GiB (docs/repair.md)
INSTALL_HINT = "semgrep is not installed; add it with: pip install 'autopatch-tui[semgrep]'"
_SEVERITY = {"ERROR": ERROR, "WARNING": WARNING, "INFO": INFO}
_ID_LINE = re.compile(r"^\s*-\s+id:\s*([A-Za-z0-9_.-]+)\s*$", re.MULTILINE)


@cache
def rule_ids(rules_dir: Path = RULES_DIR) -> frozenset[str]:
    """Every rule ID of the rule pack."""
    return frozenset(m for f in sorted(rules_dir.glob("*.yml")) for m in _ID_LINE.findall(f.read_text("utf-8")))


def find_semgrep() -> str | None:
    """The `semgrep` installed beside this interpreter (the package's own dependency), else PATH."""
    beside = Path(sys.executable).parent / "semgrep"
    if beside.is_file():
        return str(beside)
    return which("semgrep")  # absolute PATH entries only: the working folder is the repository


def private_env(folder: Path) -> dict[str, str]:
    """The environment of one Semgrep run, its state all inside the private `folder`: its home,
    configuration, cache, settings file and log; metrics and version checks off. Every git command
    Semgrep runs fails at once, wherever it runs: `GIT_DIR` names a folder that does not exist in the
    private folder, so git looks for no repository — not in the working folder (the repository:
    `git ls-remote`), nor in Semgrep's own package folder (`git remote get-url origin`, `git
    describe`), which is inside the user's checkout when Semgrep is installed in a project .venv."""
    env = tool_env({
        "HOME": str(folder), "XDG_CONFIG_HOME": str(folder / "config"), "XDG_CACHE_HOME": str(folder / "cache"),
        "SEMGREP_SETTINGS_FILE": str(folder / "settings.yml"), "SEMGREP_LOG_FILE": str(folder / "semgrep.log"),
        "SEMGREP_SEND_METRICS": "off", "SEMGREP_ENABLE_VERSION_CHECK": "0",
        "GIT_DIR": str(folder / "no-git"), "GIT_CEILING_DIRECTORIES": str(folder), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
    })
    # Semgrep's CLI is Python run in the repository: no user path entry (an empty or `.` entry in
    # PYTHONPATH is the working folder) may import the repository's modules
    env.update({"PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"})
    for key in ("GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "SEMGREP_APP_TOKEN", "SEMGREP_REPO_URL",
                "PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE"):
        env.pop(key, None)
    return env


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class SemgrepAnalyzer:
    name = NAME
    languages = frozenset(RULE_FILES)

    def __init__(self, *, binary: str | None = None, rules_dir: Path = RULES_DIR,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS, memory_limit: int | None = SEMGREP_MEMORY_LIMIT) -> None:
        self.binary = binary
        self.rules_dir = rules_dir
        self.timeout = timeout
        self.memory_limit = memory_limit

    def configs(self, files: Sequence[str]) -> list[Path]:
        names = dict.fromkeys(RULE_FILES[lang] for f in files if (lang := language_of(f)) in RULE_FILES)
        return [self.rules_dir / n for n in sorted(names)]

    def argv(self, binary: str, configs: list[Path], files: list[str]) -> list[str]:
        argv = [binary, "scan", "--json", "--metrics=off", "--disable-version-check", "--oss-only",
                "--no-rewrite-rule-ids", "--quiet", "--timeout", str(PER_FILE_RULE_SECONDS),
                "--max-target-bytes", str(MAX_FILE_BYTES)]
        for config in configs:
            argv += ["--config", str(config)]
        return argv + files

    def analyze(self, repo: Path, files: Sequence[str]) -> Analysis:
        configs = self.configs(files)
        result = Analysis()
        if not configs:
            return result
        binary = self.binary or find_semgrep()
        if binary is None:
            raise AnalyzerError(INSTALL_HINT)
        base = repo.resolve()  # the working folder: named files under it skip Semgrep's per-file project search
        with tempfile.TemporaryDirectory(prefix="autopatch-semgrep-") as private:
            env = private_env(Path(private))
            for chunk in file_args(files, base=base):
                output = run_tool(NAME, self.argv(binary, configs, chunk), cwd=base, timeout=self.timeout, env=env,
                                  memory_limit=self.memory_limit)
                try:
                    data = json.loads(output.stdout)
                except (UnicodeDecodeError, json.JSONDecodeError):
                    raise (failed(NAME, output, self.memory_limit) if output.returncode else
                           AnalyzerError("semgrep printed output that is not JSON")) from None
                if not isinstance(data, dict) or not isinstance(data.get("results"), list):
                    raise failed(NAME, output, self.memory_limit) if output.returncode else AnalyzerError(
                        "semgrep printed JSON of an unexpected shape")
                self._parse(base, data, result)
        result.unparsed = sorted(set(result.unparsed))
        return result

    def _rule_id(self, check_id: str) -> str:
        ids = rule_ids(self.rules_dir)
        if check_id in ids:
            return check_id
        return next((i for i in ids if check_id.endswith("." + i)), check_id)

    def _parse(self, repo: Path, data: dict, result: Analysis) -> None:
        for err in data.get("errors") or []:
            if not isinstance(err, dict) or err.get("level") != "error":
                continue  # a warning (e.g. partial parsing): the file was still analyzed
            raw = _text(err.get("path"))
            path = relative(repo, raw) if raw else None
            if path is not None:
                result.unparsed.append(path)
            elif not raw:
                raise AnalyzerError("semgrep failed: " + (reason(_text(err.get("message"))) or "unknown error"))
        for item in data["results"]:
            if not isinstance(item, dict):
                raise AnalyzerError("semgrep printed JSON of an unexpected shape")
            path = relative(repo, _text(item.get("path")))
            if path is None:
                continue
            extra = item.get("extra") if isinstance(item.get("extra"), dict) else {}
            meta = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else {}
            refs = meta.get("references")
            url = _text(refs[0]) if isinstance(refs, list) and refs else _text(refs)
            start = item.get("start") if isinstance(item.get("start"), dict) else {}
            end = item.get("end") if isinstance(item.get("end"), dict) else {}
            line = positive(start.get("line"))
            rule = self._rule_id(_text(item.get("check_id")) or "semgrep")
            result.findings.append(ToolFinding(
                NAME, rule, _SEVERITY.get(_text(extra.get("severity")).upper(), WARNING),
                " ".join((_text(extra.get("message")) or rule).split()), path, line,
                positive(start.get("col")), positive(end.get("line"), line), positive(end.get("col")), url))
