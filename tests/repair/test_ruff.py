"""The Ruff adapter on the real binary: the curated default selection, the user's selection from
config.toml, `# noqa`, and the repository's own Ruff configuration (per-file ignores, excludes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.repair.analyzers import default_analyzers
from autopatch_tui.core.repair.analyzers.ruff import DEFAULT_IGNORE, DEFAULT_SELECT, RuffAnalyzer, find_ruff
from autopatch_tui.core.repair.scanner import Scanner
from autopatch_tui.core.settings import load_settings
from tests.repair.conftest import SWALLOW, write

RISKY = (
    "import hashlib\n"  # 1
    "import os\n"  # 2  unused import: not an audit finding by default (F401 ignored)
    "\n"
    "\n"
    "def digest(data, seen=[]):\n"  # 5  B006
    "    assert data\n"  # 6  S101: ignored by default
    "    try:\n"
    "        return hashlib.md5(data).hexdigest()\n"  # 8  S324
    "    except Exception:\n"  # 9  BLE001 + S110
    "        pass\n"
    "    return undefined_name\n"  # 11 F821
)


def found(repo: Path, scope: list[str] | None = None, analyzer: RuffAnalyzer | None = None) -> list[tuple]:
    report = Scanner(repo, [analyzer or RuffAnalyzer()]).scan(scope or [])
    return [(f.path, f.line, f.check_id) for f in report.findings]


def test_ruff_is_installed_with_the_package() -> None:
    assert find_ruff() is not None and Path(find_ruff()).is_file()


def test_the_default_selection_finds_security_and_bug_prone_code_and_skips_style(repo: Path) -> None:
    write(repo, "risky.py", RISKY)
    assert found(repo) == [("risky.py", 5, "B006"), ("risky.py", 8, "S324"), ("risky.py", 9, "S110"),
                           ("risky.py", 9, "BLE001"), ("risky.py", 11, "F821")]
    assert set(DEFAULT_SELECT) == {"S", "B", "BLE", "F"} and {"S101", "F401"} <= set(DEFAULT_IGNORE)


def test_noqa_silences_only_the_codes_it_names(repo: Path) -> None:
    write(repo, "a.py", "x = eval('1')  # noqa: S307\n"
                        "y = eval('2')  # noqa: B006\n"  # the wrong code: still reported
                        "z = eval('3')  # noqa\n"
                        "w = eval('4')\n")
    assert found(repo) == [("a.py", 2, "S307"), ("a.py", 4, "S307")]


def test_the_repositorys_per_file_ignores_and_excludes_apply(repo: Path) -> None:
    write(repo, "pyproject.toml", '[tool.ruff]\nextend-exclude = ["generated"]\n\n'
                                  '[tool.ruff.lint.per-file-ignores]\n"tests/*" = ["S", "B006"]\n')
    for rel in ("src/app.py", "tests/test_app.py", "generated/out.py"):
        write(repo, rel, SWALLOW + "def f(a=[]):\n    return a\n")
    assert found(repo) == [("src/app.py", 4, "S110"), ("src/app.py", 6, "B006")]
    # also when the excluded file is named on its own (Ruff's --force-exclude)
    assert found(repo, ["generated/out.py"]) == []
    assert not (repo / ".ruff_cache").exists()  # nothing written into the repository


def test_a_ruff_toml_in_a_subfolder_applies_below_it(repo: Path) -> None:
    # hierarchical configuration: the closest ruff.toml is the one for its folder
    write(repo, "legacy/ruff.toml", '[lint.per-file-ignores]\n"old.py" = ["S110"]\n')
    write(repo, "legacy/old.py", SWALLOW)
    write(repo, "legacy/other.py", SWALLOW)
    write(repo, "old.py", SWALLOW)
    assert found(repo) == [("legacy/other.py", 4, "S110"), ("old.py", 4, "S110")]


def test_the_audit_selection_wins_over_the_repositorys_global_select_and_ignore(repo: Path) -> None:
    # Ruff's rule: a command-line selection overrides the file's `select`/`ignore`; config.toml's
    # audit_ruff_select/_ignore decide what the audit checks, per-file ignores and noqa what is silenced
    write(repo, "pyproject.toml", '[tool.ruff.lint]\nselect = ["E"]\nignore = ["S110"]\n')
    write(repo, "a.py", SWALLOW)
    assert found(repo) == [("a.py", 4, "S110")]


def test_the_selection_is_adjustable_in_config_toml(repo: Path, isolated_env: Path) -> None:
    write(repo, "risky.py", RISKY)
    (isolated_env / "config.toml").write_text('audit_ruff_select = ["B", "F401"]\naudit_ruff_ignore = []\n'
                                              "audit_timeout_seconds = 30\n", encoding="utf-8")
    settings = load_settings()
    ruff = default_analyzers(settings)[0]
    assert isinstance(ruff, RuffAnalyzer) and ruff.timeout == 30
    assert found(repo, analyzer=ruff) == [("risky.py", 2, "F401"), ("risky.py", 5, "B006")]


@pytest.mark.parametrize("value", ['["S 1"]', '["s"]', '["B006; rm -rf /"]', '"S"'])
def test_a_bad_rule_code_in_config_toml_is_refused(isolated_env: Path, value: str) -> None:
    (isolated_env / "config.toml").write_text(f"audit_ruff_select = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="audit_ruff_select"):
        load_settings()
