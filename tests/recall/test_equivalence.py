"""The indexed recall (term index + SQL) returns exactly what a naive full scan with the same term
functions returns: same matches, same ranking, same Map lanes and omitted counts, same search results.
Run on random bilingual stores, with and without common (high document-frequency) terms."""

from __future__ import annotations

import random

import pytest

from autopatch_tui.core.recall import matching
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from autopatch_tui.core.recall.session import RecallSession
from tests.support.recall_seed import (
    SyntheticCorpus,
    map_keys,
    match_keys,
    naive_map,
    naive_matches,
    naive_search,
)


@pytest.mark.parametrize(("seed", "common_cap"), [(1, 15), (2, 40), (3, matching.COMMON_TERM_ITEMS)])
def test_indexed_recall_equals_the_naive_full_scan(manager, monkeypatch, seed: int, common_cap: int) -> None:
    monkeypatch.setattr(matching, "COMMON_TERM_ITEMS", common_cap)
    conn = manager.store.conn()
    corpus = SyntheticCorpus(seed=seed, en_words=220, zh_words=160)
    threads = corpus.populate(conn, 240, seed=seed)
    queries = corpus.queries(conn, 28, seed=seed + 10)
    rng = random.Random(seed)
    nonempty = common = 0
    for n, (text, paths) in enumerate(queries):
        intent = ("general_chat", "code_explain", "code_audit", "patch_explain")[n % 4]
        thread = threads[n % len(threads)]
        policy = policy_for(intent, thread)
        q = RecallQuery(intent, text, paths)
        base = q.base_terms()
        common += bool(matching.common_terms(conn, base))
        got = matching.lexical_matches(conn, base, policy, q.paths)
        assert match_keys(got) == match_keys(naive_matches(conn, base, policy, q.paths)), (text, paths, intent)
        nonempty += bool(got)
        budget = rng.choice((120, 400, 1500))
        assert map_keys(build_map(conn, q, policy, budget_tokens=budget)) == \
            map_keys(naive_map(conn, q, policy, budget_tokens=budget)), (text, paths, intent, budget)
        explicit = queries[(n + 7) % len(queries)][0]
        session = RecallSession(manager.store.conn, q, policy)
        assert session.search(explicit) == naive_search(conn, q, policy, explicit), (explicit, text)
    assert nonempty >= len(queries) // 3  # the comparison is not vacuous
    if common_cap < 100:
        assert common > 0  # ... and the common-term path was exercised


def test_request_path_specificity_agrees_with_the_reference() -> None:
    paths_pool = ["src/net/client.py", "src/net", "src", "docs/a.md", "./src//net/x.py", "lib/[id].tsx", "srcx/a.py",
                  "src/NET/client.py", ""]
    applies_pool = [[], [""], ["*"], ["**"], ["src"], ["src/"], ["src/net"], ["src/net/client.py"], ["docs", "src/net"],
                    ["**/*.py"], ["src/*"], ["src/*.py"], ["*.md"], ["lib/[id].tsx"], ["srcx"], ["src/net/**"],
                    ["SRC"], ["src/net/client.py/extra"]]
    rng = random.Random(4)
    import json

    for _ in range(400):
        paths = tuple(rng.sample(paths_pool, rng.randint(0, 3)))
        spec = matching._Specificity(paths)
        for applies in applies_pool:
            text = json.dumps(applies)
            assert spec(text) == matching.path_applicability(text, paths), (applies, paths)
