"""Issue #24 item 4: a repository's analyzer configuration cannot point outside it, and every
analyzer process is bounded in memory as well as in time.

Ruff reads no configuration file itself: the closest configuration of each file and its `extend`
chain are read by us through the confinement check and given to Ruff as one private file
(`analyzers/ruff_config.py`). An `extend` outside the repository (`../outside/x.toml`, `~/x.toml`,
`/dev/zero`), a FIFO, invalid TOML or a loop is skipped and named in the audit summary; the audit
goes on. (Today Ruff reads the outside file on every run, allocates without bound on /dev/zero and
waits on a FIFO until the timeout.)"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

from autopatch_tui.core.confine import shown
from autopatch_tui.core.repair.analyzers.base import AnalyzerError, run_tool
from autopatch_tui.core.repair.analyzers.ruff import RUFF_MEMORY_LIMIT, RuffAnalyzer
from autopatch_tui.core.repair.analyzers.ruff_config import ConfigReader, merge
from autopatch_tui.core.repair.analyzers.semgrep import SEMGREP_MEMORY_LIMIT, SemgrepAnalyzer
from autopatch_tui.core.repair.scanner import Scanner
from autopatch_tui.core.repair.summary import audit_summary
from autopatch_tui.core.repair.workspace import AuditWorkspace
from tests.repair.conftest import EVAL, fake_tool, write

QUICK = 30.0  # seconds: a regression (Ruff reading /dev/zero or a FIFO) fails instead of stalling the suite
HIDE_EVAL = '[lint]\nper-file-ignores = {"*.py" = ["S307"]}\n'


def checked(repo: Path, files: list[str] | None = None) -> tuple[list[tuple[str, str]], list[str]]:
    analysis = RuffAnalyzer(timeout=QUICK, memory_limit=1 << 30).analyze(repo, files or ["a.py"])
    return [(f.path, f.rule_id) for f in analysis.findings], analysis.notes


def pyproject(repo: Path, extend: str, rest: str = "") -> None:
    write(repo, "pyproject.toml", f"[project]\nname = \"x\"\n\n[tool.ruff]\nextend = {json.dumps(extend)}\n{rest}")


def test_an_extend_outside_the_repository_is_not_read_and_is_named(repo: Path, tmp_path: Path) -> None:
    write(repo, "a.py", EVAL)
    outside = tmp_path / "outside"
    write(outside, "x.toml", HIDE_EVAL)  # were it read, it would hide the finding
    for target in ("../outside/x.toml", str(outside / "x.toml")):
        pyproject(repo, target)
        found, notes = checked(repo)
        assert found == [("a.py", "S307")]
        assert notes == [f"Ruff configuration: extend = {shown(target)} in 'pyproject.toml' points outside the "
                         "repository (or at a path it refuses); it was ignored"]


def test_an_extend_inside_the_repository_still_applies(repo: Path) -> None:
    write(repo, "a.py", EVAL)
    write(repo, "sub/b.py", EVAL)
    write(repo, "sub/c.py", EVAL)
    write(repo, "config/base.toml", '[lint]\nper-file-ignores = {"b.py" = ["S307"]}\n')
    write(repo, "sub/ruff.toml", 'extend = "../config/base.toml"\n[lint]\nextend-per-file-ignores = {"c.py" = ["S"]}\n')
    found, notes = checked(repo, ["a.py", "sub/b.py", "sub/c.py"])
    # sub/ruff.toml governs sub/ (relative patterns relative to it); a.py has no configuration
    assert (found, notes) == ([("a.py", "S307")], [])


@pytest.mark.parametrize("target", ["/dev/zero", "~/.ruff.toml", "$HOME/x.toml", "cfg/fifo.toml", "loop_a.toml"])
def test_hostile_extends_end_quickly_with_a_note_and_the_audit_goes_on(repo: Path, target: str) -> None:
    write(repo, "a.py", EVAL)
    if not hasattr(os, "mkfifo") and target.endswith("fifo.toml"):
        pytest.skip("needs named pipes")
    (repo / "cfg").mkdir()
    if target.endswith("fifo.toml"):
        os.mkfifo(repo / "cfg" / "fifo.toml")
    write(repo, "loop_a.toml", 'extend = "loop_b.toml"\n')
    write(repo, "loop_b.toml", 'extend = "loop_a.toml"\n' + HIDE_EVAL)
    pyproject(repo, target)
    started = time.monotonic()
    found, notes = checked(repo)
    assert time.monotonic() - started < QUICK
    assert len(notes) == 1 and repr(target) in notes[0], notes
    if target != "loop_a.toml":
        assert found == [("a.py", "S307")]


def test_a_fifo_or_invalid_configuration_file_is_skipped_and_named(repo: Path) -> None:
    write(repo, "a.py", EVAL)
    write(repo, "sub/b.py", EVAL)
    write(repo, "pyproject.toml", "[tool.ruff\nbroken")
    if hasattr(os, "mkfifo"):
        os.mkfifo(repo / "sub" / "ruff.toml")
    found, notes = checked(repo, ["a.py", "sub/b.py"])
    assert found == [("a.py", "S307"), ("sub/b.py", "S307")]
    assert "Ruff configuration: 'pyproject.toml' is not valid TOML; Ruff ran without it" in notes
    if hasattr(os, "mkfifo"):
        assert any(n.startswith("Ruff configuration: 'sub/ruff.toml' was not read (not a regular file") for n in notes)


def test_the_audit_summary_names_the_skipped_setting_with_control_characters_escaped(repo: Path) -> None:
    write(repo, "a.py", EVAL)
    pyproject(repo, "../x\x1b[31m.toml")
    report = Scanner(repo, [RuffAnalyzer(timeout=QUICK)]).scan()
    text = audit_summary(AuditWorkspace.from_report("scan-1", (), report), model=False)
    [line] = [ln for ln in text.splitlines() if ln.startswith("Ruff configuration")]
    assert line == ("Ruff configuration: extend = '../x\\x1b[31m.toml' in 'pyproject.toml' points outside the "
                    "repository (or at a path it refuses); it was ignored.")
    assert "\x1b" not in text


def test_paths_naming_the_file_system_are_dropped_from_the_configuration_ruff_gets(repo: Path) -> None:
    write(repo, "a.py", EVAL)
    write(repo, "ruff.toml", 'cache-dir = "/tmp/elsewhere"\nsrc = ["src", "/", "../up", "~/x", "ok/*"]\n'
                             '[analyze]\ndirection = "dependents"\n')
    write(repo, "pyproject.toml", '[project]\nrequires-python = ">=3.10"\n')
    reader = ConfigReader(repo)
    config = reader.for_file("a.py")
    assert config.settings == {"src": ["src", "ok/*"]} and config.requires_python == ">=3.10"
    assert "cache-dir" not in config.pyproject() and 'requires-python = ">=3.10"' in config.pyproject()
    assert reader.notes == ["src entries of 'ruff.toml' outside its folder were ignored"]


def test_merge_follows_ruffs_extend_rules() -> None:
    base = {"line-length": 80, "extend-exclude": ["a"], "lint": {"per-file-ignores": {"x": ["S"]}, "select": ["E"],
                                                                 "flake8-bandit": {"check-typed-exception": True}}}
    child = {"extend-exclude": ["b"], "lint": {"per-file-ignores": {"y": ["B"]}, "flake8-bandit": {"hardcoded-tmp"
                                                                                                    "-directory": []}}}
    assert merge(base, child) == {"line-length": 80, "extend-exclude": ["a", "b"], "lint": {
        "per-file-ignores": {"y": ["B"]}, "select": ["E"],
        "flake8-bandit": {"check-typed-exception": True, "hardcoded-tmp-directory": []}}}


# --- memory limits ------------------------------------------------------------------------------

def test_run_tool_caps_the_address_space_of_the_child(tmp_path: Path) -> None:
    probe = ("import resource, sys\nprint(resource.getrlimit(resource.RLIMIT_AS)[0])\n"
             "try:\n    bytearray(3 << 30)\nexcept MemoryError:\n    sys.exit(7)\n")
    out = run_tool("probe", [sys.executable, "-c", probe], cwd=tmp_path, timeout=QUICK, memory_limit=1 << 30)
    assert (int(out.stdout), out.returncode) == (1 << 30, 7)
    assert resource.getrlimit(resource.RLIMIT_AS)[0] != 1 << 30  # this process is untouched


@pytest.mark.parametrize("make", [lambda b: RuffAnalyzer(binary=b), lambda b: SemgrepAnalyzer(binary=b)],
                         ids=["ruff", "semgrep"])
def test_every_analyzer_runs_under_its_memory_limit(repo: Path, tmp_path: Path, make) -> None:
    write(repo, "a.py", EVAL)
    write(repo, "A.java", "class A {}\n")
    seen = tmp_path / "limit.txt"
    tool = fake_tool(tmp_path, "tool", f"ulimit -v > {seen}\necho '{{\"results\": []}}'")
    analyzer = make(tool)
    try:
        analyzer.analyze(repo, ["a.py" if isinstance(analyzer, RuffAnalyzer) else "A.java"])
    except AnalyzerError:
        pass  # the stand-in prints Semgrep's shape, which Ruff does not read: only the limit matters here
    expected = RUFF_MEMORY_LIMIT if isinstance(analyzer, RuffAnalyzer) else SEMGREP_MEMORY_LIMIT
    assert int(seen.read_text()) * 1024 == expected


# --- a configuration nested past the stack (review of r24, finding 1) -----------------------------

DEEP_CONFIGS = {
    "arrays-past-the-parser": "x = " + "[" * 100_000 + "]" * 100_000 + "\n",  # tomllib itself recurses
    "dotted-keys": ".".join(["x"] * 20_000) + " = 1\n",  # parses; merging or writing it recurses
    "arrays-under-the-parser": "x = " + "[" * 900 + "]" * 900 + "\n",  # parses; writing it recurses
    "tables-40-deep": ".".join(["x"] * 40) + " = 1\n",  # no recursion here, but no real configuration
}


@pytest.mark.parametrize("name", ["pyproject.toml", "ruff.toml"])
@pytest.mark.parametrize("body", list(DEEP_CONFIGS.values()), ids=list(DEEP_CONFIGS))
def test_a_configuration_nested_too_deep_is_skipped_and_named_in_the_scan_and_the_recheck(
        repo: Path, name: str, body: str) -> None:
    write(repo, "a.py", EVAL)
    write(repo, name, ("[tool.ruff]\n" if name == "pyproject.toml" else "") + body)
    scanner = Scanner(repo, [RuffAnalyzer(timeout=QUICK, memory_limit=1 << 30)])
    report = scanner.scan()  # was: RecursionError ("unexpected error" in the app)
    assert [(f.path, f.check_id) for f in report.findings] == [("a.py", "S307")] and report.errors == []
    [note] = report.notes
    assert note.startswith(f"Ruff configuration: {shown(name)} ") and note.endswith("; Ruff ran without it"), note
    # /patch apply's verification reads the same configuration
    assert [t.rule_id for t in scanner.recheck("a.py", "ruff")] == ["S307"]


def test_a_configuration_at_a_real_depth_still_applies(repo: Path) -> None:
    write(repo, "a.py", EVAL)
    write(repo, "pyproject.toml", '[tool.ruff.lint.per-file-ignores]\n"a.py" = ["S307"]\n'
                                  '[tool.ruff.lint.flake8-bandit]\nhardcoded-tmp-directory = ["/x"]\n')
    assert checked(repo) == ([], [])


@pytest.mark.parametrize("line", ['.'.join(["x"] * 20_000) + " = 1", "[" + ".".join(['"a.b"'] * 40) + "]",
                                  "y = { " + " . ".join(["k"] * 40) + " = 1 }"], ids=["key", "header", "inline"])
def test_a_dotted_key_nested_too_deep_is_never_parsed(repo: Path, monkeypatch: pytest.MonkeyPatch, line: str) -> None:
    """tomllib parses a long dotted key in quadratic time (20,000 parts: seconds; a 1 MB file: most
    of an hour of the app's CPU): such a file is refused before it reaches the parser."""
    import tomllib

    from autopatch_tui.core.repair.analyzers import ruff_config

    write(repo, "ruff.toml", f"line-length = 100\n{line}\n")
    parsed: list[str] = []
    real = tomllib.loads
    monkeypatch.setattr(ruff_config.tomllib, "loads", lambda text: parsed.append(text) or real(text))
    reader = ConfigReader(repo)
    assert reader.for_file("a.py").source is None
    assert parsed == [] and reader.notes == [
        "'ruff.toml' nests tables or arrays more than 32 levels deep; Ruff ran without it"]
    write(repo, "ruff.toml", "line-length = 100\n" + ".".join(["x"] * 31) + " = 1\n")  # deep, but within the bound
    assert "line-length" in ConfigReader(repo).for_file("a.py").settings and len(parsed) == 1
