"""Issue 31 from the shell (contracts §4): `memory remember TEXT [--json]` prints a receipt;
`memory refused [--json]` and `memory refused keep N [--json]`; `ask --json` gains `memory_used`
(IDs, revisions and how — never the items' text in the log); bad input exits 2 / 1 with a sentence."""

from __future__ import annotations

import json

from tests.support.fixtures import db_path, is_error_doc, query
from tests.support.pipeline_helpers import cand, create_all, ext_reply, src

SUMMARY_KEYS = {"id", "kind", "subject", "statement", "strength", "origin", "recall_mode", "applies_to_paths",
                "updated_at"}


def _reply(quote: str, **fields):
    def reply(req) -> dict:
        turn = json.loads(req.messages[-1]["content"])["turns"][-1]
        return ext_reply(cand(src(turn["turn_id"], "user", quote), **fields))
    return reply


def test_remember_prints_the_receipt_and_json(repo, model_env, llm_stub, invoke_cli) -> None:
    llm_stub.default("consolidation", create_all)
    llm_stub.script("extraction", _reply("always answer in English", subject="answer language",
                                         statement="Always answer in English."))
    rc, out, err = invoke_cli("memory", "remember", "From now on always answer in English.", json=True)
    assert rc == 0, err
    assert set(out) == {"turn_id", "remembered", "refused"} and out["refused"] == []
    [item] = out["remembered"]
    assert set(item) == SUMMARY_KEYS and item["statement"] == "Always answer in English."
    [row] = query(db_path(repo), "SELECT user_text FROM turns WHERE id = ?", (out["turn_id"],))
    assert row[0] == "/remember From now on always answer in English."

    llm_stub.script("extraction", _reply("the CI runs on GitHub Actions", kind="project_decision", subject="ci",
                                         statement="The CI runs on GitHub Actions."))
    rc, text, err = invoke_cli("memory", "remember", "the CI runs on GitHub Actions")
    assert rc == 0, err
    assert "not remembered · a fact about the code, not a decision" in text

    rc, listed, err = invoke_cli("memory", "refused", json=True)
    assert rc == 0, err
    [entry] = listed["refused"]
    assert set(entry) == {"n", "rule", "words", "quote", "turn_id", "kind", "statement"}
    assert (entry["n"], entry["rule"], entry["quote"]) == (1, "code_fact", "the CI runs on GitHub Actions")

    rc, kept, err = invoke_cli("memory", "refused", "keep", "1", json=True)
    assert rc == 0, err
    assert set(kept) == {"kept"} and kept["kept"]["statement"] == "The CI runs on GitHub Actions."
    rc, shown, err = invoke_cli("memory", "show", kept["kept"]["id"])
    assert "kept over rule: a fact about the code, not a decision (code_fact)" in shown
    rc, listed, err = invoke_cli("memory", "refused", json=True)
    assert listed == {"refused": []}
    rc, review, err = invoke_cli("memory", "list", json=True)
    assert {i["id"]: i["review"] for i in review["items"]} == {item["id"]: "kept", kept["kept"]["id"]: "kept"}


def test_bad_input_gives_a_sentence_and_the_right_code(repo, model_env, llm_stub, invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "remember", "   ", json=True)
    assert rc == 2 and is_error_doc(out, 2)
    rc, out, err = invoke_cli("memory", "refused", "keep", "x", json=True)
    assert rc == 2 and is_error_doc(out, 2)
    rc, out, err = invoke_cli("memory", "refused", "keep", "3", json=True)
    assert rc == 1 and is_error_doc(out, 1) and "no refused candidate number 3" in out["error"]["message"]
    assert "Traceback" not in err


def test_remember_without_a_model_says_so_and_keeps_the_turn(repo, invoke_cli, llm_stub) -> None:
    rc, out, err = invoke_cli("memory", "remember", "Always use tabs.", json=True)
    assert rc == 0 and out["remembered"] == [] and "no Memory model" in err
    [row] = query(db_path(repo), "SELECT j.status FROM memory_jobs j WHERE j.turn_id = ?", (out["turn_id"],))
    assert row[0] == "pending"


def test_ask_json_names_the_items_that_reached_the_request(repo, model_env, llm_stub, invoke_cli,
                                                           isolated_env) -> None:
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.settings import load_settings
    from tests.support.memory_factory import add_item

    mgr = MemoryManager.open(repo, load_settings())
    try:
        conn = mgr.store.conn()
        standing = add_item(conn, subject="answers", statement="Answer in English.", recall_mode="always",
                            strength="hard")
        matched = add_item(conn, subject="parser design", statement="The parser stays recursive descent.",
                           keywords=["parser"])
        add_item(conn, subject="unrelated", statement="Deploy on Fridays never.", keywords=["deploy"])
    finally:
        mgr.close()
    llm_stub.default("chat", "It is a recursive descent parser.")
    rc, out, err = invoke_cli("ask", "How does the parser work?", "--intent", "general_chat", json=True)
    assert rc == 0, err
    used = {u["id"]: u for u in out["memory_used"]}
    assert used == {standing.logical_id: {"id": standing.logical_id, "revision": 1, "how": "standing"},
                    matched.logical_id: {"id": matched.logical_id, "revision": 1, "how": "matched"}}
    log = (isolated_env / "logs" / "autopatch.log")
    if log.exists():
        assert "recursive descent" not in log.read_text(encoding="utf-8")
