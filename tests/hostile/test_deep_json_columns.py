"""A store a repository ships may hold JSON columns SQLite calls valid (`json_valid` accepts 1000
levels) that Python's recursive parser cannot read: every command that decodes them reads such a
value as no value (`bounded_json.loads_column`), never a `RecursionError`."""

from __future__ import annotations

from pathlib import Path

import pytest

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from tests.support.fixtures import raw_connect
from tests.support.memory_factory import add_item

DEEP = "[" * 990 + "]" * 990


@pytest.fixture
def deep_store(repo: Path, settings: Settings) -> tuple[str, str]:
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        deep = add_item(conn, subject="deep paths", statement="Deep paths here.", keywords=["deepword"]).logical_id
        plain = add_item(conn, subject="plain rule", statement="A plain rule.", keywords=["deepword"],
                         applies_to_paths=["src/**"]).logical_id
        db = mgr.paths.db
    finally:
        mgr.close()
    conn = raw_connect(db)
    try:
        assert conn.execute("SELECT json_valid(?)", (DEEP,)).fetchone()[0] == 1
        conn.execute("UPDATE memory_items SET applies_to_paths = ?, aliases = ?, keywords = ? WHERE logical_id = ?",
                     (DEEP, DEEP, DEEP, deep))
        conn.execute("UPDATE turns SET scope_paths = ?", ("[" + DEEP + "]",))
    finally:
        conn.close()
    return deep, plain


@pytest.mark.parametrize("command", [("memory", "list"), ("memory", "search", "deepword"), ("memory", "audit"),
                                     ("memory", "review"), ("memory", "export"), ("memory", "status")])
def test_every_command_reads_a_store_with_deep_json_columns(command, deep_store, invoke_cli) -> None:
    deep, plain = deep_store
    rc, out, err = invoke_cli(*command, json=True)
    assert rc == 0, err
    assert "RecursionError" not in err and "unexpected error" not in err


def test_the_deep_item_is_listed_without_paths(deep_store, invoke_cli) -> None:
    deep, plain = deep_store
    rc, out, _ = invoke_cli("memory", "list", json=True)
    by_id = {i["id"]: i for i in out["items"]}
    assert by_id[deep]["applies_to_paths"] == [] and by_id[plain]["applies_to_paths"] == ["src/**"]


def test_loads_column_bounds_depth_and_keeps_ordinary_values() -> None:
    assert loads_column('["a", {"b": [1]}]') == ["a", {"b": [1]}]
    assert loads_column('["[[[[[[[[[[[[[[[[[[[["]') == ["[" * 20]
    assert loads_column(DEEP, None) is None and loads_column("{bad", []) == [] and loads_column(None, 0) == 0
    with pytest.raises(ValueError):
        loads_column(DEEP)
