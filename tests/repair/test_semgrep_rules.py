"""The rule pack we ship: every rule has a positive (`ruleid:`) and a negative (`ok:`) case in
tests/repair/semgrep_rules/, and Semgrep's own test mode (`semgrep --test`, run once) finds exactly
the annotated lines — no more, no fewer."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from autopatch_tui.core.repair.analyzers.base import tool_env
from autopatch_tui.core.repair.analyzers.semgrep import RULES_DIR, find_semgrep, rule_ids

FIXTURES = Path(__file__).parent / "semgrep_rules"
ANNOTATION = re.compile(r"//\s*(ruleid|ok):\s*([A-Za-z0-9_.-]+)")


def annotations() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for f in FIXTURES.iterdir():
        for kind, rule in ANNOTATION.findall(f.read_text(encoding="utf-8")):
            found.setdefault(rule, set()).add(kind)
    return found


def test_every_rule_has_a_positive_and_a_negative_fixture() -> None:
    marked = annotations()
    assert set(marked) == set(rule_ids())  # no rule without cases, no case of an unknown rule
    assert {rule for rule, kinds in marked.items() if kinds != {"ruleid", "ok"}} == set()
    for f in RULES_DIR.glob("*.yml"):  # semgrep --test pairs java.yml with java.*
        assert list(FIXTURES.glob(f.stem + ".*")), f.name


@pytest.fixture(scope="module")
def semgrep_test() -> dict:
    binary = find_semgrep()
    assert binary is not None
    done = subprocess.run([binary, "scan", "--test", "--json", "--metrics=off", "--disable-version-check",
                           "--config", str(RULES_DIR), str(FIXTURES)], capture_output=True, text=True, timeout=240,
                          env=tool_env({"SEMGREP_SEND_METRICS": "off"}))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_semgrep_finds_exactly_the_annotated_lines(semgrep_test: dict) -> None:
    assert semgrep_test["config_missing_tests"] == [] and semgrep_test["config_with_errors"] == []
    checks = {rule: check for result in semgrep_test["results"].values() for rule, check in result["checks"].items()}
    assert set(checks) == set(rule_ids())
    failed = {rule: check["matches"] for rule, check in checks.items() if not check["passed"] or check["errors"]}
    assert failed == {}
    for rule, check in checks.items():  # every rule really fired somewhere (a rule that matches nothing passes too)
        assert any(m["reported_lines"] for m in check["matches"].values()), rule
