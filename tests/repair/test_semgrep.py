"""The Semgrep adapter on the real binary, on one mixed repository (Java, JavaScript, TypeScript,
Go, Python; suppressions; a file that does not parse) scanned once for the whole module: Semgrep
starts slowly, so every test reads the same report. The rule pack's own positive and negative
cases run in test_semgrep_rules.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.repair.analyzers.semgrep import RULES_DIR, SemgrepAnalyzer, find_semgrep, rule_ids
from autopatch_tui.core.repair.scanner import ScanReport, Scanner
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
BROKEN_JAVA = "class Broken {\n    void f( {\n        MessageDigest.getInstance(\"MD5\");\n}\n"
IGNORED_JAVA = 'class Gen {\n    Object r = new java.util.Random();\n}\n'


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ScanReport]:
    repo = make_git_repo(tmp_path_factory.mktemp("mixed") / "project")
    write(repo, "src/main/java/app/App.java", APP_JAVA)
    write(repo, "web/app.js", APP_JS)
    write(repo, "web/view.ts", VIEW_TS)
    write(repo, "svc/main.go", MAIN_GO)
    write(repo, "tools/hash.py", "import hashlib\n\n\ndef h(b):\n    return hashlib.md5(b)\n")
    write(repo, "tools/quiet.py", SWALLOW.replace("    except:\n", "    except:  # noqa: S110\n"))
    write(repo, "broken/Broken.java", BROKEN_JAVA)
    write(repo, "gen/Gen.java", IGNORED_JAVA)
    write(repo, ".gitignore", "gen/\n")  # git-ignored, but inside the audit's scope: still audited
    return repo, Scanner(repo).scan()


def rows(report: ScanReport) -> list[tuple[str, int, str, str]]:
    return [(f.path, f.line, f.check_id, f.tool) for f in report.findings]


def test_semgrep_is_installed_with_the_package() -> None:
    assert find_semgrep() is not None


def test_one_audit_covers_every_language_with_its_analyzer(mixed: tuple[Path, ScanReport]) -> None:
    _, report = mixed
    assert report.analyzers == ["ruff", "semgrep"] and report.errors == []
    assert report.files == 8
    assert report.languages == {"java": 3, "javascript": 1, "typescript": 1, "go": 1, "python": 2}
    assert rows(report) == [
        ("gen/Gen.java", 2, "java.insecure-random", "semgrep"),
        ("src/main/java/app/App.java", 10, "java.constructor-missing-null-check", "semgrep"),
        ("src/main/java/app/App.java", 14, "java.weak-md5", "semgrep"),
        ("src/main/java/app/App.java", 26, "java.equals-literal-order", "semgrep"),
        ("svc/main.go", 6, "go.weak-md5", "semgrep"),
        ("tools/hash.py", 5, "S324", "ruff"),
        ("web/app.js", 2, "js.eval-dynamic-code", "semgrep"),
        ("web/view.ts", 2, "js.inner-html-assignment", "semgrep"),
    ]
    assert [f.id for f in report.findings] == [f"F{n}" for n in range(1, 9)]


def test_nosemgrep_and_noqa_comments_silence_their_lines(mixed: tuple[Path, ScanReport]) -> None:
    _, report = mixed
    lines = {(f.path, f.line) for f in report.findings}
    assert ("src/main/java/app/App.java", 18) not in lines  # nosemgrep: java.weak-md5
    assert ("src/main/java/app/App.java", 22) not in lines  # bare nosemgrep
    assert not any(f.path == "tools/quiet.py" for f in report.findings)  # noqa: S110


def test_a_semgrep_finding_keeps_its_rule_id_span_severity_and_reference(mixed: tuple[Path, ScanReport]) -> None:
    _, report = mixed
    md5 = next(f for f in report.findings if f.check_id == "java.weak-md5")
    assert (md5.line, md5.column, md5.end_line, md5.end_column) == (14, 16, 14, 48)
    assert md5.severity == "warning" and md5.url == "https://cwe.mitre.org/data/definitions/328.html"
    assert md5.message.startswith("MD5 is a broken hash function")
    assert {f.check_id for f in report.findings if f.tool == "semgrep"} <= rule_ids()
    js = next(f for f in report.findings if f.check_id == "js.eval-dynamic-code")
    assert js.severity == "error"
    equals = next(f for f in report.findings if f.check_id == "java.equals-literal-order")
    assert equals.severity == "info" and equals.url == ""


def test_a_file_that_does_not_parse_is_unparsed_not_guessed_at(mixed: tuple[Path, ScanReport]) -> None:
    _, report = mixed
    assert report.unparsed == ["broken/Broken.java"]
    assert not any(f.path == "broken/Broken.java" for f in report.findings)


def test_the_rule_pack_is_package_data_next_to_the_adapter() -> None:
    assert sorted(p.name for p in RULES_DIR.glob("*.yml")) == ["go.yml", "java.yml", "javascript.yml"]
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
