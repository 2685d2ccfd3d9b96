"""`memory status`, `list` and `search` where no store exists never create one (issue 30 item 12):
they say "No Memory here yet", in a git repository (its root or a subfolder) or outside one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores.service import StoreService
from tests.support.fixtures import make_git_repo
from tests.support.store_helpers import add_item, add_turns, name_of

READS = (("memory", "status"), ("memory", "list"), ("memory", "search", "tabs"))


def _created(base: Path) -> list[Path]:
    return sorted(p for p in base.rglob(".autopatch-j"))


@pytest.mark.parametrize("where", ["git-root", "git-subfolder", "plain-folder"])
def test_reads_in_a_folder_without_a_store_create_nothing(where: str, tmp_path: Path, invoke_cli) -> None:
    base = tmp_path / "w"
    if where == "plain-folder":
        cwd = base / "notes"
        cwd.mkdir(parents=True)
        top = cwd
    else:
        top = make_git_repo(base / "proj")
        cwd = top / "src" / "pkg" if where == "git-subfolder" else top
        cwd.mkdir(parents=True, exist_ok=True)
    for args in READS:
        rc, out, err = invoke_cli(*args, cwd=cwd)
        assert rc == 0, (args, err)
        assert out.startswith("No Memory here yet:") and str(top / ".autopatch-j" / "memory.db") in out, (args, out)
        rc, doc, err = invoke_cli(*args, json=True, cwd=cwd)
        assert rc == 0 and err == "", (args, err)
        if args[1] == "status":
            assert doc["state"] == "healthy" and doc["schema_version"] == 0 and doc["active_thread_id"] is None
            assert doc["turns"] == doc["active_items"] == doc["threads"] == 0
            assert doc["db_path"] == str(top / ".autopatch-j" / "memory.db")
        else:
            assert doc == ({"items": [], "next": None} if args[1] == "list" else {"results": [], "next": None}), (
                args, doc)
    assert _created(tmp_path) == []


def test_a_store_here_is_read_as_before(repo: Path, settings: Settings, invoke_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    add_turns(mgr, 1)
    add_item(mgr, subject="indentation", statement="Indent with tabs.", keywords=["tabs"])
    mgr.close()
    rc, doc, err = invoke_cli("memory", "list", json=True, cwd=repo / ".")
    assert rc == 0 and [i["statement"] for i in doc["items"]] == ["Indent with tabs."], err
    rc, doc, err = invoke_cli("memory", "status", json=True)
    assert doc["schema_version"] == 4 and doc["turns"] == 1


def test_a_checkout_merged_away_still_reads_its_holder(tmp_path: Path, settings: Settings, invoke_cli) -> None:
    """No memory.db here, but the registry says this checkout's store was merged into another:
    the read follows the alias (it is not "no Memory here")."""
    a = make_git_repo(tmp_path / "a")
    b = make_git_repo(tmp_path / "b")
    for where, statement in ((a, "Indent with tabs."), (b, "Wrap at 100 columns.")):
        mgr = MemoryManager.open(where, settings)
        add_turns(mgr, 1)
        add_item(mgr, subject=statement[:12], statement=statement)
        mgr.close()
    StoreService(settings).merge(name_of(a), name_of(b), organize=False)
    shutil.rmtree(a / ".autopatch-j")  # e.g. a fresh clone at the same place
    rc, doc, err = invoke_cli("memory", "list", json=True, cwd=a)
    assert rc == 0, err
    assert sorted(i["statement"] for i in doc["items"]) == ["Indent with tabs.", "Wrap at 100 columns."]
    assert not (a / ".autopatch-j").exists()
