"""Inputs a repository ships that a careless scanner reads in quadratic time: every one is judged
at once. Each command runs in a child process under a generous timeout (`run_cli`'s), which fails
the test only on a hang — these are not timed assertions; the result is what is checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autopatch_tui.core.bounded_json import JsonFileError, nesting_depth, parse
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.memory_factory import add_item

HANG = 60  # seconds; the quadratic scans took minutes to hours on these sizes

# an unclosed string of escaped quotes: each `"` began a fresh scan to the end of the file
UNCLOSED = b"{" * 9 + b'"' + b'\\"' * 1_500_000  # 3 MB


def test_an_unclosed_string_of_escaped_quotes_is_measured_in_one_pass() -> None:
    """In-process on a small input, the same answers the guard gives a valid document."""
    assert nesting_depth(b'{"a": "[[[\\"{{", "b": [[1]]}') == 3  # brackets in strings do not count
    assert nesting_depth(b'[[ "unclosed \\" [[[[') == 2  # an unclosed string swallows the rest
    with pytest.raises(JsonFileError) as caught:
        parse(b'[[ "x\\" [[[[', "f.json")
    assert caught.value.reason == "not_json"


def test_a_marks_file_with_a_long_unclosed_string_is_one_sentence(repo: Path, settings: Settings,
                                                                   run_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        add_item(mgr.store.conn(), subject="tabs", statement="Never use tabs", keywords=["indentation"])
    finally:
        mgr.close()
    (repo / ".autopatch-j" / "review_marks.json").write_bytes(UNCLOSED)
    rc, _, err = run_cli("memory", "review", timeout=HANG)
    assert rc == 1 and "review_marks.json" in err and len(err.strip().splitlines()) == 1, err
    rc, out, err = run_cli("memory", "status", json=True, timeout=HANG)
    assert rc == 0 and out["review"]["new"] == 1, err


def test_a_store_column_with_a_long_unclosed_string_is_no_value(tmp_path: Path) -> None:
    """`loads_column` (every JSON column of a store) measured in a child under the watchdog."""
    script = tmp_path / "judge.py"
    script.write_text(
        "from autopatch_tui.core.bounded_json import loads_column\n"
        "text = '[' * 17 + '\"' + '\\\\\"' * 1_500_000\n"
        "print(loads_column(text, 'none'))\n")
    proc = subprocess.run([sys.executable, "-I", str(script)], check=False, capture_output=True, text=True, timeout=HANG,
                          cwd=tmp_path)
    assert (proc.returncode, proc.stdout.strip()) == (0, "none"), proc.stderr


# --------------------------------------------------------------------------- a long dotted TOML key

LONG_KEY = "a" + ".a" * 60_000 + " = 1\n"  # tomllib: ~100 s


def test_a_pyproject_with_a_long_dotted_key_is_never_parsed(tmp_path: Path, monkeypatch) -> None:
    """The Memory Map's doubts (every turn) and `memory audit` read the manifests: such a
    pyproject.toml says nothing, and never reaches the parser; a key within the bound still does."""
    from autopatch_tui.core.claims import manifests

    parsed: list[str] = []
    real = manifests.tomllib.loads
    monkeypatch.setattr(manifests.tomllib, "loads", lambda text: parsed.append(text) or real(text))
    (tmp_path / "pyproject.toml").write_text("[project]\nrequires-python = '>=3.11'\n" + LONG_KEY)
    facts = manifests.read_facts(tmp_path)
    assert facts.python_deps is None and facts.requires_python is None and parsed == []
    (tmp_path / "pyproject.toml").write_text("[project]\nrequires-python = '>=3.11'\n" + ".".join("a" * 31) + " = 1\n")
    assert manifests.read_facts(tmp_path).requires_python == ">=3.11" and len(parsed) == 1


def test_memory_audit_with_a_long_dotted_key_in_pyproject_finishes(repo: Path, settings: Settings, run_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        add_item(mgr.store.conn(), subject="python", statement="We target Python 3.8.")
    finally:
        mgr.close()
    (repo / "pyproject.toml").write_text("[project]\nrequires-python = '>=3.11'\n" + LONG_KEY)
    rc, out, err = run_cli("memory", "audit", json=True, timeout=HANG)
    assert rc == 0 and out["stale_claims"] == [], err  # unreadable manifest: nothing can be contradicted


# --------------------------------------------------------------------------- a token's deep header

def _b64(raw: bytes) -> str:
    import base64
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


DEEP_JWT = _b64(b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}") + ".eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXNpZw"


def test_a_token_with_a_deep_header_is_redacted_not_a_crash(repo: Path, settings: Settings, invoke_cli) -> None:
    from autopatch_tui.core.secrets import find_secrets

    assert [s.kind for s in find_secrets(f"token {DEEP_JWT} end")] == ["json web token"]  # fails closed
    assert find_secrets("x " + _b64(b'{"a": [') + ".eyJzdWIiOiIxIn0.c2ln end") == []  # not JSON: not a token
    mgr = MemoryManager.open(repo, settings)
    try:
        item = add_item(mgr.store.conn(), subject="deploy", statement=f"Deploy with {DEEP_JWT} as the token.")
    finally:
        mgr.close()
    rc, out, err = invoke_cli("memory", "show", item.logical_id)
    assert rc == 0 and "Traceback" not in err and DEEP_JWT not in out, err
