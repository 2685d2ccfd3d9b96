"""A query that names a stored phrase (subject, alias, keyword, check ID) finds its item however
common the phrase's single words are (the phrase index, `phrase_index.py`), and the indexed gate
still equals the naive full scan on a large store full of common terms. The big store is built once
per module, with the document-frequency limits lowered so that it behaves like a far larger one."""

from __future__ import annotations

import json
import random

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.recall import matching, phrase_index
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.phrase_index import phrase_key, query_phrase_keys
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from autopatch_tui.core.recall.terms import phrase_terms
from autopatch_tui.core.settings import load_settings
from tests.support.fixtures import make_git_repo
from tests.support.recall_seed import (
    SyntheticCorpus,
    active_thread,
    map_keys,
    match_keys,
    naive_map,
    naive_matches,
    naive_search,
    seed_item,
    seed_many,
)

BIG = 1000
COMMON = 15  # a term in more than 20 items is common: most of this store's vocabulary
KEY_CAP = 4


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    repo = make_git_repo(tmp_path_factory.mktemp("big") / "project")
    mgr = MemoryManager(repo, load_settings({"AUTOPATCH_HOME": str(home)}), register=False)
    corpus = SyntheticCorpus(seed=4, en_words=300, zh_words=200)
    threads = corpus.populate(mgr.store.conn(), BIG, seed=4)
    yield mgr, corpus, threads
    mgr.close()


@pytest.fixture
def limits(monkeypatch):
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", COMMON)
    monkeypatch.setattr(phrase_index, "PHRASE_KEY_ITEMS", KEY_CAP)


def _named(conn, count: int, seed: int):
    """(query, logical ID, thread) naming an on_match item by a phrase at most KEY_CAP phrases share."""
    rows = conn.execute("SELECT logical_id, subject, aliases, keywords, thread_id, recall_mode, applies_to_paths"
                        " FROM memory_items WHERE status = 'active'").fetchall()
    shared: dict[str, int] = {}
    for r in rows:
        for p in [r["subject"], *json.loads(r["aliases"]), *json.loads(r["keywords"])]:
            if phrase_terms(p):
                shared[phrase_key(phrase_terms(p))] = shared.get(phrase_key(phrase_terms(p)), 0) + 1
    rng = random.Random(seed)
    out = []
    for r in rng.sample([r for r in rows if r["recall_mode"] == "on_match" and r["applies_to_paths"] == "[]"], 400):
        phrases = [p for p in [r["subject"], *json.loads(r["aliases"]), *json.loads(r["keywords"])]
                   if phrase_terms(p) and shared[phrase_key(phrase_terms(p))] <= KEY_CAP]
        if phrases:
            out.append((f"what did we decide about {rng.choice(phrases)}", r["logical_id"], r["thread_id"]))
        if len(out) == count:
            break
    return out


def test_every_named_item_passes_the_gate_and_reaches_a_roomy_map(big, limits) -> None:
    mgr, _, threads = big
    conn = mgr.store.conn()
    named = _named(conn, 60, seed=1)
    assert len(named) == 60
    missed_without_keys = 0
    for text, logical_id, thread in named:
        q = RecallQuery("general_chat", text)
        policy = policy_for("general_chat", thread or threads[0])
        terms = q.base_terms()
        got = matching.lexical_matches(conn, terms, policy, (), q.base_phrase_keys())
        assert logical_id in [m.row["logical_id"] for m in got], text
        mm = build_map(conn, q, policy, budget_tokens=200_000)
        assert logical_id in mm.ids, text
        old_gate = matching.lexical_matches(conn, terms, policy, ())  # without phrase keys: the old hard cut-off
        missed_without_keys += logical_id not in [m.row["logical_id"] for m in old_gate]
    assert missed_without_keys >= 5  # the store is dense in common terms: the cut-off alone loses named items


def test_indexed_recall_equals_the_naive_scan_on_a_large_store_with_common_terms(big, limits) -> None:
    mgr, corpus, threads = big
    conn = mgr.store.conn()
    queries = [(t, ()) for t, _, _ in _named(conn, 8, seed=2)] + corpus.queries(conn, 12, seed=3)
    rng = random.Random(5)
    keyed = 0
    for n, (text, paths) in enumerate(queries):
        intent = ("general_chat", "code_explain", "code_audit", "patch_explain")[n % 4]
        policy = policy_for(intent, threads[n % len(threads)])
        q = RecallQuery(intent, text, paths)
        base, keys = q.base_terms(), q.base_phrase_keys()
        got = matching.lexical_matches(conn, base, policy, q.paths, keys)
        assert match_keys(got) == match_keys(naive_matches(conn, base, policy, q.paths, keys)), (text, intent)
        keyed += match_keys(got) != match_keys(matching.lexical_matches(conn, base, policy, q.paths))
        budget = rng.choice((150, 600, 2000))
        assert map_keys(build_map(conn, q, policy, budget_tokens=budget)) == \
            map_keys(naive_map(conn, q, policy, budget_tokens=budget)), (text, intent, budget)
        explicit = queries[(n + 5) % len(queries)][0]
        session = RecallSession(mgr.store.conn, q, policy)
        assert session.search(explicit) == naive_search(conn, q, policy, explicit), (explicit, text)
    assert keyed >= 3  # the phrase-key path decided some of these results


def test_query_phrase_keys_contain_every_phrase_written_in_the_query() -> None:
    keys = set(query_phrase_keys(["我们之前关于向后兼容是怎么决定的", "What about the Config-Loaders, again?"],
                                 ["src/app/user_config.py"]))
    for phrase in ("向后兼容", "兼容", "config loader", "Config Loaders", "loader", "user_config", "UserConfig"):
        assert phrase_key(phrase_terms(phrase)) in keys, phrase
    assert phrase_key(phrase_terms("loader config")) not in keys  # order matters: a phrase, not a bag
    assert phrase_key(phrase_terms("about")) not in keys  # stopwords never make a key
    many = query_phrase_keys(["word" + str(i) for i in range(500)])
    assert len(many) <= phrase_index.MAX_STREAM_TERMS * 8  # bounded however long the query is


def test_a_phrase_of_only_common_words_is_found_when_named(manager, monkeypatch) -> None:
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", 3)
    conn = manager.store.conn()
    seed_many(conn, [dict(subject=f"note {i}", statement=f"The config cache holds entry {i}.") for i in range(6)])
    target = seed_item(conn, subject="config cache", statement="Flush it on deploy.")
    assert matching.common_terms(conn, ["config", "cache"]) == {"config", "cache"}
    s = RecallSession(manager.store.conn, RecallQuery("general_chat", ""),
                      policy_for("general_chat", active_thread(conn)))
    assert [r["id"] for r in s.search("what did we decide about the config cache")] == [target.logical_id]
    assert s.search("cache config") == []  # not written as the phrase, and both words are common
    s.close()

def test_the_longest_named_phrase_ranks_first(manager) -> None:
    conn = manager.store.conn()
    short = seed_item(conn, subject="storage notes", statement="Disks fill up.", aliases=["disk"])
    named = seed_item(conn, subject="loader tuning", statement="Warm it first.", keywords=["disk_cache_loader"])
    s = RecallSession(manager.store.conn, RecallQuery("general_chat", ""),
                      policy_for("general_chat", active_thread(conn)))
    found = s.search("why does disk_cache_loader fail")
    # the keyword names 4 terms (diskcacheloader, disk, cache, loader); the alias only one of them
    assert [(r["id"], r["match_type"]) for r in found] == [(named.logical_id, "keyword"), (short.logical_id, "alias")]
