"""`consolidation.related_items`: the candidate's identity holder first, then items sharing
subject/alias/keyword/check-ID terms — most shared first, newest first — each term reading only its
newest MAX_ROWS_PER_TERM index rows, and only active items."""

from __future__ import annotations

import pytest

from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.pipeline import consolidation
from autopatch_tui.core.pipeline.consolidation import Candidate, related_items
from tests.support.recall_seed import seed_item


def candidate(subject: str, *, keywords: tuple[str, ...] = (), aliases: tuple[str, ...] = ()) -> Candidate:
    return Candidate("cand-1", None, {"kind": "project_decision", "subject": subject, "statement": "s",
                                      "content": "", "strength": "hard", "origin": "explicit",
                                      "recall_mode": "on_match", "applies_to_paths": [], "aliases": list(aliases),
                                      "keywords": list(keywords)}, [])


def subjects(rows) -> list[str]:
    return [r["subject"] for r in rows]


def test_holder_first_then_most_shared_then_newest(manager) -> None:
    conn = manager.store.conn()
    for subject in ("retry policy",  # shares "retry" only (older)
                    "retry budget",  # shares "retry" only (newer)
                    "retry backoff jitter",  # shares "retry" and "backoff"
                    "cache sizing"):  # shares nothing
        seed_item(conn, subject=subject, statement=f"About {subject}.")
    holder = seed_item(conn, subject="network backoff", statement="The candidate's identity holder.")
    rows = related_items(conn, [candidate("network backoff", keywords=("retry",))])
    assert subjects(rows) == ["network backoff", "retry backoff jitter", "retry budget", "retry policy"]
    assert rows[0]["logical_id"] == holder.logical_id
    assert related_items(conn, [candidate("network backoff", keywords=("retry",))], limit=2) == rows[:2]


def test_each_term_reads_only_its_newest_rows_and_only_active_items_return(manager,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    conn = manager.store.conn()
    alpha, beta, gamma = (seed_item(conn, subject=f"parser {n}", statement=f"Parser {n}.")
                          for n in ("alpha", "beta", "gamma"))
    monkeypatch.setattr(consolidation, "MAX_ROWS_PER_TERM", 2)
    assert subjects(related_items(conn, [candidate("parser")])) == ["parser gamma", "parser beta"]
    manager.forget(gamma.logical_id)  # its index rows go with it: the older item comes into reach
    assert subjects(related_items(conn, [candidate("parser")])) == ["parser beta", "parser alpha"]
    with write_txn(conn):  # a row that is not active is never returned, even if index rows remain
        conn.execute("UPDATE memory_items SET status = 'superseded' WHERE row_id = ?", (beta.row_id,))
    assert subjects(related_items(conn, [candidate("parser")])) == ["parser alpha"]
    assert alpha.logical_id == related_items(conn, [candidate("parser")])[0]["logical_id"]


def _naive_related(conn, cand: Candidate, limit: int, cap: int) -> list[int]:
    """The reference: per term, its phrase postings sorted newest first (item, field, phrase, all
    descending), the first `cap` of them; items counted over all terms, most shared first, newest
    first. Plain Python over the whole postings table."""
    from collections import Counter

    from autopatch_tui.core.recall import postings
    from autopatch_tui.core.recall.phrase_index import PHRASE_FIELDS
    from autopatch_tui.core.recall.terms import phrase_terms

    fields = {code for name, code in postings.FIELD.items() if name in PHRASE_FIELDS}
    terms: list[str] = []
    for phrase in [cand.fields["subject"], *cand.fields["aliases"], *cand.fields["keywords"]]:
        terms.extend(t for t in phrase_terms(str(phrase)) if t not in terms)
    ids = dict(conn.execute("SELECT term, id FROM recall_dict").fetchall())
    rows = conn.execute("SELECT term_id, field, item_row_id, phrase FROM recall_postings").fetchall()
    counts: Counter[int] = Counter()
    for term in terms[:consolidation.MAX_RELATED_TERMS]:
        mine = sorted(((item, field, phrase) for term_id, field, item, phrase in rows
                       if term_id == ids.get(term) and field in fields), reverse=True)
        counts.update(item for item, _, _ in mine[:cap])
    return [item for item, _ in sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0]))][:limit]


@pytest.mark.parametrize("cap", [1, 3, 7, 200])
def test_shared_terms_match_the_naive_reading_of_the_postings(manager, monkeypatch: pytest.MonkeyPatch,
                                                              cap: int) -> None:
    """The statement reading each term's newest rows (a merge of the phrase fields' ranges, stopped at
    the cap) picks exactly the items the plain reading does, with a term posted in several fields of
    one item (counted once per posting), across subjects, aliases, keywords and check IDs, and a cap
    that cuts a term's rows in the middle of an item's fields."""
    import random

    from tests.support.recall_seed import seed_many

    conn = manager.store.conn()
    rng = random.Random(33)
    words = ["retry", "cache", "parser", "lease", "budget", "schema", "index", "worker", "queue", "token"]
    specs = []
    for n in range(60):
        specs.append({"subject": f"{' '.join(rng.sample(words, 2))} rule {n}", "statement": f"Rule {n}.",
                      "aliases": [" ".join(rng.sample(words, 2)) for _ in range(rng.randint(0, 2))],
                      "keywords": [rng.choice(words) for _ in range(rng.randint(0, 2))]
                      + (["python:S1481"] if n % 7 == 0 else [])})
    seed_many(conn, specs)
    monkeypatch.setattr(consolidation, "MAX_ROWS_PER_TERM", cap)
    probes = [candidate("retry cache", keywords=("parser",)), candidate("lease", aliases=("budget schema",)),
              candidate("index worker queue token", keywords=("python:S1481", "retry")), candidate("nothing shared")]
    for probe in probes:
        for limit in (1, 5, 24):
            want = _naive_related(conn, probe, limit, cap)
            got = [r["row_id"] for r in related_items(conn, [probe], limit=limit)]
            assert got == want, (probe.fields["subject"], limit, cap)
    assert any(_naive_related(conn, p, 24, cap) for p in probes)
