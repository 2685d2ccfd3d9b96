"""Document-frequency handling of the lexical gate: a term indexed for more than COMMON_TERM_ITEMS
active items can complete a phrase, and never counts as content evidence; it finds a phrase on its
own only when the query names that phrase (its phrase key, see phrase_index.py) and at most
PHRASE_KEY_ITEMS stored phrases share it. Below COMMON_TERM_ITEMS items nothing is common and the
gate applies in full."""

from __future__ import annotations

import pytest

from autopatch_tui.core.recall import matching, phrase_index
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from tests.support.recall_seed import active_thread, seed_item, seed_many


@pytest.fixture
def store(manager):
    conn = manager.store.conn()
    # "config" and "cache" are everywhere: 12 fillers mention both
    seed_many(conn, [dict(subject=f"filler {i:02d}", statement=f"Config and cache notes number {i:02d}.")
                     for i in range(12)])
    items = {
        "loader": seed_item(conn, subject="config loader", statement="Loaded once at start."),
        "bare": seed_item(conn, subject="deploy notes", statement="Nothing special.", keywords=["config"]),
        "mixed_body": seed_item(conn, subject="startup", statement="The config loader runs before the cache."),
        "rare_body": seed_item(conn, subject="startup order", statement="The loader runs before migrations."),
    }
    return manager, {k: v.logical_id for k, v in items.items()}


def search(mgr, text: str) -> dict[str, str]:
    s = RecallSession(mgr.store.conn, RecallQuery("general_chat", ""),
                      policy_for("general_chat", active_thread(mgr.store.conn())))
    return {r["id"]: r["match_type"] for r in s.search(text)}


def test_small_store_has_no_common_terms(store) -> None:
    mgr, ids = store
    assert matching.common_terms(mgr.store.conn(), ["config", "cache", "loader"]) == set()
    found = search(mgr, "config cache loader")
    assert found[ids["loader"]] == "subject" and found[ids["bare"]] == "keyword"
    assert found[ids["mixed_body"]] == "content"  # config + loader + cache: three content terms


def test_common_terms_complete_phrases_but_are_not_evidence(store, monkeypatch) -> None:
    mgr, ids = store
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", 10)
    conn = mgr.store.conn()
    assert matching.common_terms(conn, ["config", "cache", "loader", "migration"]) == {"config", "cache"}
    found = search(mgr, "config cache loader")
    assert found.get(ids["loader"]) == "subject"  # "loader" finds the phrase, "config" completes it
    assert found.get(ids["bare"]) == "keyword"  # the query names its keyword "config": found as a phrase
    assert ids["mixed_body"] not in found  # content: only one non-common term (loader)
    assert not any(r.startswith("filler") for r in found)
    assert search(mgr, "loader migrations")[ids["rare_body"]] == "content"  # two rare terms still do
    # the Map applies the same gate
    s = RecallSession(mgr.store.conn, RecallQuery("general_chat", "config cache loader"),
                      policy_for("general_chat", active_thread(conn)))
    assert s.memory_map().ids == [ids["loader"], ids["bare"]]
    # a query of common terms that names no stored phrase abstains
    assert search(mgr, "cache") == {}
    assert search(mgr, "config cache") == {ids["bare"]: "keyword"}


def test_a_phrase_shared_by_too_many_items_names_nothing(store, monkeypatch) -> None:
    mgr, ids = store
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", 10)
    seed_many(mgr.store.conn(), [dict(subject=f"other {i}", statement="Unrelated.", keywords=["config"])
                                 for i in range(2)])
    monkeypatch.setattr(phrase_index, "PHRASE_KEY_ITEMS", 2)
    assert search(mgr, "config cache") == {}  # three stored phrases "config": more than the limit
    monkeypatch.setattr(phrase_index, "PHRASE_KEY_ITEMS", 3)
    assert ids["bare"] in search(mgr, "config cache")
