"""Patch drafts stay honest for every language: a draft whose result does not parse (Python's
`ast`, tree-sitter for Java, JavaScript, TypeScript/TSX and Go) is refused before it is accepted,
with the line named; a file that did not parse before the draft is not held against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autopatch_tui.core.agent.source_tools import SourceTools
from autopatch_tui.core.repair.findings import Finding
from autopatch_tui.core.repair.patching import DraftError, make_draft
from autopatch_tui.core.repair.scanner import ScanReport
from autopatch_tui.core.repair.syntax import draft_breaks_syntax, syntax_error
from autopatch_tui.core.repair.tools import RepairToolBox
from autopatch_tui.core.repair.workspace import AuditWorkspace
from tests.repair.conftest import write

VALID_AND_BROKEN = {
    "a.py": ("def f(x):\n    return x\n", "def f(x):\n    return x)\n"),
    "A.java": ("class A {\n    int f() { return 1; }\n}\n", "class A {\n    int f() { return 1 }\n}\n"),
    "a.js": ("function f(x) {\n  return x + 1;\n}\n", "function f(x) {\n  return x + ;\n}\n"),
    "a.mjs": ("export const f = (x) => x;\n", "export const f = (x) => ;\n"),
    "a.ts": ("export function f(x: number): number {\n  return x;\n}\n",
             "export function f(x: number): number {\n  return x;\n\n"),
    "a.tsx": ("export const V = () => <div>hi</div>;\n", "export const V = () => <div>hi;\n"),
    "a.go": ("package a\n\nfunc F() int {\n\treturn 1\n}\n", "package a\n\nfunc F() int {\n\treturn 1 +\n}\n"),
}


@pytest.mark.parametrize("name", sorted(VALID_AND_BROKEN))
def test_each_language_parser_tells_valid_from_broken(name: str) -> None:
    valid, broken = VALID_AND_BROKEN[name]
    assert syntax_error(name, valid) is None
    error = syntax_error(name, broken)
    assert error is not None and error.startswith("line ")


def test_typescript_is_not_parsed_as_javascript_nor_tsx_as_plain_typescript() -> None:
    typed = "let n: number = 1;\n"
    assert syntax_error("a.ts", typed) is None and syntax_error("a.js", typed) is not None
    cast = "const n = <number>value;\n"  # a type assertion in .ts, an unclosed element in .tsx
    assert syntax_error("a.ts", cast) is None and syntax_error("a.tsx", cast) is not None


def test_the_error_names_the_line() -> None:
    broken = "class A {\n\n    void f() {\n        int x = ;\n    }\n}\n"
    assert syntax_error("A.java", broken) == "line 4: unexpected text"
    assert syntax_error("a.py", "x = 1\n\nif x\n    pass\n").startswith("line 3:")


def test_other_files_and_files_that_never_parsed_are_not_held_against_a_draft() -> None:
    assert syntax_error("notes.txt", "{{{") is None
    assert draft_breaks_syntax("A.java", "class A {", "class A { int x; ") is None  # broken before and after
    assert draft_breaks_syntax("A.java", "class A {}", "class A {") == "line 1: missing }"


def java_finding(repo: Path) -> Finding:
    write(repo, "src/A.java",
          'class A {\n    String f(String s) {\n        return s.equals("x") ? "y" : "z";\n    }\n}\n')
    return Finding("F1", "src/A.java", 3, "java.equals-literal-order", "m", tool="semgrep")


def test_a_java_draft_that_breaks_the_syntax_is_refused_and_a_valid_one_accepted(repo: Path) -> None:
    f = java_finding(repo)
    with pytest.raises(DraftError, match=r"^the patched src/A.java would not parse \(line 3: missing ;\); "
                                         "keep the code valid$"):
        make_draft(repo, f, finding_id="F1", old_text='"z";', new_text='"z"')
    draft = make_draft(repo, f, finding_id="F1", old_text='s.equals("x")', new_text='"x".equals(s)')
    assert '+        return "x".equals(s) ? "y" : "z";' in draft.diff


def test_a_python_draft_that_breaks_the_indentation_is_refused(repo: Path) -> None:
    write(repo, "a.py", "def f(x):\n    if x:\n        return 1\n    return 0\n")
    f = Finding("F1", "a.py", 3, "S000", "m", tool="ruff")
    with pytest.raises(DraftError, match="would not parse"):
        make_draft(repo, f, finding_id="F1", old_text="        return 1\n", new_text="return 1\n")


def test_propose_patch_tells_the_model_why_a_draft_does_not_parse(repo: Path) -> None:
    f = java_finding(repo)
    ws = AuditWorkspace.from_report("scan_t", (), ScanReport(files=1, findings=[f]))
    box = RepairToolBox(None, SourceTools(repo), workspace=ws, mode="patch")  # type: ignore[arg-type]
    answer = box.call("propose_patch", json.dumps({"finding_id": "F1", "old_text": "    }\n}\n", "new_text": "}\n"}))
    assert answer.startswith("error: the patched src/A.java would not parse (line ")
    assert box.proposal is None
