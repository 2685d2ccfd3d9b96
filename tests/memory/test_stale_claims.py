"""Still true? (issue 31, deliverable 4; contracts §8 `stale_claims`, §10): each active decision and
preference is checked against the repository where its claim can be checked deterministically — a
path it names, a package manager by lock file, a tool by manifest, a runtime version — and nothing
is guessed: a negated, ambiguous or unparseable claim, or a repository without the evidence, is
not checked. Manifests are read through the confine check, bounded, with no DTD."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autopatch_tui.core.claims.check import (
    item_claims,
    satisfies_node_range,
    satisfies_pep440,
)
from autopatch_tui.core.claims.manifests import (
    MAX_MANIFEST_BYTES,
    read_facts,
    repo_facts,
)
from tests.support.recall_seed import seed_item

PACKAGE_JSON = {"name": "web", "devDependencies": {"vitest": "^1.6.0", "eslint": "^9.0.0"},
                "engines": {"node": ">=18"}}
PYPROJECT = """
[project]
name = "svc"
requires-python = ">=3.11"
dependencies = ["requests>=2"]
[project.optional-dependencies]
test = ["pytest-cov"]
[tool.ruff]
line-length = 100
"""
POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
<properties><maven.compiler.release>17</maven.compiler.release></properties>
<dependencies><dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId></dependency>
</dependencies></project>"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    (tmp_path / "package.json").write_text(json.dumps(PACKAGE_JSON))
    (tmp_path / "package-lock.json").write_text("{}")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "pom.xml").write_text(POM)
    (tmp_path / "go.mod").write_text("module example.com/svc\n\ngo 1.22\n")
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "app" / "main.py").write_text("")
    return tmp_path


def claims(proj: Path, text: str, applies: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return item_claims(text, read_facts(proj), proj, applies)


@pytest.mark.parametrize(("text", "expected"), [
    ("Always use pnpm for installs.",
     [("pnpm (javascript package manager)", "package-lock.json exists, no pnpm-lock.yaml")]),
    ("Use pnpm instead of npm.", [("pnpm (javascript package manager)", "package-lock.json exists, no pnpm-lock.yaml")]),
    ("We switched from npm to yarn.", [("yarn (javascript package manager)", "package-lock.json exists, no yarn.lock")]),
    ("Tests run with jest.", [("jest (javascript test runner)", "package.json declares vitest, not jest")]),
    ("Lint Python with flake8.", [("flake8 (python linter)", "pyproject.toml declares ruff, not flake8")]),
    ("Keep supporting Python 3.8.", [("Python 3.8", 'pyproject.toml requires-python is ">=3.11"')]),
    ("Target Node 16 in CI.", [("Node 16", 'package.json engines.node is ">=18"')]),
    ("Build with Java 11.", [("Java 11", "pom.xml maven.compiler.release is 17")]),
    ("Go 1.21 is the minimum.", [("Go 1.21", "go.mod says go 1.22")]),
    ("Keep helpers in src/old/util.py.", [("path src/old/util.py", "no src/old/util.py in the repository")]),
    ("Put the docs in docs/", [("path docs/", "no docs/ in the repository")]),
])
def test_a_contradicted_claim_is_found_with_its_evidence(proj: Path, text: str, expected: list) -> None:
    assert claims(proj, text) == expected


@pytest.mark.parametrize("text", [
    "We use npm.",  # agrees
    "Never use pnpm here.",  # negated: not an affirmed claim
    "Don't use yarn; stick to the lock file.",
    "Use vitest, not jest.",
    "Lint with ruff.", "Tests use pytest.",  # pytest-cov declares pytest
    "Format with black.",  # no competing formatter declared: not checkable
    "Python 3.12 is fine.", "Node 20 is what we run.", "Java 17 everywhere.", "Go 1.23 locally is fine.",
    "Keep helpers in src/app/main.py.", "Put code under src/",
    "Don't recreate src/old/util.py.", "The old code lived in lib/legacy.py",  # removal or past: not checked
    "Use and/or with care; CI/CD is fine; read/write paths.",
    "See github.com/org/repo/blob/main/x.go and @types/node and https://example.com/a/b.html",
    "Globs like tests/**/*.py are fine", "uv for everything",  # no Python lock at all: no evidence either way
    "Choose pnpm or yarn later",  # two affirmed managers: ambiguous
    "Prefer small functions and clear names.",
])
def test_what_cannot_be_checked_or_agrees_is_not_reported(proj: Path, text: str) -> None:
    assert claims(proj, text) == []


def test_a_path_is_also_found_from_an_applies_to_path(proj: Path) -> None:
    assert claims(proj, "Entry point is app/main.py.") == [("path app/main.py", "no app/main.py in the repository")]
    assert claims(proj, "Entry point is app/main.py.", ("src",)) == []


def test_package_manager_field_contradicts_the_claimed_manager(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"packageManager": "yarn@4.1.0"}))
    assert item_claims("Use pnpm.", read_facts(tmp_path), tmp_path) == [
        ("pnpm (javascript package manager)", 'package.json says "packageManager": yarn')]


def test_without_manifests_nothing_is_checked(tmp_path: Path) -> None:
    for text in ("Always use pnpm.", "Tests run with jest.", "Python 3.8", "Java 11", "Go 1.10"):
        assert item_claims(text, read_facts(tmp_path), tmp_path) == []


def test_version_specifiers() -> None:
    assert satisfies_pep440((3, 8), ">=3.9,<4") is False and satisfies_pep440((3, 12), ">=3.9,<4") is True
    assert satisfies_pep440((3, 12), "~=3.11") is True and satisfies_pep440((3, 10), "~=3.11") is False
    assert satisfies_pep440((3, 11), "^3.11") is True and satisfies_pep440((3, 11), "==3.11.*") is True
    assert satisfies_pep440((3, 11), "!=3.11.*") is False and satisfies_pep440((3, 11), ">=3.11 || bad") is None
    assert satisfies_node_range(16, ">=18") is False and satisfies_node_range(20, "^18 || ^20") is True
    assert satisfies_node_range(21, ">=18 <21") is False and satisfies_node_range(18, "18.x") is True
    assert satisfies_node_range(18, "lts/*") is None


# --------------------------------------------------------------------------- bounded, confined reads


def test_a_manifest_linked_from_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "package.json").write_text(json.dumps({"devDependencies": {"vitest": "1"}}))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "package.json").symlink_to(outside / "package.json")
    facts = read_facts(repo)
    assert facts.js_deps is None and "package.json" not in facts.present
    (repo / "pnpm-lock.yaml").symlink_to(outside / "package.json")  # a lock linked from outside is no evidence
    assert "pnpm-lock.yaml" not in read_facts(repo).present


def test_a_pom_with_a_dtd_or_entities_is_not_parsed(tmp_path: Path) -> None:
    (tmp_path / "pom.xml").write_text('<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
                                      "<project><properties><maven.compiler.release>&b;</maven.compiler.release>"
                                      "</properties></project>")
    facts = read_facts(tmp_path)
    assert facts.java_release is None and facts.java_deps is None


def test_an_oversized_or_broken_manifest_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"devDependencies": {"vitest": "1"}, "pad": "'
                                           + "x" * MAX_MANIFEST_BYTES + '"}')
    (tmp_path / "pyproject.toml").write_text("[project\nrequires-python = '>=3.11'")
    facts = read_facts(tmp_path)
    assert facts.js_deps is None and facts.python_deps is None and facts.requires_python is None


def test_a_fifo_named_like_a_manifest_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "package.json")
    assert read_facts(tmp_path).js_deps is None  # returns at once: a FIFO is not a regular file


def test_the_facts_are_cached_until_a_manifest_changes(proj: Path) -> None:
    first = repo_facts(proj)
    assert repo_facts(proj) is first
    (proj / "pnpm-lock.yaml").write_text("lockfileVersion: 9\n")
    second = repo_facts(proj)
    assert second is not first and "pnpm-lock.yaml" in second.present


# --------------------------------------------------------------------------- the audit


def test_memory_audit_reports_stale_claims_of_decisions_and_preferences_only(repo: Path, manager, invoke_cli) -> None:
    (repo / "package-lock.json").write_text("{}")
    conn = manager.store.conn()
    pnpm = seed_item(conn, subject="package manager", statement="Always use pnpm for installs.").logical_id
    seed_item(conn, subject="npm scripts", statement="Use npm scripts for builds.")
    seed_item(conn, kind="discussion_context", subject="pnpm idea", statement="We discussed pnpm for installs.",
              thread_id=conn.execute("SELECT id FROM threads").fetchone()[0])
    rc, doc, err = invoke_cli("memory", "audit", json=True)
    assert rc == 0, err
    assert doc["stale_claims"] == [{"id": pnpm, "claim": "pnpm (javascript package manager)",
                                    "evidence": "package-lock.json exists, no pnpm-lock.yaml"}]
    rc, out, err = invoke_cli("memory", "audit", json=False)
    assert rc == 0 and f"disagrees: {pnpm} — says pnpm (javascript package manager); package-lock.json exists" in out
    assert "1 claim(s) the repository disagrees with" in out


def test_stale_claims_page_like_every_audit_section(repo: Path, manager, invoke_cli) -> None:
    (repo / "package-lock.json").write_text("{}")
    conn = manager.store.conn()
    ids = sorted(seed_item(conn, subject=f"installs {n}", statement=f"Always use {tool} for installs.").logical_id
                 for n, tool in enumerate(("pnpm", "yarn")))
    rc, first, err = invoke_cli("memory", "audit", "--limit", "1", json=True)
    assert rc == 0, err
    assert [c["id"] for c in first["stale_claims"]] == ids[:1] and first["next"]
    rc, second, err = invoke_cli("memory", "audit", "--limit", "1", "--after", first["next"], json=True)
    assert rc == 0, err
    assert [c["id"] for c in second["stale_claims"]] == ids[1:] and second["next"] is None
