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
from autopatch_tui.core.memory import audit
from autopatch_tui.core.memory.audit import PairBudget, _Item, conflicts, run_audit, scopes_overlap
from autopatch_tui.core.memory.audit_text import clauses, signature
from autopatch_tui.core.recall.paths import normalize_path, path_covers
from autopatch_tui.core.recall.terms import normalize_phrase
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
    # a removal verb at the head of a clause forbids its object: agreeing rules (review v21 #3)
    ("No commented-out code", "Delete commented-out code during review", False),
    ("Don't use wildcard imports", "Get rid of wildcard imports in old modules", False),
    ("Avoid hard-coded credentials", "Scrub hard-coded credentials from the examples", False),
    ("Never use assert for validation", "Replace assert statements for validation with explicit checks", False),
    ("不要使用全局变量", "删除模块里的全局变量", False),
    ("不要用制表符", "把制表符替换为空格", False),
    ("不要用制表符", "用空格替换制表符", False),
    # … and still contradicts what requires it; a negation in front turns the removal back
    ("Keep a trailing newline at the end of files", "Strip the trailing newline from files", True),
    ("Swap unittest for pytest", "Write new tests with unittest", True),
    ("Never remove the license header", "Remove license headers", True),
    ("使用制表符缩进", "把制表符替换为空格", True),
    ("Migrate from setup.py to pyproject.toml", "Declare the version in setup.py", True),
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
    # digits and single letters are part of what a rule says (review v21 #3)
    ("upload retries", "Retry failed uploads 3 times"),
    ("download retries", "Retry failed uploads 5 times"),
    ("loop variable", "Name the loop variable i"),  # "i" is a stopword: it says nothing here either
    ("index variable", "Name the loop variable j"),
    ("engine language", "Write the engine in C"),
    ("stats language", "Write the engine in R"),
    ("重试次数", "失败的上传重试3次"),
    ("重试上限", "失败的上传重试5次"),
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


def test_removal_and_replacement_verbs_turn_a_clause_over() -> None:
    assert signature("Remove unused imports") == signature("No unused imports")
    assert signature("Never remove the changelog entry") == signature("Keep the changelog entry")
    assert signature("Replace os.path with pathlib") == signature("Use pathlib instead of os.path")[::-1]
    assert signature("Run the linter before you delete a module")[0][0] is False  # not at the clause's head
    assert signature("Pin numpy to 1") != signature("Pin numpy to 2")


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
    # `..` is resolved before anything is looked up: what leaves the repository is stale even when
    # the place it names exists (review v21 #7); what comes back inside is what it names there
    (repo.parent / "outside.txt").write_text("not the repository's\n")
    out = ("src/../../outside.txt", "src/net/../../../outside.txt", "docs/../../*.txt", "..")
    leaving = _add(manager, "leaving", "Out.", paths=out)
    back = _add(manager, "coming back", "In.", paths=("docs/../src/net/client.py", "tools/../src/**/*.py"))
    report = manager.audit()
    found = {s.id: s.paths for s in report.stale_paths}
    assert ok not in found and back not in found
    assert found[stale] == ["lib", "src/old.py", "**/*.java", "docs/*.md", "../x"]
    assert found[mixed] == ["tools"]
    assert found[leaving] == list(out)


def test_the_audit_is_deterministic_and_writes_nothing(manager: MemoryManager, repo: Path) -> None:
    for n, (subject, statement) in enumerate(DISTINCT + [("tabs rule", "Never use tabs"), ("tab usage", "Use tabs")]):
        _add(manager, subject, statement, paths=("lib",) if n % 5 == 0 else ())
    version = manager.store.conn().execute("SELECT data_version FROM memory_meta").fetchone()[0]
    first = json.dumps(manager.audit().as_json())
    assert json.dumps(run_audit(manager.store.conn(), repo).as_json()) == first
    assert manager.store.conn().execute("SELECT data_version FROM memory_meta").fetchone()[0] == version
    assert not manager.paths.review_marks.exists()


# --------------------------------------------------------------------------- cost (review v21 #4)

def _decision(n: int, subject: str, statement: str, paths: tuple[str, ...]) -> _Item:
    return _Item(f"mem-{n:05d}", "project_decision", "project", normalize_phrase(subject), paths, clauses(statement))


def _old_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The overlap rule as docs/memory.md states it, by recall's path coverage (a reference)."""
    def entries(x: str, y: str) -> bool:
        x, y = normalize_path(x), normalize_path(y)
        if x in ("", "*", "**") or y in ("", "*", "**") or path_covers(x, y) or path_covers(y, x):
            return True
        px, py = audit._entry_prefix(x), audit._entry_prefix(y)
        if px == x and py == y:
            return False
        return (path_covers(px, py) or path_covers(py, px)) if px and py else True
    return not a or not b or any(entries(x, y) for x in a for y in b)


ENTRIES = ["src", "src/net", "src/net/client.py", "srcx", "tests", "docs/*.md", "src/*.py", "src/**", "**/*.py",
           "*.py", "src/net/*.py", "lib/a?.py", "lib", "", "*", "src/app/**/x.py", "tests/unit", "tools/*"]


def test_scope_overlap_by_literal_folders_equals_the_rule_by_path_coverage() -> None:
    rng = random.Random(4)
    for _ in range(3000):
        a = tuple(rng.sample(ENTRIES, rng.randint(0, 2)))
        b = tuple(rng.sample(ENTRIES, rng.randint(0, 2)))
        assert scopes_overlap(a, b) is _old_overlap(a, b), (a, b)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_subject_conflicts_equal_every_pair_checked(seed: int) -> None:
    """The subject pass pairs only items whose scopes can overlap; it finds exactly what comparing
    every two items finds."""
    rng = random.Random(seed)
    items = [_decision(n, rng.choice(["naming", "layout", "logging"]), rng.choice(["Use A.", "Use B.", "Use C."]),
                       tuple(rng.sample(ENTRIES, rng.randint(0, 2)))) for n in range(120)]
    expected = set()
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            if a.subject == b.subject and a.signature != b.signature and _old_overlap(a.paths, b.paths):
                expected.add(frozenset((a.id, b.id)))
    found = {frozenset(f.ids) for f in conflicts(items) if "two different decisions" in f.why}
    assert found == expected and expected


def test_decisions_on_one_subject_for_disjoint_scopes_cost_no_pairs() -> None:
    """A thousand decisions on "naming", each for its own package: no two scopes overlap, so no
    pair is compared (all-pairs compared ~500,000)."""
    items = [_decision(n, "naming", f"Name modules in pkg{n} variant {n}.", (f"pkg{n}/*.py",)) for n in range(1000)]
    items.append(_decision(1000, "naming", "Name modules in pkg7 in snake case.", ("pkg7/sub",)))
    budget = PairBudget()
    found = conflicts(items, budget)
    assert [f.ids for f in found] == [["mem-00007", "mem-01000"]]  # the one overlapping pair
    assert audit.MAX_PAIR_CHECKS - budget.left < 2000 and not budget.spent_out


def test_a_store_with_more_candidate_pairs_than_the_cap_says_so(manager: MemoryManager, monkeypatch) -> None:
    for n in range(12):  # 66 pairs of different decisions on one subject, all anywhere (`*.extN`)
        _add(manager, "release day", f"Release on day {n}", kind="project_decision", paths=(f"*.ext{n}",))
    assert manager.audit().truncated is False and "truncated" not in manager.audit().as_json()
    monkeypatch.setattr(audit, "MAX_PAIR_CHECKS", 20)
    report = manager.audit()
    assert report.truncated is True and len(report.conflicts) <= 20
    assert report.as_json()["truncated"] is True
