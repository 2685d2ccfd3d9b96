"""The gate's word lists and alternations have one entry per written entry (issue 29, deliverable 1).

Python joins adjacent string literals silently: a list entry or a regex alternative broken over two
lines without its separator becomes one entry ("repo " "branch" -> the alternative "repo branch",
so "just for this branch" no longer matched). These tests read the gate modules' tokens: every
implicit concatenation must join at a boundary the reader can see — a regex piece at an alternation
or a group (`|`, `(`, `(?:`, `)`), a whitespace word list (`"... ".split()`) at a space — and an
entry of a tuple/list/set of words is one literal. A word list names each word once."""

from __future__ import annotations

import ast
import io
import tokenize
from collections import Counter
from pathlib import Path

import pytest

PIPELINE = Path(__file__).resolve().parents[2] / "autopatch_tui" / "core" / "pipeline"
GATE_MODULES = ("lexicon", "carry", "clauses", "markers", "reading", "semantic_gate", "extraction_rules")


def _runs(source: str) -> list[list[tokenize.TokenInfo]]:
    """Maximal runs of adjacent plain string tokens (comments and line breaks between them allowed)."""
    skip = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}
    runs: list[list[tokenize.TokenInfo]] = []
    current: list[tokenize.TokenInfo] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in skip and tok.type != tokenize.NEWLINE:
            continue
        if tok.type == tokenize.STRING:
            current.append(tok)
            continue
        if len(current) > 1:
            runs.append(current)
        current = []
    return runs


def _contexts(tree: ast.AST) -> dict[tuple[int, int], str]:
    """(line, column) of every string constant -> "split" (a whitespace word list), "element" (an
    entry of a tuple/list/set literal) or "other"."""
    out: dict[tuple[int, int], str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "split" and isinstance(node.value, ast.Constant):
            out[(node.value.lineno, node.value.col_offset)] = "split"
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for elt in node.elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    out.setdefault((elt.lineno, elt.col_offset), "element")
    return out


def _joins(module: str) -> list[tuple[int, str, str, str]]:
    """(line, context, left piece, right piece) of every implicit concatenation in `module`."""
    source = (PIPELINE / f"{module}.py").read_text(encoding="utf-8")
    contexts = _contexts(ast.parse(source))
    out = []
    for run in _runs(source):
        context = contexts.get(run[0].start, "other")
        pieces = [ast.literal_eval(t.string) for t in run]
        for tok, left, right in zip(run, pieces, pieces[1:]):
            out.append((tok.start[0], context, left, right))
    return out


def _bad_join(context: str, left: str, right: str) -> bool:
    if context == "split":
        return not (left[-1:].isspace() or right[:1].isspace())
    if context == "element" and "|" not in left + right:
        return True  # ("always", "never" "from now on"): one entry made of two
    return not (left.endswith(("|", "(", ")", "(?:")) or right.startswith(("|", ")", "(")))


@pytest.mark.parametrize("module", GATE_MODULES)
def test_every_implicit_concatenation_joins_at_a_visible_boundary(module):
    bad = [f"{module}.py:{line}: {left[-20:]!r} {right[:20]!r}" for line, context, left, right in _joins(module)
           if _bad_join(context, left, right)]
    assert bad == []


def test_the_check_sees_the_defect_it_guards():
    assert _bad_join("other", r"folder|dir|repo ", r"branch|hotfix")  # the round-three defect
    assert _bad_join("element", "never", "from now on")
    assert _bad_join("split", "already", "automatically")
    assert not _bad_join("other", r"folder|dir|", r"branch|hotfix")
    assert not _bad_join("split", "already ", "automatically")
    src = 'X = ("a", "b" "c")\nY = "a b ""c".split()\nZ = r"x|y " r"z"\n'
    tree = ast.parse(src)
    ctx = _contexts(tree)
    assert {ctx[(1, 10)], ctx[(2, 4)]} == {"element", "split"}
    assert [len(r) for r in _runs(src)] == [2, 2, 2]


@pytest.mark.parametrize("module", GATE_MODULES)
def test_a_word_list_names_each_word_once(module):
    source = (PIPELINE / f"{module}.py").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "split" and isinstance(node.value, ast.Constant):
            twice = [w for w, n in Counter(str(node.value.value).split()).items() if n > 1]
            assert twice == [], f"{module}.py:{node.lineno}"
