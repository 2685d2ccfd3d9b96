"""What shaped an answer (issue 31.3): each request records the Memory items that reached it — the
Map's standing lane, a match (relevant lane or memory_search), a memory_read — with ID and revision;
an item held by a promoted AGENTS.md bullet says so; the record survives a restart (History reads
the side file), never holds an item's text, and `memory clear` deletes it."""

from __future__ import annotations

import json

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.instructions import files as inst
from autopatch_tui.core.memory import memory_used
from tests.support.llm_stub import Reply
from tests.support.recall_seed import revise_item, seed_item


def test_standing_matched_read_and_promoted_each_say_how(repo, open_manager, llm_stub, invoke_cli) -> None:
    inst.clear_cache()
    mgr = open_manager(repo)
    conn = mgr.store.conn()
    standing = seed_item(conn, subject="answers", statement="Answer in English.", recall_mode="always")
    promoted = seed_item(conn, subject="make check", statement="Run make check before a patch.",
                         recall_mode="always")
    matched = seed_item(conn, subject="parser design", statement="Keep the parser recursive descent.",
                        keywords=["parser"])
    found = seed_item(conn, subject="release tags", statement="Tag every release SECRETWORD.", keywords=["tags"])
    revise_item(conn, found.logical_id, subject="release tags", keywords=["tags"], statement="Tag every release with a signed tag SECRETWORD.")
    seed_item(conn, subject="unrelated", statement="Deploy with care.", keywords=["deploy"])
    rc, _, err = invoke_cli("memory", "promote", promoted.logical_id, "--yes")
    assert rc == 0, err
    llm_stub.script("chat", Reply(tool_calls=[("memory_search", json.dumps({"query": "release tags"}))]),
                    Reply(tool_calls=[("memory_read", json.dumps({"id": found.logical_id}))]),
                    "The parser is recursive descent.")
    result = ChatService(mgr).ask("How does the parser work?", intent="general_chat")
    used = {u.id: u for u in result.memory_used}
    assert used[standing.logical_id].how == "standing" and used[standing.logical_id].via is None
    assert (used[promoted.logical_id].how, used[promoted.logical_id].via) == ("standing", "AGENTS.md")
    assert used[matched.logical_id].how == "matched"
    assert (used[found.logical_id].how, used[found.logical_id].revision) == ("read", 2)  # read beats matched
    assert len(used) == 4  # the unrelated item never reached the request

    text = mgr.paths.memory_used.read_text(encoding="utf-8")
    assert "SECRETWORD" not in text and "parser" not in text  # IDs only, never an item's text
    assert oct(mgr.paths.memory_used.stat().st_mode & 0o777) == "0o600"
    mgr.close()

    again = open_manager(repo)  # a restart: History reads the file
    memory_used._recent.clear()
    record = memory_used.for_turns(again.paths, [result.turn_id, "turn-unknown"])
    assert set(record) == {result.turn_id}
    assert {u.id: (u.revision, u.how) for u in record[result.turn_id]} == {
        k: (v.revision, v.how) for k, v in used.items()}
    again.clear(confirm=True)
    assert not again.paths.memory_used.exists()
    assert memory_used.for_turns(again.paths, [result.turn_id]) == {}


def test_a_file_that_is_not_ours_is_read_as_nothing_and_a_bad_line_skipped(repo, open_manager) -> None:
    mgr = open_manager(repo)
    path = mgr.paths.memory_used
    path.write_text('garbage\n{"turn": "t1", "items": [{"id": "mem-1", "revision": 1, "how": "read"},'
                    ' {"id": 5, "revision": "x", "how": "??"}]}\n[[[[\n', encoding="utf-8")
    path.chmod(0o600)
    got = memory_used.for_turns(mgr.paths, ["t1"])
    assert [(u.id, u.how) for u in got["t1"]] == [("mem-1", "read")]
