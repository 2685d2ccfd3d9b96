"""The spec's example: after the Chinese decision "旧 memory schema 不兼容，直接删除" is consolidated,
`memory search "backward compatibility"` returns it — seeded through the Store's writer, and once end
to end through `ask` → extraction → consolidation against the stub model."""

from __future__ import annotations

import json

from tests.support.fixtures import db_path as store_db
from tests.support.fixtures import query
from tests.support.recall_seed import seed_item

DECISION = "旧 memory schema 不兼容，直接删除"


def test_seeded_chinese_decision_is_found_by_its_english_alias_from_the_shell(manager, invoke_cli) -> None:
    item = seed_item(manager.store.conn(), subject="旧 memory schema", statement=DECISION,
                     aliases=["backward compatibility", "delete legacy schema"], keywords=["schema v4"])
    manager.close()
    rc, out, err = invoke_cli("memory", "search", "backward compatibility", json=True)
    assert rc == 0, err
    assert out == {"results": [{"id": item.logical_id, "kind": "project_decision", "subject": "旧 memory schema",
                                "statement": DECISION, "match_type": "alias"}], "next": None}
    # the same item for other phrasings: the other alias, and an unspaced Chinese question
    rc, out, _ = invoke_cli("memory", "search", "should we delete the legacy schema?", json=True)
    assert [r["id"] for r in out["results"]] == [item.logical_id]
    rc, out, _ = invoke_cli("memory", "search", "旧memory schema还要兼容吗", json=True)
    assert [r["id"] for r in out["results"]] == [item.logical_id]
    # and nothing for an unrelated query
    rc, out, _ = invoke_cli("memory", "search", "forward the port", json=True)
    assert rc == 0 and out == {"results": [], "next": None}


def _payload(request) -> dict:
    return json.loads(request.messages[-1]["content"])


def _extraction(request) -> dict:
    turn = _payload(request)["turns"][0]
    return {"thread_checkpoint": "User decided to drop the old memory schema.", "candidates": [{
        "kind": "project_decision", "subject": "旧 memory schema 处理", "statement": DECISION,
        "content": "旧的 memory schema 与 v4 不兼容；不做迁移，直接删除。", "strength": "hard", "origin": "explicit",
        "recall_mode": "on_match", "applies_to_paths": [], "aliases": ["backward compatibility"],
        "keywords": ["memory schema"],
        "sources": [{"turn_id": turn["turn_id"], "role": "user", "quote": DECISION}]}]}


def _consolidation(request) -> dict:
    cand = _payload(request)["candidates"][0]
    fields = {k: cand[k] for k in ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
                                   "applies_to_paths", "keywords")}
    return {"operations": [{"operation": "create", "candidate_ids": [cand["candidate_id"]], "target_id": None,
                            **fields, "aliases": cand["aliases"] + ["delete legacy schema"]}]}


def test_end_to_end_ask_extraction_consolidation_then_memory_search(repo, llm_stub, invoke_cli, run_cli) -> None:
    llm_stub.default("classify", "general_chat")
    llm_stub.default("chat", "好的：旧 schema 直接删除，不做向后兼容。")
    llm_stub.default("extraction", _extraction)
    llm_stub.default("consolidation", _consolidation)
    env = {"AUTOPATCH_LLM_BASE_URL": llm_stub.base_url, "AUTOPATCH_LLM_MODEL": "gpt-4o"}

    rc, out, err = invoke_cli("ask", DECISION, json=True, env=env)
    assert rc == 0, err
    assert out["state"] == "completed"
    assert len(llm_stub.requests_for("extraction")) == 1 and len(llm_stub.requests_for("consolidation")) == 1
    rows = query(store_db(repo), "SELECT logical_id, statement, aliases FROM memory_items WHERE status = 'active'")
    assert len(rows) == 1 and rows[0]["statement"] == DECISION
    assert "backward compatibility" in json.loads(rows[0]["aliases"])

    rc, found, err = run_cli("memory", "search", "backward compatibility", json=True)
    assert rc == 0, err
    assert [(r["id"], r["match_type"]) for r in found["results"]] == [(rows[0]["logical_id"], "alias")]
