"""The standing lane built from shared per-version bases: the project items' base is shared by every
thread and intent, a thread's `always` discussions stay in that thread's lane only, and the lane
equals the naive reference for every combination (ordering by logical ID across both bases)."""

from __future__ import annotations

from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from tests.support.recall_seed import active_thread, map_keys, naive_map, seed_item


def test_thread_discussions_stay_in_their_thread_and_merge_by_logical_id(manager) -> None:
    conn = manager.store.conn()
    a = active_thread(conn)
    b = "thr-other"
    conn.execute("INSERT INTO threads (id, status, created_at, archived_at) VALUES (?, 'archived', 1, 1)", (b,))
    project = [seed_item(conn, subject=f"rule {n}", statement=f"Always follow rule {n}.", recall_mode="always")
               for n in range(3)]
    talk_a = seed_item(conn, kind="discussion_context", subject="open question a", statement="Still open.",
                       recall_mode="always", strength="soft", thread_id=a)
    talk_b = seed_item(conn, kind="discussion_context", subject="open question b", statement="Still open.",
                       recall_mode="always", strength="soft", thread_id=b)
    scoped = seed_item(conn, subject="net rule", statement="Retry twice.", recall_mode="always",
                       applies_to_paths=["src/net"])
    for thread, mine, other in ((a, talk_a, talk_b), (b, talk_b, talk_a)):
        for intent, paths in (("general_chat", ()), ("general_chat", ("src/net/x.py",)), ("code_audit", ("src/net/x.py",))):
            policy = policy_for(intent, thread)
            q = RecallQuery(intent, "", paths)
            got = build_map(conn, q, policy, budget_tokens=4000)
            assert map_keys(got) == map_keys(naive_map(conn, q, policy, budget_tokens=4000)), (thread, intent, paths)
            ids = [m.row["logical_id"] for m in got.standing]
            assert other.logical_id not in ids
            assert (mine.logical_id in ids) == (intent == "general_chat")
            assert (scoped.logical_id in ids) == bool(paths) and (not paths or ids[0] == scoped.logical_id)
            assert {p.logical_id for p in project} <= set(ids)


def test_the_scope_index_gives_every_rows_path_applicability() -> None:
    # the index looks up a scope's own prefixes instead of testing every row: it must agree with
    # `path_applicability` on literal, universal, glob, unnormalized and look-alike entries
    import json
    import random

    from autopatch_tui.core.recall.matching import path_applicability
    from autopatch_tui.core.recall.memory_map import _ScopeIndex

    paths_pool = ["src/net/client.py", "src/net", "src", "docs/a.md", "./src//net/x.py", "lib/[id].tsx", "srcx/a.py",
                  "src/NET/client.py", "", "src/net/client.py/extra", " src / net "]
    applies_pool = [[], [""], ["*"], ["**"], ["src"], ["src/"], ["src/net"], ["src/net/client.py"], ["docs", "src/net"],
                    ["**/*.py"], ["src/*"], ["src/*.py"], ["*.md"], ["lib/[id].tsx"], ["srcx"], ["src/net/**"],
                    ["SRC"], ["src/net/client.py/extra"], ["./src//net"], ["src/n?t", "docs"], ["src", "src/net/client.py"]]
    rng = random.Random(8)
    rows = [{"applies_to_paths": json.dumps(rng.choice(applies_pool))} for _ in range(120)]
    index = _ScopeIndex(rows)  # type: ignore[arg-type]
    for _ in range(300):
        paths = tuple(rng.sample(paths_pool, rng.randint(0, 3)))
        want = {i: s for i, r in enumerate(rows) if (s := path_applicability(r["applies_to_paths"], paths)) >= 0}
        assert index.specificities(paths) == want, paths


def test_the_fill_that_skips_by_byte_scan_keeps_exactly_the_greedy_fill(manager, monkeypatch) -> None:
    # long lanes are walked with skip bytes (lower bounds, then exact costs once known, shared by the
    # lanes of a base): lowered threshold, items of very different line costs, tight budgets, the
    # same scopes again (bytes already holding exact costs), globs that split the project-wide range
    import random

    from autopatch_tui.core.recall import memory_map
    from tests.support.recall_seed import seed_many

    monkeypatch.setattr(memory_map, "SKIP_SCAN_MIN", 3)
    conn = manager.store.conn()
    rng = random.Random(5)
    specs = []
    for n in range(90):
        statement = rng.choice(["Short.", "Keep it " + "very " * rng.randint(1, 40) + "short.",
                                "向后兼容" * rng.randint(1, 30), "x" * rng.randint(200, 400)])
        specs.append({"subject": f"rule {n:02d} " + "w" * rng.randint(0, 30), "statement": statement,
                      "recall_mode": "always", "kind": rng.choice(["user_preference", "project_decision"]),
                      "applies_to_paths": rng.choice([[], [], [], ["src"], ["src/net"], ["**/*.py"], ["*"], ["docs"]])})
    seed_many(conn, specs)
    scopes = [(), ("src/net/x.py",), ("docs/a.md",), ("lib/z.py",), ("src/net/x.py", "docs")]
    cases = [(paths, budget, intent) for paths in scopes for budget in (12, 40, 90, 300, 1200)
             for intent in ("general_chat", "code_audit")]
    # every budget in a range: some leave exactly an item's cost as the room (an off-by-one skips it)
    cases += [(paths, budget, "general_chat") for paths in scopes[:2] for budget in range(30, 230)]
    for _ in range(2):
        for paths, budget, intent in cases:
            policy = policy_for(intent, None)
            q = RecallQuery(intent, "", paths)
            got = map_keys(build_map(conn, q, policy, budget_tokens=budget))
            with monkeypatch.context() as plain:  # the reference walks every item
                plain.setattr(memory_map, "SKIP_SCAN_MIN", 10**9)
                want = map_keys(naive_map(conn, q, policy, budget_tokens=budget))
            assert got == want, (paths, budget, intent)
