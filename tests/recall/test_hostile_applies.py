"""A store from someone else's repository can hold an applies-to list the schema accepts (valid
JSON) but no writer of ours produces: a number, an object, entries that are not strings. Such an
entry covers no path — the item is never project-wide because of it — and neither the Map nor the
review summary fails on it."""

from __future__ import annotations

import pytest

from autopatch_tui.core.pipeline import summary, summary_state
from autopatch_tui.core.recall.matching import path_applicability
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery, policy_for
from tests.support.recall_seed import active_thread, map_keys, naive_map, seed_item

ODD = ('[1]', '[null, "src/a.py"]', '3', '{"src": 1}', '"src/a.py"', '[["src"]]')


@pytest.mark.parametrize("applies", ODD)
def test_an_entry_that_is_not_a_path_covers_nothing(applies: str) -> None:
    assert path_applicability(applies, ()) == -1  # never project-wide
    want = path_applicability('["src/a.py"]', ("src/a.py",)) if "src/a.py" in applies and applies.startswith("[") \
        else -1
    assert path_applicability(applies, ("src/a.py",)) == want
    assert path_applicability(applies, ("lib/b.py",)) == -1


def test_the_map_and_the_summary_survive_odd_applies_lists(manager) -> None:
    conn = manager.store.conn()
    thread = active_thread(conn)
    plain = seed_item(conn, subject="tabs rule", statement="Always use tabs.", recall_mode="always")
    odd = []
    for n, applies in enumerate(ODD):
        item = seed_item(conn, subject=f"odd rule {n}", statement=f"Odd rule {n}.", recall_mode="always")
        conn.execute("UPDATE memory_items SET applies_to_paths = ? WHERE logical_id = ?", (applies, item.logical_id))
        odd.append(item)
    for paths in ((), ("src/a.py",), ("lib/b.py",)):
        q = RecallQuery("general_chat", "tabs rule", paths)
        policy = policy_for("general_chat", thread)
        got = build_map(conn, q, policy, budget_tokens=4000)
        ids = {m.row["logical_id"] for m in got.standing}
        assert plain.logical_id in ids
        in_scope = {odd[1].logical_id} if paths == ("src/a.py",) else set()
        assert ids & {o.logical_id for o in odd} == in_scope, paths
        assert map_keys(got) == map_keys(naive_map(conn, q, policy, budget_tokens=4000))
    text, _ = summary.render(conn, now=1.0)
    assert "odd rule 0" in text and "(not a path)" in text
    summary_state.reset()
    assert summary_state.render(conn, now=1.0) == summary.render(conn, now=1.0)
