"""`memory_search` / `memory_read` through the request-local RecallSession: term priority, result and
call limits, the readable-ID allowlist, bounded detail with the latest provenance, the token pool."""

from __future__ import annotations

import json

import pytest

from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import (
    MAX_READ_CONTENT_CHARS,
    MAX_READS,
    MAX_RESULTS,
    MAX_SEARCHES,
    RecallLimitError,
    RecallSession,
)
from autopatch_tui.core.recall.terms import MAX_QUERY_TERMS
from tests.support.recall_seed import (
    active_thread,
    add_turn,
    revise_item,
    seed_item,
    seed_many,
)

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper", "kale", "lemon", "mango", "nectar", "olive", "papaya", "quince", "radish", "sorrel", "tomato", "ugli", "vanilla", "walnut", "xigua", "yarrow", "zucchini", "acorn", "basil", "clove", "dill", "endive", "fennel", "garlic"]


def new_session(mgr, text: str = "", *, intent: str = "general_chat", paths: tuple[str, ...] = (),
                pool: int = 6000, **query: object) -> RecallSession:
    thread = active_thread(mgr.store.conn())
    return RecallSession(mgr.store.conn, RecallQuery(intent, text, paths, **query),  # type: ignore[arg-type]
                         policy_for(intent, thread), pool_tokens=pool)


def test_explicit_query_terms_come_first_within_the_cap_while_the_map_keeps_its_order(manager) -> None:
    conn = manager.store.conn()
    zebra = seed_item(conn, subject="Zebra crossing", statement="Stripes everywhere.", keywords=["zebra"])
    fruit = seed_item(conn, subject="apple banana", statement="Fruit salad rules.")
    user_text = " ".join(WORDS)  # 34 distinct terms: the base query alone fills the 32-term cap
    s = new_session(manager, user_text)
    base = s.query.base_terms()
    assert len(base) == MAX_QUERY_TERMS and "zebra" not in base and base[:2] == ["apple", "banana"]

    merged = s.query.merged_terms("zebra")
    assert merged[0] == "zebra" and len(merged) == MAX_QUERY_TERMS
    assert merged[1:] == base[: MAX_QUERY_TERMS - 1]  # the base terms follow, in their own order

    before = s.memory_map()
    assert before.ids == [fruit.logical_id]
    # the explicit term reached the search although the base query alone fills the cap
    assert [r["id"] for r in s.search("zebra")] == [fruit.logical_id, zebra.logical_id]
    after = s.memory_map()
    assert after.ids == before.ids and s.query.base_terms() == base  # the automatic Map is unchanged


def test_search_returns_at_most_eight_in_rank_order_with_match_types(manager) -> None:
    conn = manager.store.conn()
    seeded = seed_many(conn, [dict(subject=f"cache rule {i:02d}", keywords=["cachekey"],
                                   statement="Caches expire hourly.") for i in range(12)])
    special = seed_item(conn, subject="cachekey format", statement="Keys are namespaced.", keywords=["java:S100"])
    results = new_session(manager).search("cachekey java:S100")
    assert len(results) == MAX_RESULTS == 8
    assert results[0]["id"] == special.logical_id and results[0]["match_type"] == "check_id"
    assert [r["id"] for r in results[1:]] == sorted(x.logical_id for x in seeded)[:7]
    assert all(set(r) == {"id", "kind", "subject", "statement", "match_type"} for r in results)
    assert {r["match_type"] for r in results[1:]} == {"keyword"}


def test_four_distinct_queries_per_request_and_a_repeat_is_free(manager) -> None:
    seed_item(manager.store.conn(), subject="alpha beta", statement="x")
    s = new_session(manager)
    first = s.search("alpha beta")
    for q in ("gamma", "delta", "epsilon"):
        s.search(q)
    with pytest.raises(RecallLimitError, match="at most 4"):
        s.search("zeta")
    # a repeat (same normalized text) is free and answers the same
    assert s.search("  ALPHA   beta ") == first
    assert len(s.searches) == MAX_SEARCHES
    # through the tool box the refusal is a readable tool result, not an exception
    box = ToolBox(s, None)
    assert box.call("memory_search", json.dumps({"query": "eta"})).startswith("error: at most 4")
    assert json.loads(box.call("memory_search", json.dumps({"query": "gamma"}))) == {"results": []}
    with pytest.raises(RecallLimitError):
        new_session(manager).search("   ")


def test_read_only_exposed_ids_bounded_detail_and_latest_provenance(manager) -> None:
    conn = manager.store.conn()
    h1 = add_turn(manager, "we decided: retries use jitter", "ok")
    h2 = add_turn(manager, "and retries stop after five attempts", "ok")
    item = seed_item(conn, subject="retry policy", statement="Retries use jitter.", content="x" * 5000,
                     sources=[(h1.turn_id, "user", "retries use jitter")])
    item2 = revise_item(conn, item.logical_id, subject="retry policy", statement="Retries use jitter, max five.",
                        content="y" * 5000, sources=[(h2.turn_id, "user", "retries stop after five attempts")])
    hidden = seed_item(conn, subject="unrelated secret plan", statement="Never shown.")
    s = new_session(manager, "what is our retry policy")

    with pytest.raises(RecallLimitError, match="only accepts IDs"):
        s.read(item.logical_id)  # not exposed yet
    assert s.memory_map().ids == [item.logical_id]
    detail = s.read(item.logical_id)
    assert detail["revision"] == item2.revision == 2
    assert detail["statement"] == "Retries use jitter, max five."
    assert len(detail["content"]) <= MAX_READ_CONTENT_CHARS + 1 and detail["content"].startswith("y")
    assert detail["provenance"] == [{"role": "user", "quote": "retries stop after five attempts"}]
    assert set(detail) >= {"id", "kind", "subject", "aliases", "keywords", "applies_to_paths", "strength", "origin"}
    with pytest.raises(RecallLimitError):
        s.read(hidden.logical_id)  # a guessed ID stays refused
    with pytest.raises(RecallLimitError):
        s.read("mem-01ZZZZZZZZZZZZZZZZZZZZZZZZ")


def test_at_most_eight_distinct_reads_and_a_reread_is_free(manager) -> None:
    conn = manager.store.conn()
    seeded = seed_many(conn, [dict(subject=f"lint rule {i:02d}", keywords=["lintable"], statement=f"Rule {i}.")
                              for i in range(10)])
    s = new_session(manager)
    first = [r["id"] for r in s.search("lintable")]
    assert len(first) == 8
    for n, x in enumerate(seeded):
        if x.logical_id not in first:
            assert s.search(f"lint rule {n:02d}")[0]["id"] == x.logical_id
    assert s.readable == {x.logical_id for x in seeded}
    ids = sorted(s.readable)
    for item_id in ids[:MAX_READS]:
        s.read(item_id)
    with pytest.raises(RecallLimitError, match="at most 8"):
        s.read(ids[MAX_READS])
    assert s.read(ids[0])["id"] == ids[0]  # already read: free


def test_searches_and_reads_share_one_token_pool(manager) -> None:
    conn = manager.store.conn()
    big = seed_item(conn, subject="huge design note", statement="Long.", content="word " * 2000)
    probe = new_session(manager, "huge design note")
    probe.memory_map()
    before = probe.pool_tokens
    probe.read(big.logical_id)
    read_cost = before - probe.pool_tokens
    assert read_cost > 400  # the detail is bounded, but not free

    s = new_session(manager, "huge design note", pool=read_cost)
    assert s.memory_map().ids == [big.logical_id]
    assert s.search("huge design note")  # spends a little of the same pool ...
    left = s.pool_tokens
    assert 0 < left < read_cost
    with pytest.raises(RecallLimitError, match="budget"):
        s.read(big.logical_id)  # ... so the read no longer fits
    assert s.pool_tokens == left

    s2 = new_session(manager, "huge design note", pool=read_cost + 5)
    s2.memory_map()
    s2.read(big.logical_id)
    with pytest.raises(RecallLimitError, match="budget"):
        s2.search("design")


def test_close_ends_the_request_and_clears_the_allowlist(manager) -> None:
    item = seed_item(manager.store.conn(), subject="retry policy", statement="Jitter.")
    s = new_session(manager, "retry policy")
    s.memory_map()
    s.search("retry")
    s.read(item.logical_id)
    s.close()
    assert s.closed and not s.readable and not s.searches and not s.reads
    with pytest.raises(RecallLimitError):
        s.read(item.logical_id)
    with pytest.raises(RecallLimitError, match="ended"):
        s.search("another")
