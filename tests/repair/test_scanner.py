"""The deterministic static scanner behind `code_audit`: its four rules (each with a look-alike it
must not flag), the order and bounds of its results, every reason a scope is refused, and files it
cannot parse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autopatch_tui.core.repair import scanner as scanner_module
from autopatch_tui.core.repair.findings import SCANNER
from autopatch_tui.core.repair.scanner import RULES, ScanError, Scanner
from tests.repair.conftest import CLEAN, MUTABLE, SWALLOW, write


def hits(repo: Path, source: str, name: str = "mod.py") -> list[tuple[int, str]]:
    write(repo, name, source)
    return [(f.line, f.check_id) for f in Scanner(repo).scan([name]).findings]


# --- rules ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("source", "expected"), [
    (SWALLOW, [(4, "APJ-PY001")]),
    ("try:\n    x = 1\nexcept Exception:\n    ...\n", [(3, "APJ-PY001")]),
    ("try:\n    x = 1\nexcept BaseException:\n    pass\n    pass\n", [(3, "APJ-PY001")]),
    ("def f(src):\n    return eval(src)\n", [(2, "APJ-PY002")]),
    ("exec('x = 1')\n", [(1, "APJ-PY002")]),
    (MUTABLE, [(1, "APJ-PY003")]),
    ("def f(a,\n      b={},\n      *, c=set()):\n    pass\n", [(2, "APJ-PY003")]),
    ("def f(*, opts={1, 2}):\n    pass\n", [(1, "APJ-PY003")]),
    ("async def f(x=[]):\n    pass\n", [(1, "APJ-PY003")]),
    ("g = lambda acc=[]: acc\n", [(1, "APJ-PY003")]),
    ("import subprocess\nsubprocess.run('ls', shell=True)\n", [(2, "APJ-PY004")]),
], ids=["bare-except-pass", "except-Exception-ellipsis", "except-BaseException", "eval", "exec",
        "list-default", "dict-default-multiline", "kwonly-set-default", "async-def", "lambda", "shell-true"])
def test_each_rule_flags_its_pattern(repo: Path, source: str, expected: list[tuple[int, str]]) -> None:
    assert hits(repo, source) == expected


@pytest.mark.parametrize("source", [
    "try:\n    x = 1\nexcept ValueError:\n    pass\n",  # a narrow handler may be silent
    "try:\n    x = 1\nexcept Exception:\n    log(x)\n",  # a broad handler that does something
    "try:\n    x = 1\nexcept (Exception,):\n    raise\n",
    "try:\n    x = 1\nexcept:\n    'ignored on purpose'\n    raise\n",
    "result = parser.eval(src)\nobj.exec()\n",  # methods named eval/exec are not the builtins
    "def f(x=None, y=(), z=0, w=frozenset(), v=dict()):\n    pass\n",  # immutable / call defaults
    "import subprocess\nsubprocess.run(['ls'], shell=False)\nsubprocess.run(['ls'])\nrun(shell=flag)\n",
    CLEAN,
], ids=["narrow-except", "broad-except-logs", "tuple-except-reraises", "string-body-raises", "eval-method",
        "immutable-defaults", "shell-false", "clean"])
def test_look_alikes_are_not_flagged(repo: Path, source: str) -> None:
    assert hits(repo, source) == []


def test_finding_fields_name_the_rule_and_the_file(repo: Path) -> None:
    write(repo, "pkg/loader.py", SWALLOW)
    report = Scanner(repo).scan(["pkg"])
    assert report.files == 1 and report.unparsed == [] and not report.truncated
    (f,) = report.findings
    assert (f.id, f.path, f.line, f.check_id, f.message, f.origin) == (
        "F1", "pkg/loader.py", 4, "APJ-PY001", RULES["APJ-PY001"], SCANNER)
    assert f.location == "pkg/loader.py:4"


# --- order and bounds -------------------------------------------------------------------------

def test_findings_are_sorted_by_path_line_check_and_numbered_in_that_order(repo: Path) -> None:
    write(repo, "b.py", "x = eval('1')\n" + MUTABLE)
    write(repo, "a/z.py", "exec('1')\n")
    write(repo, "a.py", "import subprocess\n\nsubprocess.run(eval(cmd), shell=True)\n" + SWALLOW)
    write(repo, "c.py", "y = eval(eval('2'))\n")  # two eval calls on one line: one finding
    report = Scanner(repo).scan()
    got = [(f.id, f.path, f.line, f.check_id) for f in report.findings]
    assert got == [
        ("F1", "a.py", 3, "APJ-PY002"), ("F2", "a.py", 3, "APJ-PY004"), ("F3", "a.py", 7, "APJ-PY001"),
        ("F4", "a/z.py", 1, "APJ-PY002"),
        ("F5", "b.py", 1, "APJ-PY002"), ("F6", "b.py", 2, "APJ-PY003"),
        ("F7", "c.py", 1, "APJ-PY002"),
    ]
    assert report.files == 4
    # the same tree scanned again gives the same result (deterministic)
    assert [(f.id, f.path, f.line, f.check_id) for f in Scanner(repo).scan().findings] == got
    assert Scanner(repo).files() == ["a.py", "a/z.py", "b.py", "c.py"]


def test_findings_are_bounded_and_the_report_says_so(repo: Path) -> None:
    n = scanner_module.MAX_FINDINGS + 5
    write(repo, "gen.py", "".join(f"v{i} = eval('{i}')\n" for i in range(1, n + 1)))
    report = Scanner(repo).scan()
    assert report.truncated
    assert len(report.findings) == scanner_module.MAX_FINDINGS
    assert report.findings[-1].id == f"F{scanner_module.MAX_FINDINGS}"
    assert report.findings[-1].line == scanner_module.MAX_FINDINGS  # the first ones by line are kept
    write(repo, "gen.py", "".join(f"v{i} = eval('{i}')\n" for i in range(1, scanner_module.MAX_FINDINGS + 1)))
    exact = Scanner(repo).scan()
    assert not exact.truncated and len(exact.findings) == scanner_module.MAX_FINDINGS


def test_too_many_files_is_refused(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner_module, "MAX_SCAN_FILES", 3)
    for i in range(3):
        write(repo, f"src/m{i}.py", CLEAN)
    assert Scanner(repo).scan(["src"]).files == 3  # at the bound: fine
    write(repo, "src/m3.py", CLEAN)
    with pytest.raises(ScanError, match="more than 3 Python files"):
        Scanner(repo).scan(["src"])


def test_skipped_folders_symlinked_files_and_other_files_are_not_scanned(repo: Path, tmp_path: Path) -> None:
    write(repo, "src/app.py", CLEAN)
    write(repo, "src/notes.txt", "eval(x)\n")
    for skipped in ("node_modules/pkg", ".venv/lib", "__pycache__", "build", ".autopatch-j", "src/dist"):
        write(repo, f"{skipped}/bad.py", "eval(x)\n")
    outside = write(tmp_path, "outside/evil.py", "eval(x)\n")
    os.symlink(outside, repo / "src" / "link.py")
    os.symlink(repo / "src" / "app.py", repo / "src" / "alias.py")  # even one pointing inside
    report = Scanner(repo).scan()
    assert report.files == 1 and report.findings == []
    assert Scanner(repo).files() == ["src/app.py"]


def test_overlapping_scope_paths_scan_each_file_once(repo: Path) -> None:
    write(repo, "src/a.py", SWALLOW)
    report = Scanner(repo).scan(["src", "src/a.py", "./src"])
    assert report.files == 1 and [f.id for f in report.findings] == ["F1"]


# --- refused scopes ---------------------------------------------------------------------------

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
    report = Scanner(repo).scan(["alias"])
    assert [(f.path, f.check_id) for f in report.findings] == [("real/a.py", "APJ-PY001")]


@pytest.mark.parametrize("scope", [["docs"], ["docs/readme.md"], []], ids=["folder", "non-python-file", "repo"])
def test_no_python_files_is_a_scan_error(repo: Path, scope: list[str]) -> None:
    write(repo, "docs/readme.md", "eval(x)\n")
    with pytest.raises(ScanError, match="no Python files to scan") as info:
        Scanner(repo).scan(scope)
    assert ("docs" if scope else "the repository") in str(info.value)


# --- unparsed files ---------------------------------------------------------------------------

def test_unparseable_files_are_counted_and_skipped(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "a_ok.py", SWALLOW)
    write(repo, "b_syntax.py", "def broken(:\n    eval(x)\n")
    (repo / "c_nul.py").write_bytes(b"x = 1\x00\neval(y)\n")
    (repo / "d_latin1.py").write_bytes(b"s = '\xff\xfe'\neval(y)\n")
    write(repo, "e_deep.py", "x = 1" + " + 1" * 5000 + "\n")  # the parser gives up (RecursionError)
    write(repo, "f_big.py", "eval(y)\n" + "# padding\n" * 20)
    write(repo, "g_ok.py", MUTABLE)
    monkeypatch.setattr(scanner_module, "MAX_FILE_BYTES", 150)  # f_big.py is over the read bound
    report = Scanner(repo).scan()
    assert report.files == 7
    assert report.unparsed == ["b_syntax.py", "c_nul.py", "d_latin1.py", "e_deep.py", "f_big.py"]
    assert [(f.id, f.path, f.check_id) for f in report.findings] == [
        ("F1", "a_ok.py", "APJ-PY001"), ("F2", "g_ok.py", "APJ-PY003")]


def test_a_scope_of_only_unparseable_files_is_a_report_not_an_error(repo: Path) -> None:
    write(repo, "bad.py", "def (:\n")
    report = Scanner(repo).scan(["bad.py"])
    assert (report.files, report.unparsed, report.findings) == (1, ["bad.py"], [])
