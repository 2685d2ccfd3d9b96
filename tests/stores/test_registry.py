"""Store names, the per-user registry, `memory stores [add|label]` (contracts §1, §4; issue 6 §1).

The URL normalization golden table lives in tests/identity/test_remote.py; here: the round trip
from a checkout (or a loose memory.db) to its name, its registry entry and `memory stores --json`."""

from __future__ import annotations

from pathlib import Path


from autopatch_tui.core.identity.names import canonical_location, is_store_name, store_name_for_location
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.stores.registry import Registry
from tests.support.fixtures import DEFAULT_REMOTE
from tests.support.store_helpers import (
    add_item,
    add_turns,
    checkout,
    copy_store_file,
    db_of,
    file_digest,
    meta,
    name_of,
    remove_store,
    used,
)

STORE_KEYS = {"store", "label", "root", "remote", "fact_count", "retired"}


def _stores(invoke_cli, cwd: Path) -> dict[str, dict]:
    rc, out, err = invoke_cli("memory", "stores", json=True, cwd=cwd)
    assert rc == 0, err
    assert set(out) == {"stores"}
    for s in out["stores"]:
        assert set(s) == STORE_KEYS
    return {s["store"]: s for s in out["stores"]}


def test_opening_a_checkout_registers_its_store_with_exact_keys(tmp_path, settings, open_mgr, invoke_cli):
    a = checkout(tmp_path, "alpha", remote="git@GitHub.com:Org/Alpha.git")
    (a / "sub").mkdir()
    mgr = open_mgr(a / "sub")  # a subfolder resolves to the top level
    add_turns(mgr, 1)
    add_item(mgr, "parser includes")
    name = name_of(a)
    assert is_store_name(name)
    assert name == store_name_for_location(canonical_location(a))
    mgr.close()

    listed = _stores(invoke_cli, a)
    assert listed[name] == {"store": name, "label": None, "root": canonical_location(a),
                            "remote": "github.com/org/alpha", "fact_count": 1, "retired": False}
    with Registry(settings.home) as reg:
        entry = reg.get(name)
    assert entry is not None and Path(entry.db_path) == db_of(a).resolve()


def test_add_registers_a_checkout_the_app_never_opened(tmp_path, settings, invoke_cli):
    b = checkout(tmp_path, "beta", remote=DEFAULT_REMOTE)
    used(MemoryManager(b, settings, register=False)).close()
    name = name_of(b)
    with Registry(settings.home) as reg:
        assert reg.get(name) is None

    (b / "deep").mkdir()
    rc, out, err = invoke_cli("memory", "stores", "add", str(b / "deep"), cwd=b)
    assert rc == 0, err
    assert name in out
    listed = _stores(invoke_cli, b)
    assert listed[name]["root"] == canonical_location(b)
    assert listed[name]["remote"] == "github.com/example-org/example-project"


def test_add_a_loose_store_copied_from_another_machine(tmp_path, settings, invoke_cli):
    other = checkout(tmp_path, "elsewhere/proj", git=False)
    mgr = MemoryManager(other, settings, register=False)
    add_turns(mgr, 2)
    add_item(mgr, "release checklist")
    mgr.close()
    loose = copy_store_file(db_of(other), tmp_path / "downloads" / "memory.db")
    name = name_of(loose)
    remove_store(db_of(other))  # "another machine": the recorded root does not exist here
    (other / ".autopatch-j" / ".gitignore").unlink()  # written with the store (contracts §1)
    (other / ".autopatch-j").rmdir()
    other.rmdir()

    here = checkout(tmp_path, "here")
    rc, out, err = invoke_cli("memory", "stores", "add", str(loose), cwd=here)
    assert rc == 0, err
    listed = _stores(invoke_cli, here)
    assert listed[name] == {"store": name, "label": None, "root": canonical_location(other), "remote": None,
                            "fact_count": 1, "retired": False}


def test_adding_a_copy_of_a_registered_store_keeps_both(tmp_path, settings, open_mgr, invoke_cli):
    """A memory.db copied elsewhere carries the original's name; registering it must not steal the
    original's registry entry (both stores stay known, so they can be found and merged)."""
    a = checkout(tmp_path, "alpha", remote=DEFAULT_REMOTE)
    mgr = open_mgr(a)
    add_turns(mgr, 1)
    add_item(mgr, "parser includes")
    mgr.close()
    name = name_of(a)
    before = file_digest(db_of(a))
    copy = copy_store_file(db_of(a), tmp_path / "backup" / "memory.db")
    elsewhere = checkout(tmp_path, "elsewhere", git=False)

    rc, _, err = invoke_cli("memory", "stores", "add", str(copy), cwd=elsewhere)
    assert rc == 0, err
    listed = _stores(invoke_cli, elsewhere)
    copy_name = name_of(copy)
    assert copy_name != name and is_store_name(copy_name)
    assert {name, copy_name} <= set(listed)
    assert listed[copy_name]["fact_count"] == 1
    with Registry(settings.home) as reg:
        assert Path(reg.require(name).db_path) == db_of(a).resolve()
        assert Path(reg.require(copy_name).db_path) == copy.resolve()
    assert file_digest(db_of(a)) == before  # the original is untouched


def test_add_rejects_what_is_not_a_store(tmp_path, invoke_cli, repo):
    rc, _, err = invoke_cli("memory", "stores", "add", str(tmp_path / "missing"))
    assert rc == 2 and "no such" in err
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    rc, _, err = invoke_cli("memory", "stores", "add", str(junk))
    assert rc == 1 and "cannot add" in err and "Traceback" not in err
    empty_checkout = checkout(tmp_path, "never-opened", git=False)
    rc, _, err = invoke_cli("memory", "stores", "add", str(empty_checkout))
    assert rc == 1 and "does not exist" in err
    assert not db_of(empty_checkout).exists()  # adding never provisions a store


def test_label_is_persisted_in_the_store_and_the_registry(tmp_path, settings, open_mgr, invoke_cli):
    a = checkout(tmp_path, "alpha", remote=DEFAULT_REMOTE)
    used(open_mgr(a)).close()
    name = name_of(a)
    rc, _, err = invoke_cli("memory", "stores", "label", name, "  Alpha (laptop)  ", cwd=a)
    assert rc == 0, err
    assert meta(db_of(a))["label"] == "Alpha (laptop)"
    with Registry(settings.home) as reg:
        assert reg.require(name).label == "Alpha (laptop)"
    assert _stores(invoke_cli, a)[name]["label"] == "Alpha (laptop)"
    # reopening the checkout re-registers it from the store's own meta: the label survives
    open_mgr(a).close()
    with Registry(settings.home) as reg:
        assert reg.require(name).label == "Alpha (laptop)"

    for bad in ("   ", "x" * 81):
        rc, _, err = invoke_cli("memory", "stores", "label", name, bad, cwd=a)
        assert rc == 2 and "label" in err
    rc, _, err = invoke_cli("memory", "stores", "label", "project-0000000000000000000000ZZZZ", "x", cwd=a)
    assert rc == 2 and "unknown store" in err
    assert meta(db_of(a))["label"] == "Alpha (laptop)"


def test_two_clones_get_two_names_but_one_remote(tmp_path, open_mgr, invoke_cli):
    a = checkout(tmp_path, "one/proj", remote=DEFAULT_REMOTE)
    b = checkout(tmp_path, "two/proj", remote=DEFAULT_REMOTE.replace("https://", "ssh://git@"))
    used(open_mgr(a)).close()
    used(open_mgr(b)).close()
    listed = _stores(invoke_cli, a)
    na, nb = name_of(a), name_of(b)
    assert na != nb
    assert listed[na]["remote"] == listed[nb]["remote"] == "github.com/example-org/example-project"


def test_label_refuses_a_retired_or_degraded_store(tmp_path, settings, open_mgr, invoke_cli):
    from tests.support.store_helpers import service_for

    a = checkout(tmp_path, "alpha", remote=DEFAULT_REMOTE)
    b = checkout(tmp_path, "beta", remote=DEFAULT_REMOTE)
    c = checkout(tmp_path, "gamma", git=False)
    for p in (a, b, c):
        used(open_mgr(p)).close()
    service_for(settings).merge(name_of(a), name_of(b))
    elsewhere = checkout(tmp_path, "elsewhere", git=False)
    rc, _, err = invoke_cli("memory", "stores", "label", name_of(a), "Old", cwd=elsewhere)
    assert rc == 1 and f"merged into {name_of(b)}" in err
    assert meta(db_of(a))["label"] is None

    import sqlite3

    conn = sqlite3.connect(str(db_of(c)), isolation_level=None)
    conn.execute("CREATE TABLE intruder (x)")
    conn.close()
    before = file_digest(db_of(c))
    rc, _, err = invoke_cli("memory", "stores", "label", name_of(c), "Gamma", cwd=elsewhere)
    assert rc == 1 and "intruder" in err
    assert file_digest(db_of(c)) == before


def test_opening_a_checkout_that_holds_a_copied_store_keeps_both_known(tmp_path, settings, open_mgr):
    a = checkout(tmp_path, "laptop/proj", remote=DEFAULT_REMOTE)
    open_mgr(a).close()
    b = checkout(tmp_path, "desktop/proj", remote=DEFAULT_REMOTE)
    copy_store_file(db_of(a), db_of(b))
    open_mgr(b).close()  # the app opened at the copy
    with Registry(settings.home) as reg:
        assert Path(reg.require(name_of(a)).db_path) == db_of(a).resolve()
        assert name_of(b) != name_of(a) and Path(reg.require(name_of(b)).db_path) == db_of(b).resolve()
