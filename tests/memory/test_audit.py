"""`memory audit` (contracts §8): duplicates, conflicts and stale paths, deterministic and without a
model. Adversarial cases for each rule: negation, "use X" / "never use X", a narrower prohibition,
a contrast ("X instead of Y"), reversed preferences, scopes that do and do not overlap, Chinese; and
a corpus of distinct subjects with look-alike statements that must give no duplicate at all."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.audit import run_audit, scopes_overlap
from autopatch_tui.core.memory.audit_text import signature
from tests.support.memory_factory import add_item


def _add(manager: MemoryManager, subject: str, statement: str, *, kind: str = "user_preference",
         paths: tuple[str, ...] = ()) -> str:
    return add_item(manager.store.conn(), kind=kind, subject=subject, statement=statement,
                    applies_to_paths=paths).logical_id


def _pairs(findings) -> set[frozenset[str]]:
    return {frozenset(f.ids) for f in findings}


CONFLICTS = [  # (A, B, conflict?) — both project-wide unless scoped below
    ("Never use tabs", "Use tabs for indentation", True),
    ("Use requests for HTTP calls", "Never use requests", True),
    ("Do not use print", "Use print for progress output", True),
    ("Use spaces, not tabs", "Indent with tabs", True),
    ("Prefer pathlib over os.path", "Prefer os.path over pathlib", True),
    ("不要使用制表符", "使用制表符缩进", True),
    ("Use uv instead of pip", "Install packages with pip", True),
    ("Don't mix tabs and spaces", "Use tabs", False),  # a narrower prohibition is no contradiction
    ("Use ast.literal_eval instead of eval", "Never use eval", False),  # both forbid eval
    ("Do not use print in library code", "Put library code in src", False),
    ("Never commit secrets", "Commit the lock file", False),
    ("Always write docstrings", "Write tests first", False),
]


@pytest.mark.parametrize(("a", "b", "expected"), CONFLICTS)
def test_one_forbids_what_the_other_requires(manager: MemoryManager, a: str, b: str, expected: bool) -> None:
    ia, ib = _add(manager, "first subject", a), _add(manager, "second subject", b)
    report = manager.audit()
    assert (frozenset((ia, ib)) in _pairs(report.conflicts)) is expected, report.conflicts
    assert report.duplicates == []


@pytest.mark.parametrize(("pa", "pb", "overlap"), [
    (("Makefile",), ("src",), False),
    ((), ("src",), True),
    (("src",), ("src/app.py",), True),
    (("src/*.py",), ("tests",), False),
    (("src/**/*.py",), ("src/net",), True),
    (("**/*.py",), ("docs",), True),
    (("srcx",), ("src",), False),
])
def test_conflicts_need_overlapping_scopes(manager: MemoryManager, pa, pb, overlap: bool) -> None:
    assert scopes_overlap(pa, pb) is overlap and scopes_overlap(pb, pa) is overlap
    ia = _add(manager, "tabs in one place", "Use tabs", paths=pa)
    ib = _add(manager, "tabs in another place", "Never use tabs", paths=pb)
    assert (frozenset((ia, ib)) in _pairs(manager.audit().conflicts)) is overlap


def test_two_decisions_on_one_subject_conflict_only_where_their_scopes_overlap(manager: MemoryManager) -> None:
    a = _add(manager, "Python version", "Target Python 3.11", kind="project_decision")
    b = _add(manager, "python  version", "Target Python 3.12", kind="project_decision", paths=("src",))
    c = _add(manager, "Python-Version", "Target Python 3.10", kind="project_decision", paths=("tools",))
    d = _add(manager, "python version", "Target Python 3.9", kind="project_decision", paths=("legacy",))
    report = manager.audit()
    conflicts = _pairs(report.conflicts)
    assert frozenset((a, b)) in conflicts and frozenset((a, c)) in conflicts and frozenset((a, d)) in conflicts
    assert frozenset((b, c)) not in conflicts and frozenset((c, d)) not in conflicts  # disjoint scopes
    assert _pairs(report.duplicates) == {frozenset((a, b, c, d))}  # equal subjects, whatever the scope
    assert "python version" in report.duplicates[0].why


def test_discussions_are_never_conflicts_and_duplicate_only_within_their_thread(manager: MemoryManager) -> None:
    a = _add(manager, "retries", "Never retry", kind="discussion_context")
    b = _add(manager, "retries", "Retry three times", kind="project_decision")
    report = manager.audit()
    assert report.conflicts == [] and report.duplicates == []
    manager.new_thread()
    c = _add(manager, "retries", "Retry with backoff", kind="discussion_context")
    assert frozenset((a, c)) not in _pairs(manager.audit().duplicates)
    del b


def test_statements_that_say_the_same_thing_are_duplicates(manager: MemoryManager) -> None:
    a = _add(manager, "type hints", "Always use type hints.")
    b = _add(manager, "annotations", "Use type hints, always")
    c = _add(manager, "no type hints", "Never use type hints")  # the opposite, not the same
    report = manager.audit()
    assert _pairs(report.duplicates) == {frozenset((a, b))}
    assert report.duplicates[0].why == "statements that say the same thing"
    assert frozenset((a, c)) in _pairs(report.conflicts)


DISTINCT = [
    ("test runner", "Run the tests with pytest"),
    ("test layout", "Put tests under tests/ next to the package"),
    ("formatter", "Format Python code with Black"),
    ("import sorting", "Sort imports with isort"),
    ("line length", "Keep lines under 100 characters"),
    ("docstring style", "Write docstrings in Google style"),
    ("type hints", "Add type hints to public functions"),
    ("private helpers", "Skip docstrings for private helpers"),
    ("logging", "Use logging instead of print"),
    ("error handling", "Raise typed exceptions, never a bare except"),
    ("commit messages", "Write commit messages in the imperative mood"),
    ("branch names", "Name branches after the issue number"),
    ("dependency pins", "Pin dependencies in the lock file"),
    ("python version", "Target Python 3.11"),
    ("java version", "Target Java 21"),
    ("indentation", "Indent with four spaces"),
    ("makefile indentation", "Indent Makefile recipes with tabs"),
    ("retries", "Retry network calls three times"),
    ("timeouts", "Time out network calls after ten seconds"),
    ("config format", "Store configuration in TOML"),
    ("config location", "Keep configuration in the user's config folder"),
    ("preferred http client", "Prefer httpx over requests"),
    ("legacy http client", "Prefer requests over urllib"),
    ("缩进", "使用四个空格缩进"),
    ("提交信息", "提交信息使用英文"),
    ("tests for bugs", "Add a test for every bug fix"),
    ("tests for features", "Add a test for every new feature"),
]


def test_no_false_duplicate_among_distinct_subjects(manager: MemoryManager) -> None:
    rng = random.Random(3)
    corpus = DISTINCT[:]
    rng.shuffle(corpus)
    for subject, statement in corpus:
        _add(manager, subject, statement)
    report = manager.audit()
    assert report.checked == len(DISTINCT)
    assert report.duplicates == []


def test_signature_keeps_word_order_and_polarity() -> None:
    assert signature("Prefer pathlib over os.path") != signature("Prefer os.path over pathlib")
    assert signature("Use tabs") != signature("Never use tabs")
    assert signature("Always use type hints.") == signature("use TYPE hints, always")


def test_stale_paths_are_entries_that_match_nothing_now(manager: MemoryManager, repo: Path) -> None:
    (repo / "src" / "net").mkdir(parents=True)
    (repo / "src" / "net" / "client.py").write_text("x = 1\n")
    (repo / "docs").mkdir()
    ok = _add(manager, "scoped ok", "Fine.", paths=("src", "src/net/client.py", "**/*.py", "src/*", "", "*"))
    stale = _add(manager, "scoped stale", "Gone.", paths=("lib", "src/old.py", "**/*.java", "docs/*.md", "../x"))
    mixed = _add(manager, "mixed", "Half.", paths=("src/net", "tools"))
    report = manager.audit()
    found = {s.id: s.paths for s in report.stale_paths}
    assert ok not in found
    assert found[stale] == ["lib", "src/old.py", "**/*.java", "docs/*.md", "../x"]
    assert found[mixed] == ["tools"]


def test_the_audit_is_deterministic_and_writes_nothing(manager: MemoryManager, repo: Path) -> None:
    for n, (subject, statement) in enumerate(DISTINCT + [("tabs rule", "Never use tabs"), ("tab usage", "Use tabs")]):
        _add(manager, subject, statement, paths=("lib",) if n % 5 == 0 else ())
    version = manager.store.conn().execute("SELECT data_version FROM memory_meta").fetchone()[0]
    first = json.dumps(manager.audit().as_json())
    assert json.dumps(run_audit(manager.store.conn(), repo).as_json()) == first
    assert manager.store.conn().execute("SELECT data_version FROM memory_meta").fetchone()[0] == version
    assert not manager.paths.review_marks.exists()
