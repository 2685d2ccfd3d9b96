"""Aliases and redirect (FR-058): a checkout whose store was merged away resolves to the living
holder, says so, never provisions a fresh empty store; transitive chains; one living holder per
alias; an unreachable holder degrades with a clear message (exit 3 where a healthy store is needed)."""

from __future__ import annotations

import sqlite3

import pytest

from autopatch_tui.core.stores.registry import Registry
from tests.support.store_helpers import (
    add_item,
    add_turns,
    checkout,
    db_of,
    file_digest,
    name_of,
    remove_store,
    rows,
    scalar,
    service_for,
    used,
)


@pytest.fixture
def abc(tmp_path, open_mgr):
    """Three checkouts of one project at different paths, each with a store of its own."""
    paths = {}
    for key in "abc":
        p = checkout(tmp_path, f"clone-{key}/proj", remote=f"https://example.com/org/{key}.git")
        m = open_mgr(p)
        add_turns(m, 1, tag=key)
        add_item(m, f"decision {key}")
        m.close()
        paths[key] = p
    return paths, {k: name_of(p) for k, p in paths.items()}


def _aliases(db) -> list[str]:
    return [r["alias"] for r in rows(db, "SELECT alias FROM store_aliases ORDER BY alias")]


def test_opening_a_merged_checkout_uses_the_holder_and_says_so(abc, settings, open_mgr, invoke_cli):
    paths, names = abc
    service_for(settings).merge(names["a"], names["b"])
    a_before = file_digest(db_of(paths["a"]))

    mgr = open_mgr(paths["a"])
    assert mgr.healthy
    assert mgr.paths.db == db_of(paths["b"])
    assert (mgr.redirect.alias, mgr.redirect.holder) == (names["a"], names["b"])
    assert names["a"] in mgr.redirect.notice and names["b"] in mgr.redirect.notice
    [t] = add_turns(mgr, 1, tag="after")
    mgr.close()
    assert scalar(db_of(paths["b"]), "SELECT count(*) FROM turns WHERE id = ?", (t,)) == 1
    assert file_digest(db_of(paths["a"])) == a_before  # the retired file is not written, nor replaced

    rc, out, err = invoke_cli("memory", "status", json=True, cwd=paths["a"])
    assert rc == 0
    assert out["db_path"] == str(db_of(paths["b"]))
    assert f"merged into {names['b']}" in err
    rc, out, err = invoke_cli("memory", "status", json=True, cwd=paths["b"])
    assert rc == 0 and "merged" not in err  # the holder's own checkout is not redirected


def test_a_deleted_store_resolves_through_the_registry_alias(abc, settings, open_mgr):
    paths, names = abc
    service_for(settings).merge(names["a"], names["b"])
    remove_store(db_of(paths["a"]))

    mgr = open_mgr(paths["a"])
    assert mgr.healthy and mgr.paths.db == db_of(paths["b"])
    assert mgr.redirect.holder == names["b"]
    mgr.close()
    assert not db_of(paths["a"]).exists()  # never a fresh empty duplicate


@pytest.mark.parametrize("deleted", [False, True], ids=["file-kept", "file-deleted"])
def test_transitive_a_to_b_to_c(abc, settings, open_mgr, deleted):
    paths, names = abc
    svc = service_for(settings)
    svc.merge(names["a"], names["b"])
    result = svc.merge(names["b"], names["c"])
    assert sorted(result.aliases) == sorted([names["a"], names["b"]])
    if deleted:
        remove_store(db_of(paths["a"]))
        remove_store(db_of(paths["b"]))

    for key in "ab":
        mgr = open_mgr(paths[key])
        assert mgr.healthy and mgr.paths.db == db_of(paths["c"]), key
        assert (mgr.redirect.alias, mgr.redirect.holder) == (names[key], names["c"])
        mgr.close()
        assert db_of(paths[key]).exists() != deleted

    # each alias has exactly one living holder
    with Registry(settings.home) as reg:
        assert reg.holder_of(names["a"]) == reg.holder_of(names["b"]) == names["c"]
    assert _aliases(db_of(paths["c"])) == sorted([names["a"], names["b"]])
    if not deleted:
        assert _aliases(db_of(paths["b"])) == []  # B gave A up when it was merged into C
    # the items of all three live in C
    subjects = {r["subject"] for r in rows(db_of(paths["c"]), "SELECT subject FROM memory_items"
                                                             " WHERE status = 'active'")}
    assert subjects == {"decision a", "decision b", "decision c"}


def test_a_new_holder_strips_the_alias_from_every_other_store(abc, settings):
    paths, names = abc
    svc = service_for(settings)
    svc.merge(names["a"], names["b"])
    # a stale claim of the same alias in a third store (e.g. a copy that merged A on another machine)
    conn = sqlite3.connect(str(db_of(paths["c"])), isolation_level=None)
    conn.execute("INSERT INTO store_aliases (alias, added_at) VALUES (?, 0)", (names["a"],))
    conn.close()
    d = checkout(paths["a"].parent.parent, "clone-d/proj", remote="https://example.com/org/d.git")
    from autopatch_tui.core.manager import MemoryManager

    used(MemoryManager.open(d, settings)).close()
    svc.merge(names["b"], name_of(d))
    assert _aliases(db_of(paths["c"])) == []
    assert _aliases(db_of(d)) == sorted([names["a"], names["b"]])
    with Registry(settings.home) as reg:
        assert reg.holder_of(names["a"]) == name_of(d)


def test_an_unreachable_holder_degrades_with_a_clear_message(abc, settings, open_mgr, invoke_cli):
    paths, names = abc
    svc = service_for(settings)
    svc.merge(names["a"], names["b"])
    svc.merge(names["b"], names["c"])
    remove_store(db_of(paths["c"]))

    mgr = open_mgr(paths["a"])
    assert not mgr.healthy
    diagnostic = mgr.status().diagnostic
    assert names["c"] in diagnostic and "not reachable" in diagnostic
    mgr.close()

    rc, out, err = invoke_cli("memory", "list", json=True, cwd=paths["a"])
    assert rc == 3 and out["error"]["code"] == 3 and names["c"] in out["error"]["message"]
    assert "not reachable" in err and names["c"] in err
    rc, out, err = invoke_cli("memory", "status", json=True, cwd=paths["a"])  # its report, and exit 3
    assert rc == 3 and out["state"] == "degraded" and names["c"] in out["diagnostic"]
    assert out["error"]["code"] == 3
    # nothing was provisioned anywhere
    assert not db_of(paths["c"]).exists()
    assert rows(db_of(paths["a"]), "SELECT retired_into FROM memory_meta") == [{"retired_into": names["b"]}]


def test_a_holder_no_longer_registered_degrades(abc, settings, open_mgr):
    paths, names = abc
    service_for(settings).merge(names["a"], names["b"])
    with Registry(settings.home) as reg:
        reg._conn.execute("DELETE FROM stores WHERE name = ?", (names["b"],))
    mgr = open_mgr(paths["a"])
    assert not mgr.healthy
    assert "not registered" in mgr.status().diagnostic


def test_clear_where_the_holder_is_unreachable_keeps_the_backup(abc, settings, invoke_cli):
    paths, names = abc
    service_for(settings).merge(names["a"], names["b"])
    remove_store(db_of(paths["b"]))
    rc, _, err = invoke_cli("memory", "clear", "--confirm", cwd=paths["a"])
    assert rc != 0 and "not reachable" in err
    assert rows(db_of(paths["a"]), "SELECT retired_into FROM memory_meta") == [{"retired_into": names["b"]}]
    assert scalar(db_of(paths["a"]), "SELECT count(*) FROM turns") == 1
