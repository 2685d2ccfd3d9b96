"""The Semgrep adapter and our rule pack on the real binary. Semgrep starts slowly, so it runs
once, in one test: on a mixed repository (Java, JavaScript, TypeScript, Go, Python; suppressions;
a git-ignored file; a file that does not parse) that also holds the rule pack's cases from
tests/repair/semgrep_rules/ (semgrep's `--test` format: `// ruleid: ID` marks the next line as a
finding, `// ok: ID` as none) — every rule must find exactly its annotated lines. The other tests
use stand-in binaries."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from autopatch_tui.core.repair.analyzers.semgrep import RULES_DIR, SemgrepAnalyzer, find_semgrep, rule_ids
from autopatch_tui.core.repair.scanner import Scanner, ScanReport
from tests.repair.conftest import SWALLOW, fake_tool, write
from tests.support.fixtures import make_git_repo

APP_JAVA = """\
package app;

import java.security.MessageDigest;
import java.util.Random;

public class App {
    private final String name;

    public App(String name) {
        this.name = name;
    }

    byte[] weak(byte[] data) throws Exception {
        return MessageDigest.getInstance("MD5").digest(data);
    }

    byte[] silenced(byte[] data) throws Exception {
        return MessageDigest.getInstance("MD5").digest(data); // nosemgrep: java.weak-md5
    }

    int dice() {
        return new Random().nextInt(6); // nosemgrep
    }

    boolean isAdmin(String role) {
        return role.equals("admin");
    }
}
"""
APP_JS = "function run(code) {\n  return eval(code);\n}\n"
VIEW_TS = "export function show(el: HTMLElement, html: string): void {\n  el.innerHTML = html;\n}\n"
MAIN_GO = 'package main\n\nimport "crypto/md5"\n\nfunc main() {\n\t_ = md5.Sum([]byte("x"))\n}\n'
CASES = Path(__file__).parent / "semgrep_rules"
ANNOTATION = re.compile(r"//\s*(ruleid|ok):\s*([A-Za-z0-9_.-]+)\s*$")
BROKEN_JAVA = "class Broken {\n    void f( {\n        MessageDigest.getInstance(\"MD5\");\n}\n"
IGNORED_JAVA = 'class Gen {\n    Object r = new java.util.Random();\n}\n'


def annotated(folder: Path) -> tuple[set[tuple[str, int, str]], dict[str, set[str]]]:
    """The findings the case files expect — (file, line, rule) — and each rule's annotation kinds."""
    expected: set[tuple[str, int, str]] = set()
    kinds: dict[str, set[str]] = {}
    for f in sorted(folder.iterdir()):
        for n, text in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            m = ANNOTATION.search(text)
            if m:
                kinds.setdefault(m.group(2), set()).add(m.group(1))
                if m.group(1) == "ruleid":
                    expected.add((f.name, n + 1, m.group(2)))
    return expected, kinds


def mixed_repo(root: Path) -> Path:
    repo = make_git_repo(root / "project")
    write(repo, "src/main/java/app/App.java", APP_JAVA)
    write(repo, "web/app.js", APP_JS)
    write(repo, "web/view.ts", VIEW_TS)
    write(repo, "svc/main.go", MAIN_GO)
    write(repo, "tools/hash.py", "import hashlib\n\n\ndef h(b):\n    return hashlib.md5(b)\n")
    # a multi-line finding is silenced on the line Ruff reports it at (`except`), not on `pass`
    write(repo, "tools/quiet.py", SWALLOW.replace("    except:\n", "    except:  # noqa: S110\n"))
    write(repo, "broken/Broken.java", BROKEN_JAVA)
    write(repo, "gen/Gen.java", IGNORED_JAVA)
    write(repo, ".gitignore", "gen/\n")  # git-ignored, but inside the audit's scope: still audited
    shutil.copytree(CASES, repo / "cases")
    return repo


def rows(report: ScanReport) -> list[tuple[str, int, str, str]]:
    return [(f.path, f.line, f.check_id, f.tool) for f in report.findings]


def test_semgrep_is_an_extra_that_make_test_installs() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text("utf-8"))["project"]
    assert not [d for d in project["dependencies"] if d.startswith("semgrep")]  # the base install has no Semgrep
    assert [d for d in project["optional-dependencies"]["semgrep"] if d.startswith("semgrep")]
    assert "'.[test,semgrep]'" in (Path(__file__).parents[2] / "Makefile").read_text("utf-8")
    assert find_semgrep() is not None  # `make test` installed the extra: the Semgrep tests below run


def test_semgrep_audits_a_mixed_repository_and_each_rule_finds_exactly_its_cases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = mixed_repo(tmp_path)
    # issue #24 item 4: Semgrep writes nothing into the user's home and runs no git in the repository
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    git_log = tmp_path / "git-calls.log"
    real_git = shutil.which("git")
    if real_git is not None:  # a `git` first on PATH that logs where it runs and which repository it
        # would find from there (Semgrep runs git in its own package folder too: inside a checkout
        # when installed in a project's .venv, as `make test` does), then runs the real one
        fake_tool(tmp_path / "spy", "git", f'found=$({real_git} rev-parse --absolute-git-dir 2>/dev/null '
                                           f'|| echo none)\necho "$found $(pwd) $*" >> {git_log}\n'
                                           f'exec {real_git} "$@"')
        monkeypatch.setenv("PATH", f"{tmp_path / 'spy' / 'bin'}:{os.environ['PATH']}")
    report = Scanner(repo).scan()
    assert sorted(p.name for p in home.iterdir()) == []  # no ~/.semgrep/, no semgrep.log
    calls = git_log.read_text().splitlines() if git_log.exists() else []
    assert not [c for c in calls if not c.startswith("none ")], calls  # no git call reached any repository
    assert report.analyzers == ["ruff", "semgrep"] and report.errors == []
    assert report.files == 12
    assert report.languages == {"java": 4, "javascript": 2, "typescript": 2, "go": 2, "python": 2}
    assert [f.id for f in report.findings] == [f"F{n}" for n in range(1, len(report.findings) + 1)]

    # every language with its analyzer; git-ignored gen/ is audited (it is in the scope)
    assert [r for r in rows(report) if not r[0].startswith("cases/")] == [
        ("gen/Gen.java", 2, "java.insecure-random", "semgrep"),
        ("src/main/java/app/App.java", 10, "java.constructor-missing-null-check", "semgrep"),
        ("src/main/java/app/App.java", 14, "java.weak-md5", "semgrep"),
        ("src/main/java/app/App.java", 26, "java.equals-literal-order", "semgrep"),
        ("svc/main.go", 6, "go.weak-md5", "semgrep"),
        ("tools/hash.py", 5, "S324", "ruff"),
        ("web/app.js", 2, "js.eval-dynamic-code", "semgrep"),
        ("web/view.ts", 2, "js.inner-html-assignment", "semgrep"),
    ]
    # suppressions: nosemgrep with and without a rule ID (App.java 18 and 22), noqa (tools/quiet.py)
    assert not {("src/main/java/app/App.java", 18), ("src/main/java/app/App.java", 22)} & {
        (f.path, f.line) for f in report.findings}
    assert not any(f.path == "tools/quiet.py" for f in report.findings)

    # a Semgrep finding keeps its rule ID (never a path-derived prefix), span, severity, reference
    md5 = next(f for f in report.findings if f.check_id == "java.weak-md5" and f.path.startswith("src/"))
    assert (md5.line, md5.column, md5.end_line, md5.end_column) == (14, 16, 14, 48)
    assert md5.severity == "warning" and md5.url == "https://cwe.mitre.org/data/definitions/328.html"
    assert md5.message.startswith("MD5 is a broken hash function") and md5.tool == "semgrep"
    js = next(f for f in report.findings if f.check_id == "js.eval-dynamic-code")
    equals = next(f for f in report.findings if f.check_id == "java.equals-literal-order")
    assert (js.severity, equals.severity, equals.url) == ("error", "info", "")

    # a file that does not parse is unparsed, not guessed at
    assert report.unparsed == ["broken/Broken.java"]
    assert not any(f.path == "broken/Broken.java" for f in report.findings)

    # the rule pack: each rule finds exactly the lines its cases mark, no more, no fewer
    expected, kinds = annotated(CASES)
    got = {(Path(f.path).name, f.line, f.check_id) for f in report.findings if f.path.startswith("cases/")}
    assert got == expected
    assert set(kinds) == set(rule_ids()) and all(k == {"ruleid", "ok"} for k in kinds.values()), kinds


def test_without_semgrep_an_audit_says_in_one_line_how_to_add_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from autopatch_tui.core.repair.analyzers import semgrep as semgrep_module
    from autopatch_tui.core.repair.scanner import ScanError
    from autopatch_tui.core.repair.summary import audit_summary
    from autopatch_tui.core.repair.workspace import AuditWorkspace

    monkeypatch.setattr(semgrep_module, "find_semgrep", lambda: None)  # the base install: no Semgrep
    repo = make_git_repo(tmp_path / "r")
    write(repo, "A.java", "class A {}\n")
    hint = "semgrep is not installed; add it with: pip install 'autopatch-tui[semgrep]'"
    with pytest.raises(ScanError) as caught:
        Scanner(repo).scan()
    assert str(caught.value) == f"no analyzer could run: {hint}; 1 file(s) were not analyzed"
    write(repo, "tools/x.py", SWALLOW)
    report = Scanner(repo).scan()
    text = audit_summary(AuditWorkspace.from_report("scan-1", (), report), model=False)
    assert [line for line in text.splitlines() if "semgrep" in line] == [
        f"Not analyzed: {hint}; 1 file(s) were not analyzed."]


def test_the_rule_pack_is_package_data_next_to_the_adapter() -> None:
    assert sorted(p.name for p in RULES_DIR.glob("*.yml")) == ["go.yml", "java.yml", "javascript.yml"]
    for rules in RULES_DIR.glob("*.yml"):  # `semgrep --test` pairs java.yml with the cases java.*
        assert list(CASES.glob(rules.stem + ".*")), rules.name
    assert {"java.weak-md5", "java.insecure-random", "java.optional-get-without-check", "java.equals-literal-order",
            "java.unclosed-file-stream", "java.constructor-missing-null-check"} <= rule_ids()


def test_only_the_rule_files_of_the_scope_languages_are_passed(tmp_path: Path) -> None:
    analyzer = SemgrepAnalyzer()
    assert [p.name for p in analyzer.configs(["A.java", "b.tsx"])] == ["java.yml", "javascript.yml"]
    assert analyzer.configs(["x.py"]) == []
    argv = analyzer.argv("semgrep", analyzer.configs(["A.java"]), ["./A.java"])
    assert {"--metrics=off", "--disable-version-check", "--no-rewrite-rule-ids", "--oss-only"} <= set(argv)
    assert "auto" not in argv and not any(a.startswith(("p/", "r/")) for a in argv)  # no registry rules


@pytest.mark.parametrize(("body", "message"), [
    ("echo 'Traceback (most recent call last):' >&2\necho 'KeyError: x' >&2\nexit 2",
     "semgrep failed (exit 2): KeyError: x"),
    ("echo '{\"results\": [], \"errors\": [{\"level\": \"error\", \"message\": \"invalid rule\"}]}'",
     "semgrep failed: invalid rule"),
    ("echo '<html>'", "semgrep printed output that is not JSON"),
], ids=["crash", "rule-error", "garbage"])
def test_a_failing_semgrep_is_reported_in_one_line(tmp_path: Path, body: str, message: str) -> None:
    repo = make_git_repo(tmp_path / "r")
    write(repo, "A.java", "class A {}\n")
    with pytest.raises(Exception) as info:
        SemgrepAnalyzer(binary=fake_tool(tmp_path, "semgrep", body)).analyze(repo, ["A.java"])
    assert str(info.value) == message


def test_a_file_semgrep_reports_as_unparseable_is_unparsed_and_a_warning_is_not(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    write(repo, "A.java", "class A {}\n")
    write(repo, "B.java", "class B {}\n")
    out = ('{"results": [{"check_id": "tmp.rules.java.weak-md5", "path": "B.java", "start": {"line": 1, "col": 1}, '
           '"end": {"line": 1, "col": 5}, "extra": {"message": "m", "severity": "WARNING", "metadata": {}}}], '
           '"errors": [{"level": "error", "type": "Syntax error", "path": "A.java", "message": "x"}, '
           '{"level": "warn", "type": "PartialParsing", "path": "B.java", "message": "y"}]}')
    analysis = SemgrepAnalyzer(binary=fake_tool(tmp_path, "semgrep", f"echo '{out}'\nexit 3")).analyze(
        repo, ["A.java", "B.java"])
    assert analysis.unparsed == ["A.java"]
    # a rule ID with a path-derived prefix (an older Semgrep) is mapped back to our rule's ID
    assert [(f.path, f.rule_id, f.line, f.end_column) for f in analysis.findings] == [("B.java", "java.weak-md5", 1, 5)]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_no_git_command_of_semgrep_reaches_a_repository_wherever_it_runs(tmp_path: Path) -> None:
    """Semgrep runs git in its working folder and in its own package folder — inside a checkout
    when it is installed in the project's .venv: with its environment no git call finds one."""
    import subprocess

    from autopatch_tui.core.repair.analyzers.semgrep import private_env

    repo = make_git_repo(tmp_path / "r")
    (repo / "venv" / "semgrep").mkdir(parents=True)  # where Semgrep's own files would be
    private = tmp_path / "private"
    private.mkdir()
    env = private_env(private)
    for cwd in (private, repo, repo / "venv" / "semgrep"):
        found = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=cwd, env=env, capture_output=True,
                               text=True, timeout=30)
        assert found.returncode != 0 and found.stdout == "", (cwd, found.stdout)


def test_semgrep_runs_in_the_repository_with_absolute_targets_and_private_state(tmp_path: Path) -> None:
    """Issue #33 item 5: Semgrep takes a named file under its working folder as it is, and starts
    one `semgrep-core` per file outside it (2.5x the CPU on jsoup): the working folder is the
    repository, every target is named absolutely under it, and its state stays private."""
    repo = make_git_repo(tmp_path / "r")
    write(repo, "A.java", "class A {}\n")
    write(repo, "src/-B.java", "class B {}\n")
    seen = tmp_path / "seen.txt"
    tool = fake_tool(tmp_path, "semgrep", f'pwd -P > {seen}\necho "$HOME" >> {seen}\necho "$GIT_DIR" >> {seen}\n'
                                          f'for a in "$@"; do echo "$a" >> {seen}; done\necho \'{{"results": []}}\'')
    SemgrepAnalyzer(binary=tool).analyze(repo, ["A.java", "src/-B.java"])
    cwd, home, git_dir, *argv = seen.read_text().splitlines()
    assert cwd == str(repo.resolve())
    targets = [a for a in argv if a.endswith(".java")]
    assert targets == [str(repo.resolve() / "A.java"), str(repo.resolve() / "src" / "-B.java")]
    assert not Path(home).is_relative_to(repo) and not Path(home).exists()  # private, removed after the run
    assert git_dir and not Path(git_dir).exists()


def test_a_real_scan_through_a_linked_path_ignores_the_repositorys_semgrep_files_and_writes_nothing(
        tmp_path: Path) -> None:
    """The repository as working folder: its `.semgrepignore` and `.semgrepconfig` do not hide a
    named file, a path reached through a symlink still maps back, and nothing is written there."""
    real = make_git_repo(tmp_path / "real")
    write(real, "App.java", APP_JAVA)
    write(real, ".semgrepignore", "*\n*.java\n")
    write(real, ".semgrepconfig.yml", "tags: [x]\n")
    (tmp_path / "link").symlink_to(real)
    before = sorted(str(p.relative_to(real)) for p in real.rglob("*"))
    analysis = SemgrepAnalyzer().analyze(tmp_path / "link", ["App.java"])
    assert {(f.path, f.rule_id) for f in analysis.findings} >= {("App.java", "java.weak-md5")}
    assert analysis.unparsed == []
    assert sorted(str(p.relative_to(real)) for p in real.rglob("*")) == before


def test_semgrep_run_in_the_repository_never_imports_its_python(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Semgrep's CLI is Python started in the repository: a PYTHONPATH entry that means the working
    folder must not let the repository's `sitecustomize.py` or `ruamel/` run."""
    repo = make_git_repo(tmp_path / "r")
    write(repo, "App.java", APP_JAVA)
    marker = tmp_path / "ran"
    payload = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
    write(repo, "sitecustomize.py", payload)
    write(repo, "usercustomize.py", payload)
    write(repo, "ruamel/__init__.py", payload)
    monkeypatch.setenv("PYTHONPATH", f".{os.pathsep}")  # both `.` and the empty entry name the working folder
    analysis = SemgrepAnalyzer().analyze(repo, ["App.java"])
    assert not marker.exists()
    assert any(f.rule_id == "java.weak-md5" for f in analysis.findings)
