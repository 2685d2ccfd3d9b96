"""The Memory Map's two lanes, ranking, CJK queries, budgets and abstention (spec "无向量渐进检索")."""

from __future__ import annotations

from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.recall.memory_map import item_line
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from tests.support.recall_seed import active_thread, seed_item, seed_many


def session(mgr: MemoryManager, text: str = "", *, intent: str = "general_chat", paths: tuple[str, ...] = (),
            map_tokens: int = 1500, **query: object) -> RecallSession:
    thread = active_thread(mgr.store.conn())
    return RecallSession(mgr.store.conn, RecallQuery(intent, text, paths, **query),  # type: ignore[arg-type]
                         policy_for(intent, thread), map_tokens=map_tokens)


def ids(matches: list) -> list[str]:
    return [m.row["logical_id"] for m in matches]


# --------------------------------------------------------------------------- standing lane


def test_always_item_covering_the_scope_enters_the_standing_lane_without_any_term_match(manager) -> None:
    conn = manager.store.conn()
    always = seed_item(conn, kind="user_preference", subject="Answer in English", recall_mode="always",
                       statement="Always answer in English, even for Chinese questions.")
    scoped = seed_item(conn, subject="Auth tokens are opaque", recall_mode="always", applies_to_paths=["src/auth"],
                       statement="Session tokens stay opaque strings; never decode them client-side.")
    quiet = seed_item(conn, subject="Kafka partitions", statement="Use twelve partitions per topic.")

    mm = session(manager, "what is the weather like", paths=("src/auth/login.py",)).memory_map()
    assert ids(mm.standing) == [scoped.logical_id, always.logical_id]  # more specific path first
    assert mm.relevant == []
    assert quiet.logical_id not in mm.ids
    assert all(m.match_type == "standing" for m in mm.standing)
    text = mm.render()
    assert "Standing:" in text and "Relevant:" not in text

    # a scope the scoped item does not cover (and no scope at all) keeps only the project-wide one
    assert ids(session(manager, "weather", paths=("docs/index.md",)).memory_map().standing) == [always.logical_id]
    assert ids(session(manager, "weather").memory_map().standing) == [always.logical_id]


def test_repair_policy_standing_lane_still_only_has_preferences_and_decisions(manager) -> None:
    conn = manager.store.conn()
    pref = seed_item(conn, kind="user_preference", subject="Small patches", recall_mode="always",
                     statement="Keep every patch minimal.")
    talk = seed_item(conn, kind="discussion_context", subject="Open question on logging", recall_mode="always",
                     strength="soft", origin="explicit", statement="Still deciding between two log formats.")
    ordinary = session(manager, "anything").memory_map()
    assert set(ordinary.ids) == {pref.logical_id, talk.logical_id}
    for intent in ("code_audit", "zero_finding_review", "patch_explain", "patch_revise"):
        repair = session(manager, "anything", intent=intent, paths=("src/a.py",)).memory_map()
        assert repair.ids == [pref.logical_id], intent


# --------------------------------------------------------------------------- relevant lane


def test_relevant_lane_admits_subject_alias_keyword_check_id_or_two_content_terms(manager) -> None:
    conn = manager.store.conn()
    by_subject = seed_item(conn, subject="connection pooling", statement="Pool size is fixed at 20.")
    by_alias = seed_item(conn, subject="数据库连接", statement="连接数固定", aliases=["database handles"])
    by_keyword = seed_item(conn, kind="user_preference", subject="Logging style", statement="Structured logs only.",
                           keywords=["structlog"])
    by_check = seed_item(conn, subject="Unused imports", statement="Remove them in the same patch.",
                         keywords=["java:S1128"])
    by_content = seed_item(conn, subject="Release cadence", statement="Ship from the main branch every Tuesday.")
    one_term = seed_item(conn, subject="Nightly jobs", statement="Cron runs the vacuum every night.")

    cases = {
        "how big should connection pooling be": (by_subject, "subject"),
        "do we close database handles eagerly": (by_alias, "alias"),
        "should I use structlog here": (by_keyword, "keyword"),
        "fix java:S1128 in Foo": (by_check, "check_id"),
        "which branch do we ship on tuesday": (by_content, "content"),
    }
    for text, (item, kind) in cases.items():
        mm = session(manager, text).memory_map()
        assert [(m.row["logical_id"], m.match_type) for m in mm.relevant] == [(item.logical_id, kind)], text
    # one content term alone ("vacuum") never admits; nor does half of a two-word subject
    assert session(manager, "what does vacuum mean").memory_map().empty
    assert session(manager, "tell me about pooling").memory_map().empty
    assert one_term.logical_id not in session(manager, "vacuum").memory_map().ids


def test_path_match_or_recency_alone_never_admits_and_no_hit_means_no_padding(manager) -> None:
    conn = manager.store.conn()
    seed_item(conn, subject="Token refresh", statement="Refresh tokens rotate on use.", applies_to_paths=["src/auth"])
    seed_item(conn, kind="user_preference", subject="Tabs or spaces", statement="Four spaces.", strength="hard",
              now=9_999_999_999.0)  # the newest, hardest item
    s = session(manager, "please explain this file", paths=("src/auth/login.py",))
    mm = s.memory_map()
    assert mm.empty and mm.render() == ""
    assert s.search("explain the file") == []
    repair = session(manager, "", intent="code_audit", paths=("src/auth/login.py",))
    assert repair.memory_map().empty and repair.search("review it") == []


def test_ranking_is_path_specificity_then_the_lexical_tuple(manager) -> None:
    conn = manager.store.conn()
    seeded = seed_many(conn, [
        dict(subject="retry backoff", statement="Backoff doubles.", applies_to_paths=[]),              # 0: subject
        dict(subject="Backoff caps", statement="Cap retry backoff at a minute.",                       # 1: content, spec 2
             applies_to_paths=["src/net"]),
        dict(subject="Socket pool", statement="Sockets log.", keywords=["retry"],                      # 2: keyword, spec 3
             applies_to_paths=["src/net/client.py"]),
        dict(subject="Docs retry note", statement="Docs mention retry backoff.",                       # 3: content, elsewhere
             applies_to_paths=["docs"]),
        dict(subject="Retry rule", statement="x", keywords=["B110"], aliases=["retry backoff"]),        # 4: alias + content?
        dict(subject="Lint B110", statement="Never swallow errors.", keywords=["B110"]),                 # 5: check id
    ])
    s = session(manager, "retry backoff for B110", paths=("src/net/client.py",))
    order = {x.logical_id: n for n, x in enumerate(seeded)}
    got = [(order[m.row["logical_id"]], m.match_type, m.specificity, m.phrases) for m in s.memory_map().relevant]
    assert got == [
        (2, "keyword", 3, 1),    # the most specific path first, whatever its field
        (1, "content", 2, 2),
        (4, "check_id", 0, 2),   # project-wide: check ID, then more matched phrases (check ID + alias) ...
        (5, "check_id", 0, 1),
        (0, "subject", 0, 1),    # ... then subject
        (3, "content", -1, 2),   # scoped elsewhere: last for an ordinary request
    ]
    # a repair request drops the item that does not apply to its path
    repair = session(manager, "", intent="code_audit", finding_path="src/net/client.py",
                     finding_message="retry backoff", check_id="B110")
    assert seeded[3].logical_id not in repair.memory_map().ids
    assert seeded[3].logical_id not in [r["id"] for r in repair.search("retry backoff")]


def test_lexical_tuple_orders_fields_then_phrase_count_then_id(manager) -> None:
    conn = manager.store.conn()
    a = seed_item(conn, subject="alpha one", statement="Plain words here.", keywords=["gamma"])
    b = seed_item(conn, subject="alpha two", statement="Plain words here.", keywords=["gamma"], aliases=["delta"])
    c = seed_item(conn, subject="content only", statement="gamma delta epsilon appear in text.")
    d = seed_item(conn, subject="content more", statement="gamma delta epsilon zeta appear in text.")
    ranked = session(manager, "gamma delta epsilon zeta").memory_map().relevant
    # b: alias (3) beats keyword-only a (2); content d (4 hits) beats content c (3 hits)
    assert ids(ranked) == [b.logical_id, a.logical_id, d.logical_id, c.logical_id]
    assert [m.phrases for m in ranked] == [2, 1, 4, 3]  # b: alias + keyword; content counts its hits
    # equal tuples fall back to the logical ID: deterministic
    e = seed_item(conn, subject="twin one", statement="omega sigma")
    f = seed_item(conn, subject="twin two", statement="omega sigma")
    tied = ids(session(manager, "omega sigma").memory_map().relevant)
    assert tied == sorted([e.logical_id, f.logical_id])


# --------------------------------------------------------------------------- CJK


def test_unspaced_chinese_queries_match_saved_subject_alias_keyword_and_body_terms(manager) -> None:
    conn = manager.store.conn()
    subj = seed_item(conn, subject="向后兼容策略", statement="不保留旧格式")
    alias = seed_item(conn, subject="迁移方案", statement="一次性完成", aliases=["数据迁移"])
    kw = seed_item(conn, kind="user_preference", subject="过期策略", statement="缓存要有过期时间", keywords=["缓存失效"])
    body = seed_item(conn, subject="日志格式", statement="日志必须使用结构化格式输出")

    def hit(text: str) -> list[tuple[str, str]]:
        return [(m.row["logical_id"], m.match_type) for m in session(manager, text).memory_map().relevant]

    assert hit("我们要不要继续沿用向后兼容策略呢") == [(subj.logical_id, "subject")]
    assert hit("这次数据迁移怎么安排") == [(alias.logical_id, "alias")]
    assert hit("为什么会出现缓存失效的问题") == [(kw.logical_id, "keyword")]
    assert hit("结构化的日志应该怎么配置") == [(body.logical_id, "content")]
    # bigrams are bounded and contiguous: "向后看，兼容性" has no 后兼; unrelated text abstains
    assert hit("向后看，兼容性") == []
    s = session(manager, "今天天气怎么样")
    assert s.memory_map().empty and s.search("明天会下雨吗") == []


def test_cjk_query_keeps_the_whole_run_and_the_term_cap(manager) -> None:
    conn = manager.store.conn()
    seed_item(conn, subject="向后兼容", statement="不做")
    terms = RecallQuery("general_chat", "向后兼容").base_terms()
    assert "向后兼容" in terms and {"向后", "后兼", "兼容"} <= set(terms)
    # a run longer than the bigram cap: the saved subject beyond the 32nd bigram is not seen
    filler = "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏闰余成岁律吕调阳云腾致雨露结为霜"
    assert len(filler) > 33
    long_query = filler + "向后兼容"
    assert len(RecallQuery("general_chat", long_query).base_terms()) <= 32
    assert session(manager, long_query).memory_map().empty
    assert not session(manager, filler[:10] + "向后兼容").memory_map().empty


# --------------------------------------------------------------------------- budgets


def test_map_budget_truncates_with_omitted_counts_and_omitted_items_stay_searchable(manager) -> None:
    conn = manager.store.conn()
    seeded = seed_many(conn, [dict(subject=f"retry rule {i:02d}", keywords=["retry"], statement=(
        f"Rule {i:02d}: retries wait with jitter and give up after a bounded number of attempts.")) for i in range(30)])
    s = session(manager, "how do we retry", map_tokens=300)
    mm = s.memory_map()
    assert 0 < len(mm.relevant) < 30
    assert mm.omitted_relevant == 30 - len(mm.relevant) and mm.omitted_standing == 0
    assert sum(estimate_tokens(item_line(m)) + 1 for m in mm.relevant) <= 300
    assert f"({mm.omitted_relevant} more matching item(s) omitted" in mm.render()
    # the kept ones are the best-ranked (ties → logical ID order), the rest reachable by search
    assert ids(mm.relevant) == sorted(x.logical_id for x in seeded)[: len(mm.relevant)]
    omitted = next(x for x in seeded if x.logical_id not in mm.ids)
    n = [x.logical_id for x in seeded].index(omitted.logical_id)
    assert omitted.logical_id in [r["id"] for r in s.search(f"retry rule {n:02d}")]
    # a larger budget shows them all
    assert len(session(manager, "how do we retry", map_tokens=5000).memory_map().relevant) == 30


def test_hundreds_of_always_items_do_not_starve_the_relevant_lane(manager) -> None:
    conn = manager.store.conn()
    seed_many(conn, [dict(kind="user_preference", recall_mode="always", subject=f"house rule {i:03d}",
                          statement=f"House rule {i:03d}: keep functions short and names descriptive, always.")
                     for i in range(300)])
    wanted = seed_many(conn, [dict(subject=f"flaky test policy {i}", statement="Quarantine flaky tests.")
                              for i in range(3)])
    mm = session(manager, "what is our flaky test policy", map_tokens=1500).memory_map()
    assert ids(mm.relevant) == sorted(w.logical_id for w in wanted)
    assert mm.omitted_standing > 0 and len(mm.standing) > 0
    assert len(mm.standing) + mm.omitted_standing == 300
    # without relevant hits, the standing lane may use the whole budget
    alone = session(manager, "nothing matches this", map_tokens=1500).memory_map()
    assert len(alone.standing) > len(mm.standing)
