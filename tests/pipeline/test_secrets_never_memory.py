"""Secrets never become Memory (issue 31, deliverable 5; contracts §10): ten kinds of secret planted
in user turns, each proposed by the (stub) model as a candidate that quotes it, are refused with
rule `secret` — counted like every rule — and no item, export, promote, log, status or model-visible
Memory text holds one; the RAW turn keeps what the user typed. A model that writes a secret into an
item at consolidation is refused too, and an item older than the rule is masked wherever it is shown
or written out."""

from __future__ import annotations

import json
import logging

from autopatch_tui.core.instructions.promote import plan_promotion, write_confirmed
from autopatch_tui.core.memory.history import get_turn_info
from autopatch_tui.core.memory.items import show_item
from autopatch_tui.core.memory.turns import active_thread_id
from autopatch_tui.core.recall.memory_map import build_map
from autopatch_tui.core.recall.query import RecallQuery
from autopatch_tui.core.recall.session import RecallSession
from tests.support.pipeline_helpers import (
    active_items,
    add_turn,
    cand,
    consolidate_with,
    db_snapshot,
    ext_reply,
    extract_step,
    jobs,
    op_from_candidate,
    rows,
    seed_consolidation,
    seed_item,
    src,
)

TEN = {  # kind -> a secret of that kind, as a user would paste it
    "openai": "sk-proj-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789abcd",
    "anthropic": "sk-ant-api03-Zq9xW2vB7nM4kL1pO8iU5yT3rE6wQ0aS9dF2gH5jK8lZ1xC4vB7nM0qW3eR6tY9uI2oP5aS8dF1gH4jK7",
    "github": "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",
    "gitlab": "glpat-hellOworld380_testin",
    "slack": "xoxb-34532454-e039d02840a0b9379c",
    "aws": "AKIAZZZZZZZZZZZZZZZZ",
    "google": "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    "stripe": "sk_live_ReTllpYQYfIZu2Jnf2lAPFjD",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "url password": "postgres://deploy:Tr0ub4dor3x@db.internal:5432/app",
}
URL_PASSWORD = "Tr0ub4dor3x"  # what must not leak of the URL (the rest is not secret)


def _leaks(text: str) -> list[str]:
    return [k for k, s in TEN.items() if (URL_PASSWORD if k == "url password" else s) in text]


def test_ten_kinds_of_secret_never_become_memory(pipe, llm_stub, caplog, repo) -> None:
    caplog.set_level(logging.DEBUG)
    turns = []
    for kind, secret in TEN.items():  # one turn per kind, each proposed as a candidate that quotes it
        said = f"From now on always use {secret} for the {kind} deploys."
        t = add_turn(pipe, said, "OK.")
        turns.append(t)
        c = cand(src(t, "user", said), kind="project_decision", subject=f"{kind} deploy credential",
                 statement=f"Always use {secret} for the {kind} deploys.", keywords=[kind])
        # the model also copies the secret into the thread checkpoint, which is sent back to it later
        llm_stub.script("extraction", ext_reply(c, checkpoint=f"The user shared {secret} for deploys."))
        out = pipe.runner.step(force=True)
        assert out is not None and out.kind == "extraction" and out.status == "succeeded_no_output"
    clean = add_turn(pipe, "From now on always run the linter before a commit.", "OK.")
    extract_step(pipe, llm_stub, cand(src(clean, "user", "From now on always run the linter before a commit."),
                                      kind="project_decision", subject="linting",
                                      statement="Run the linter before a commit."))
    while pipe.runner.step(force=True) is not None:  # the consolidation of the one clean candidate
        pass

    items = active_items(pipe)
    assert [i["subject"] for i in items] == ["linting"]  # the clean candidate is kept, every secret refused
    assert pipe.status().refusals == {"secret": 10}  # counted like every rule
    # the RAW turns keep what the user typed (the spec); nothing derived from them holds a secret
    assert all(s in get_raw(pipe, t) for s, t in zip(TEN.values(), turns))
    derived = json.dumps([rows(pipe, "SELECT * FROM memory_items"), rows(pipe, "SELECT * FROM memory_candidates"),
                          rows(pipe, "SELECT * FROM candidate_sources"), rows(pipe, "SELECT * FROM threads"),
                          rows(pipe, "SELECT * FROM memory_jobs")], ensure_ascii=False)
    assert _leaks(derived) == []

    export = pipe.export().read_text("utf-8")
    assert "[masked github token]" in export and _leaks(export) == []  # raw turn text included, masked
    status = json.dumps(pipe.status().model_dump(mode="json"))
    assert _leaks(status) == []
    plan = plan_promotion(pipe, [items[0]["logical_id"]])
    write_confirmed(pipe, plan)
    assert _leaks((repo / "AGENTS.md").read_text("utf-8")) == []
    assert _leaks("\n".join(r.getMessage() for r in caplog.records)) == []
    # model-visible Memory: the Map, memory_search, memory_read
    conn = pipe.store.conn()
    thread = active_thread_id(conn)
    policy = pipe.review.policy("general_chat", thread, conn)
    query = RecallQuery("general_chat", " ".join(f"{k} deploy credential" for k in TEN), ())
    seen = build_map(conn, query, policy, budget_tokens=4000).render()
    session = RecallSession(pipe.store.conn, query, policy)
    seen += json.dumps([session.search(f"{k} deploy") for k in list(TEN)[:4]])
    seen += json.dumps([session.read(i) for i in session.readable])
    assert _leaks(seen) == []


def get_raw(pipe, turn) -> str:
    return rows(pipe, "SELECT user_text FROM turns WHERE id = ?", (turn.turn_id,))[0]["user_text"]


def test_a_model_that_writes_a_secret_into_an_item_at_consolidation_is_refused(pipe, llm_stub) -> None:
    t = add_turn(pipe, "Always deploy with the staging profile.", "OK.")
    seed_consolidation(pipe, [cand(src(t, "user", "Always deploy with the staging profile."),
                                            kind="project_decision", subject="deploy profile",
                                            statement="Deploy with the staging profile.")])
    leak = consolidate_with(lambda p: [op_from_candidate(
        "create", p["candidates"][0], statement=f"Deploy with the staging profile; token {TEN['github']}.")])
    llm_stub.script("consolidation", leak)
    llm_stub.script("consolidation_repair", leak)  # the one repair does it again: the job fails
    pipe.runner.step(force=True)
    assert active_items(pipe) == []
    [failed] = jobs(pipe, "consolidation")
    assert failed["status"] == "failed" and failed["failure_rule"] == "secret"
    assert _leaks(db_snapshot(pipe)) == []  # the model's secret is nowhere: its rejected reply is never stored


def test_a_repaired_consolidation_without_the_secret_is_stored_with_the_rule_as_its_verdict(pipe, llm_stub) -> None:
    t = add_turn(pipe, "Always deploy with the staging profile.", "OK.")
    seed_consolidation(pipe, [cand(src(t, "user", "Always deploy with the staging profile."),
                                   kind="project_decision", subject="deploy profile",
                                   statement="Deploy with the staging profile.")])
    llm_stub.script("consolidation", consolidate_with(lambda p: [op_from_candidate(
        "create", p["candidates"][0], content=f"password is {URL_PASSWORD}")]))
    llm_stub.script("consolidation_repair", consolidate_with(lambda p: [op_from_candidate("create", p["candidates"][0])]))
    pipe.runner.step(force=True)
    assert [i["subject"] for i in active_items(pipe)] == ["deploy profile"]
    assert jobs(pipe, "consolidation")[0]["failure_rule"] == "secret:1"
    assert URL_PASSWORD not in db_snapshot(pipe)


def test_an_item_older_than_the_rule_is_masked_where_it_is_shown_or_written_out(pipe, repo) -> None:
    old = seed_item(pipe, subject="ci token", statement=f"CI uses {TEN['gitlab']} to push tags.",
                    recall_mode="always")
    assert TEN["gitlab"] in json.dumps(rows(pipe, "SELECT statement FROM memory_items"))  # as it was stored
    detail = show_item(pipe.store.conn(), old)
    assert _leaks(detail.model_dump_json()) == [] and "[masked gitlab token]" in detail.statement
    assert _leaks(pipe.export().read_text("utf-8")) == []
    write_confirmed(pipe, plan_promotion(pipe, [old]))
    assert _leaks((repo / "AGENTS.md").read_text("utf-8")) == []
    conn = pipe.store.conn()
    policy = pipe.review.policy("general_chat", active_thread_id(conn), conn)
    session = RecallSession(pipe.store.conn, RecallQuery("general_chat", "ci token", ()), policy)
    shown = session.memory_map().render()
    assert old in shown and "[masked gitlab token]" in shown  # the item is in the Map, its secret is not
    assert _leaks(json.dumps([shown, session.search("ci token"), session.read(old)])) == []


def test_history_masks_the_raw_turn_on_display_only(pipe) -> None:
    t = add_turn(pipe, f"here is the key {TEN['aws']} for the bucket", f"Noted {TEN['stripe']}.")
    shown = get_turn_info(pipe.store.conn(), t.turn_id)
    assert _leaks(shown.user_text + shown.assistant_text) == []
    assert "[masked aws access key]" in shown.user_text
    assert TEN["aws"] in get_raw(pipe, t)  # the store keeps the RAW turn as typed


def test_merge_evidence_masks_an_older_items_secret_and_a_token_in_the_remote(pipe) -> None:
    from autopatch_tui.core.stores.info import read_store_info
    from autopatch_tui.core.stores.scan import evidence

    seed_item(pipe, subject=f"deploy key {TEN['aws']}", statement=f"Deploy with {TEN['slack']} as the bot.")
    conn = pipe.store.conn()
    conn.execute("UPDATE memory_meta SET remote = ?", (f"https://oauth2:{TEN['gitlab']}@gitlab.com/org/app.git",))
    shown = json.dumps(evidence(read_store_info(pipe.paths.db)))
    assert _leaks(shown) == [] and "[masked aws access key]" in shown
