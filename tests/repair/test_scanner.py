"""The scan behind `code_audit`: which files a scope holds (every language the analyzers cover),
every reason a scope is refused, the order and bounds of the findings, files that cannot be
parsed, and what happens when an analyzer is missing, crashes, hangs or prints garbage — the
audit goes on with the others, and fails only when none could run. Python findings come from the
real Ruff; the non-Python analyzer here is an in-process stand-in (Semgrep itself runs in
test_semgrep.py), so these tests stay fast."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from autopatch_tui.core.repair import scanner as scanner_module
from autopatch_tui.core.repair.analyzers import SUPPORTED
from autopatch_tui.core.repair.analyzers.base import Analysis, AnalyzerError, ToolFinding
from autopatch_tui.core.repair.analyzers.ruff import RuffAnalyzer
from autopatch_tui.core.repair.analyzers.semgrep import SemgrepAnalyzer
from autopatch_tui.core.repair.findings import SCANNER
from autopatch_tui.core.repair.languages import GO, JAVA, JAVASCRIPT, TSX, TYPESCRIPT
from autopatch_tui.core.repair.scanner import ScanError, Scanner
from tests.repair.conftest import CLEAN, EVAL, MESSAGES, MUTABLE, SWALLOW, fake_tool, write

JAVA_OK = "class A {\n    int f() { return 1; }\n}\n"
JAVA_BROKEN = "class B {\n    int f() { return ; ; }\n    void g( {\n}\n"


class Recorder:
    """A stand-in for Semgrep: reports one finding per file at line 1 and records what it got."""

    name = "fake"
    languages = frozenset({JAVA, JAVASCRIPT, TYPESCRIPT, TSX, GO})

    def __init__(self, error: str = "") -> None:
        self.error = error
        self.calls: list[list[str]] = []

    def analyze(self, repo: Path, files: Sequence[str]) -> Analysis:
        self.calls.append(list(files))
        if self.error:
            raise AnalyzerError(self.error)
        return Analysis([ToolFinding("fake", "fake.rule", "info", "m", f, 1) for f in reversed(files)])


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def ruff_scan(repo: Path, scope: Sequence[str] = ()) -> scanner_module.ScanReport:
    return Scanner(repo, [RuffAnalyzer()]).scan(scope)


# --- findings ----------------------------------------------------------------------------------

def test_a_ruff_finding_carries_tool_rule_severity_message_docs_and_span(repo: Path) -> None:
    write(repo, "pkg/loader.py", SWALLOW)
    report = ruff_scan(repo, ["pkg"])
    assert (report.files, report.unparsed, report.truncated, report.errors) == (1, [], False, [])
    assert report.analyzers == ["ruff"] and report.languages == {"python": 1}
    (f,) = report.findings
    assert (f.id, f.path, f.line, f.check_id, f.message, f.origin, f.tool, f.severity) == (
        "F1", "pkg/loader.py", 4, "S110", MESSAGES["S110"], SCANNER, "ruff", "warning")
    assert (f.column, f.end_line, f.end_column) == (5, 5, 13)  # `except:` … `pass`, both lines
    assert f.url == "https://docs.astral.sh/ruff/rules/try-except-pass"
    assert f.location == "pkg/loader.py:4"


def test_findings_are_sorted_by_path_line_column_rule_and_numbered_in_that_order(repo: Path) -> None:
    write(repo, "b.py", EVAL + MUTABLE)
    write(repo, "a/z.py", "exec('1')\n")
    write(repo, "a.py", "import subprocess\n\nsubprocess.run(eval('1'), shell=True)\n" + SWALLOW)
    write(repo, "c.py", "y = eval(eval('2'))\n")  # two calls on one line: two columns, two findings
    report = ruff_scan(repo)
    got = [(f.id, f.path, f.line, f.column, f.check_id) for f in report.findings]
    assert got == [
        ("F1", "a.py", 3, 1, "S602"), ("F2", "a.py", 3, 16, "S307"), ("F3", "a.py", 7, 5, "S110"),
        ("F4", "a/z.py", 1, 1, "S102"),
        ("F5", "b.py", 1, 5, "S307"), ("F6", "b.py", 2, 22, "B006"),
        ("F7", "c.py", 1, 5, "S307"), ("F8", "c.py", 1, 10, "S307"),
    ]
    assert report.files == 4
    # the same tree scanned again gives the same result (deterministic)
    assert [(f.id, f.path, f.line, f.column, f.check_id) for f in ruff_scan(repo).findings] == got
    assert Scanner(repo).files() == ["a.py", "a/z.py", "b.py", "c.py"]


def test_findings_are_bounded_and_the_report_says_so(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner_module, "MAX_FINDINGS", 7)
    write(repo, "gen.py", "".join(f"v{i} = eval('{i}')\n" for i in range(1, 10)))
    report = ruff_scan(repo)
    assert report.truncated and len(report.findings) == 7
    assert (report.findings[-1].id, report.findings[-1].line) == ("F7", 7)  # the first ones by line are kept
    write(repo, "gen.py", "".join(f"v{i} = eval('{i}')\n" for i in range(1, 8)))
    exact = ruff_scan(repo)
    assert not exact.truncated and len(exact.findings) == 7


# --- which files ---------------------------------------------------------------------------------

def test_the_scope_holds_every_covered_language_and_each_analyzer_gets_only_its_own(repo: Path) -> None:
    for rel in ("src/A.java", "web/app.js", "web/lib.mjs", "web/view.ts", "web/page.tsx", "svc/main.go",
                "tool.py"):
        write(repo, rel, JAVA_OK if rel.endswith(".java") else "\n")
    write(repo, "notes.txt", "eval(x)\n")
    write(repo, "Makefile.rb", "eval(x)\n")
    fake = Recorder()
    report = Scanner(repo, [RuffAnalyzer(), fake]).scan()
    assert fake.calls == [["src/A.java", "svc/main.go", "web/app.js", "web/lib.mjs", "web/page.tsx", "web/view.ts"]]
    assert report.files == 7 and report.analyzers == ["ruff", "fake"]
    assert report.languages == {"java": 1, "javascript": 2, "typescript": 1, "tsx": 1, "go": 1, "python": 1}
    assert [f.path for f in report.findings] == sorted(fake.calls[0])  # sorted, whatever the tool's order


def test_too_many_files_is_refused(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner_module, "MAX_SCAN_FILES", 3)
    for i in range(2):
        write(repo, f"src/m{i}.py", CLEAN)
    write(repo, "src/M.java", JAVA_OK)
    assert Scanner(repo, [RuffAnalyzer(), Recorder()]).scan(["src"]).files == 3  # at the bound: fine
    write(repo, "src/m3.go", "package m\n")
    with pytest.raises(ScanError, match="more than 3 source files"):
        Scanner(repo).scan(["src"])


def test_skipped_folders_symlinked_files_and_other_files_are_not_scanned(repo: Path, tmp_path: Path) -> None:
    write(repo, "src/app.py", CLEAN)
    write(repo, "src/notes.txt", "eval(x)\n")
    for skipped in ("node_modules/pkg", ".venv/lib", "__pycache__", "build", ".autopatch-j", "src/dist", "target"):
        write(repo, f"{skipped}/bad.py", "eval(x)\n")
        write(repo, f"{skipped}/Bad.java", JAVA_OK)
    outside = write(tmp_path, "outside/evil.py", "eval(x)\n")
    os.symlink(outside, repo / "src" / "link.py")
    os.symlink(repo / "src" / "app.py", repo / "src" / "alias.py")  # even one pointing inside
    report = ruff_scan(repo)
    assert report.files == 1 and report.findings == []
    assert Scanner(repo).files() == ["src/app.py"]


def test_overlapping_scope_paths_scan_each_file_once(repo: Path) -> None:
    write(repo, "src/a.py", SWALLOW)
    report = ruff_scan(repo, ["src", "src/a.py", "./src"])
    assert report.files == 1 and [f.id for f in report.findings] == ["F1"]


def test_a_file_named_like_an_option_is_scanned_as_a_file(repo: Path) -> None:
    write(repo, "-rf.py", EVAL)
    write(repo, "--select=E.py", EVAL)
    report = ruff_scan(repo)
    assert [(f.path, f.check_id) for f in report.findings] == [("--select=E.py", "S307"), ("-rf.py", "S307")]


# --- refused scopes ------------------------------------------------------------------------------

@pytest.mark.parametrize(("scope", "reason"), [
    ("../elsewhere", "leaves the repository"),
    ("src/../../elsewhere", "leaves the repository"),
    (".autopatch-j", ".autopatch-j/ is not readable"),
    (".autopatch-j/memory.db", ".autopatch-j/ is not readable"),
    (".git", ".git/ is not readable"),
    ("src/../.git/config", ".git/ is not readable"),
    ("missing", "no such file or folder"),
    ("src/missing.py", "no such file or folder"),
    ("  ", "a repository-relative path is required"),
], ids=["dotdot", "nested-dotdot", "state-dir", "state-file", "git", "git-via-dotdot", "missing", "missing-file",
        "blank"])
def test_bad_scopes_raise_scan_error(repo: Path, scope: str, reason: str) -> None:
    write(repo, "src/a.py", SWALLOW)
    write(repo, ".autopatch-j/memory.db", "")
    write(repo, "../elsewhere/x.py", SWALLOW)
    with pytest.raises(ScanError, match="cannot scan") as info:
        Scanner(repo).scan(["src", scope])  # one bad path refuses the whole scope
    assert reason in str(info.value)


def test_absolute_path_is_refused_even_inside_the_repository(repo: Path) -> None:
    target = write(repo, "src/a.py", SWALLOW)
    with pytest.raises(ScanError, match="absolute paths are refused"):
        Scanner(repo).scan([str(target)])


def test_symlink_escape_is_refused(repo: Path, tmp_path: Path) -> None:
    write(tmp_path, "outside/evil.py", SWALLOW)
    os.symlink(tmp_path / "outside", repo / "vendor")
    os.symlink(tmp_path / "outside" / "evil.py", repo / "evil.py")
    for scope in ("vendor", "vendor/evil.py", "evil.py"):
        with pytest.raises(ScanError, match="leaves the repository"):
            Scanner(repo).scan([scope])


def test_a_symlink_inside_the_repository_is_followed(repo: Path) -> None:
    write(repo, "real/a.py", SWALLOW)
    os.symlink(repo / "real", repo / "alias")
    report = ruff_scan(repo, ["alias"])
    assert [(f.path, f.check_id) for f in report.findings] == [("real/a.py", "S110")]


@pytest.mark.parametrize("scope", [["docs"], ["docs/readme.md"], []], ids=["folder", "other-file", "repo"])
def test_a_scope_without_covered_files_names_what_is_supported(repo: Path, scope: list[str]) -> None:
    write(repo, "docs/readme.md", "eval(x)\n")
    write(repo, "docs/main.rs", "fn main() {}\n")
    with pytest.raises(ScanError, match="no source files to scan") as info:
        Scanner(repo).scan(scope)
    assert ("docs" if scope else "the repository") in str(info.value)
    assert str(info.value).endswith(f"the audit covers {SUPPORTED}")
    assert "Python (Ruff)" in SUPPORTED and "Java" in SUPPORTED and "Go (Semgrep)" in SUPPORTED


# --- unparsed files ------------------------------------------------------------------------------

def test_unparseable_files_are_counted_and_skipped(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "a_ok.py", SWALLOW)
    write(repo, "b_syntax.py", "def broken(:\n    eval(x)\n")
    (repo / "c_nul.py").write_bytes(b"x = 1\x00\neval(y)\n")
    (repo / "d_latin1.py").write_bytes(b"s = '\xff\xfe'\neval(y)\n")
    write(repo, "f_big.py", "eval(y)\n" + "# padding\n" * 20)
    write(repo, "g_ok.py", MUTABLE)
    write(repo, "H.java", JAVA_BROKEN)  # the stand-in analyzer reports nothing; tree-sitter finds the error
    write(repo, "I.java", JAVA_OK)
    monkeypatch.setattr(scanner_module, "MAX_FILE_BYTES", 150)  # f_big.py is over the read bound
    fake = Recorder()
    report = Scanner(repo, [RuffAnalyzer(), fake]).scan()
    assert report.files == 8
    assert report.unparsed == ["H.java", "b_syntax.py", "c_nul.py", "d_latin1.py"]
    assert report.too_large == ["f_big.py"]  # named as over the size limit, not as unparseable
    assert [(f.id, f.path, f.check_id) for f in report.findings] == [
        ("F1", "I.java", "fake.rule"), ("F2", "a_ok.py", "S110"), ("F3", "g_ok.py", "B006")]
    assert fake.calls == [["H.java", "I.java"]]  # a too-large file never reaches an analyzer


def test_a_file_that_crashes_ruff_is_unparsed_and_the_others_are_still_analyzed(repo: Path) -> None:
    # Ruff aborts on deep nesting (stack overflow): the run is split until the file is found
    write(repo, "a.py", SWALLOW)
    write(repo, "b_deep.py", "x = 1" + " + 1" * 40_000 + "\n")
    write(repo, "c.py", MUTABLE)
    report = ruff_scan(repo)
    assert report.unparsed == ["b_deep.py"] and report.errors == []
    assert [(f.path, f.check_id) for f in report.findings] == [("a.py", "S110"), ("c.py", "B006")]


def test_files_over_the_size_limit_are_named_with_the_limit(repo: Path) -> None:
    write(repo, "huge.py", "eval(y)\n" + "# padding\n" * 200_001)  # just over 2 MB
    with pytest.raises(ScanError) as caught:
        ruff_scan(repo, ["huge.py"])
    assert str(caught.value) == ("1 file(s) over the analyzers' size limit of 2 MB were not analyzed: huge.py; nothing "
                                 "else was left to analyze")
    write(repo, "small.py", SWALLOW)
    report = ruff_scan(repo)
    assert report.too_large == ["huge.py"] and report.unparsed == []
    from autopatch_tui.core.repair.summary import audit_summary
    from autopatch_tui.core.repair.workspace import AuditWorkspace

    text = audit_summary(AuditWorkspace.from_report("scan-1", (), report), model=False)
    assert "1 file(s) over the analyzers' size limit of 2 MB were not analyzed: huge.py." in text


def test_a_scope_of_only_unparseable_files_is_a_report_not_an_error(repo: Path) -> None:
    write(repo, "bad.py", "def (:\n")
    report = ruff_scan(repo, ["bad.py"])
    assert (report.files, report.unparsed, report.findings) == (1, ["bad.py"], [])


# --- analyzers that cannot run -------------------------------------------------------------------

def test_a_missing_analyzer_is_named_and_the_audit_goes_on_with_the_others(repo: Path, tmp_path: Path) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "src/A.java", JAVA_OK)
    write(repo, "web/app.ts", "\n")
    missing = SemgrepAnalyzer(binary=str(tmp_path / "no" / "semgrep"))
    report = Scanner(repo, [RuffAnalyzer(), missing]).scan()
    assert report.analyzers == ["ruff"] and [f.check_id for f in report.findings] == ["S110"]
    assert report.errors == [f"semgrep is not installed ({tmp_path}/no/semgrep was not found); "
                             "2 file(s) were not analyzed"]


def test_a_language_without_any_analyzer_is_named(repo: Path) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "main.go", "package main\n")
    report = Scanner(repo, [RuffAnalyzer()]).scan()
    assert report.errors == ["no analyzer is configured for 1 file(s) such as main.go; they were not analyzed"]


def test_when_no_analyzer_can_run_the_scan_fails_with_every_cause(repo: Path, tmp_path: Path) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "A.java", JAVA_OK)
    broken = fake_tool(tmp_path, "ruff", "echo 'ruff failed: invalid pyproject.toml' >&2\nexit 2")
    with pytest.raises(ScanError) as info:
        Scanner(repo, [RuffAnalyzer(binary=broken), Recorder(error="semgrep is not installed")]).scan()
    assert str(info.value) == ("no analyzer could run: ruff failed (exit 2): ruff failed: invalid pyproject.toml; "
                               "1 file(s) were not analyzed; semgrep is not installed; 1 file(s) were not analyzed")


@pytest.mark.parametrize(("body", "message"), [
    ("echo 'not json'", "ruff printed output that is not JSON"),
    ('echo \'{"a": 1}\'', "ruff printed JSON of an unexpected shape"),
    ("echo '[1]'", "ruff printed JSON of an unexpected shape"),
    ("printf '\\033[31merror\\033[0m: cannot read\\n\\n' >&2\nexit 2", "ruff failed (exit 2): error: cannot read"),
    ("kill -SEGV $$", "ruff was killed by signal 11"),
    ("exit 101", "ruff failed (exit 101)"),
], ids=["garbage", "object", "list-of-numbers", "exit-2-ansi", "signal", "panic"])
def test_a_failing_ruff_is_reported_in_one_clean_line(repo: Path, tmp_path: Path, body: str, message: str) -> None:
    write(repo, "a.py", SWALLOW)
    write(repo, "b.py", MUTABLE)  # two files: a crash on both is bisected and still a failure
    with pytest.raises(AnalyzerError) as info:
        RuffAnalyzer(binary=fake_tool(tmp_path, "ruff", body)).analyze(repo, ["a.py", "b.py"])
    assert str(info.value) == message


def test_a_hanging_tool_is_killed_at_its_deadline_with_its_children(repo: Path, tmp_path: Path) -> None:
    write(repo, "a.py", SWALLOW)
    pids = tmp_path / "pids"
    hang = fake_tool(tmp_path, "ruff", f"sleep 30 &\necho $! > {pids}\nwait")
    started = time.monotonic()
    with pytest.raises(AnalyzerError, match=r"^ruff timed out after 0.3 s$"):
        RuffAnalyzer(binary=hang, timeout=0.3).analyze(repo, ["a.py"])
    assert time.monotonic() - started < 10
    child = int(pids.read_text())
    for _ in range(250):  # the grandchild `sleep` went with the process group (gone, or a zombie)
        if not alive(child):
            break
        time.sleep(0.02)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the tool's child process survived the timeout")


def test_a_tool_that_prints_too_much_is_stopped(repo: Path, tmp_path: Path) -> None:
    from autopatch_tui.core.repair.analyzers.base import run_tool

    with pytest.raises(AnalyzerError, match="^flood printed more than 10000 bytes of output$"):
        run_tool("flood", ["sh", "-c", "yes flood"], cwd=repo, timeout=20, max_output=10_000)


def test_an_analyzer_gets_no_api_key_or_app_setting(repo: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "a.py", SWALLOW)
    monkeypatch.setenv("AUTOPATCH_LLM_API_KEY", "sk-SECRET")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-OTHER")
    dump = tmp_path / "env.txt"
    spy = fake_tool(tmp_path, "ruff", f"env > {dump}\necho '[]'")
    assert RuffAnalyzer(binary=spy).analyze(repo, ["a.py"]).findings == []
    seen = dump.read_text()
    assert "sk-SECRET" not in seen and "sk-OTHER" not in seen and "AUTOPATCH_" not in seen
    assert "PATH=" in seen
