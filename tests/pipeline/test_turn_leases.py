"""Turn leases live as long as their request (issue 10 §1): the owner renews its open turn — and
only that turn — every heartbeat while the main call runs; the renewals stop when the turn ends;
a turn whose lease was lost while its owner was still running is reported precisely.

The request runs through `ChatService.ask`, exactly as the app's chat worker and `ask` run it;
"another process" is a second `MemoryManager` (another owner) whose start-up recovery and exit
flush run while the stub's chat reply is still being computed."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

from autopatch_tui.core.agent.chat import ChatService
from autopatch_tui.core.errors import MemoryFencedError
from tests.support.pipeline_helpers import ext_reply, rows

LEASE = dict(MEMORY_LEASE_SECONDS=0.3, MEMORY_HEARTBEAT_SECONDS=0.05)


def _turn(mgr, turn_id):
    return rows(mgr, "SELECT state, assistant_text, owner, lease_expires_at FROM turns WHERE id = ?", (turn_id,))[0]


def test_a_main_call_longer_than_the_lease_keeps_its_turn_and_only_it(make_manager, llm_stub):
    mgr = make_manager(**LEASE)
    other = make_manager(**LEASE)  # another owner on the same store: a second process
    llm_stub.default("extraction", ext_reply())
    abandoned = mgr.begin_turn("a turn this owner no longer works on")  # open, but no request runs it
    seen: dict[str, object] = {}

    def chat(_request):
        time.sleep(0.8)  # more than two leases
        seen["recovered"] = other.recover()
        seen["processed"] = other.process_pending().as_dict()
        return "The answer, after a long think."

    llm_stub.default("chat", chat)
    result = ChatService(mgr).ask("Explain the scheduler.", intent="general_chat")

    assert seen["recovered"] == [abandoned.turn_id]  # only the running request's turn was renewed
    assert result.state == "completed"
    row = _turn(mgr, result.turn_id)
    assert (row["state"], row["assistant_text"]) == ("completed", "The answer, after a long think.")
    assert (row["owner"], row["lease_expires_at"]) == (None, None)
    assert _turn(mgr, abandoned.turn_id)["state"] == "interrupted"
    # renewal stopped with the turn: no keeper and no keeper thread is left
    assert mgr.turn_keepers.running() == []
    assert not [t for t in threading.enumerate() if t.name == "memory-heartbeat"]


def test_the_keeper_renews_every_heartbeat_while_the_request_runs(make_manager, llm_stub):
    mgr = make_manager(MEMORY_LEASE_SECONDS=30, MEMORY_HEARTBEAT_SECONDS=0.1)
    expiries: list[float] = []

    def chat(_request):
        for _ in range(3):
            time.sleep(0.15)
            [row] = rows(mgr, "SELECT lease_expires_at FROM turns WHERE state = 'open'")
            expiries.append(row["lease_expires_at"])
        return "done"

    llm_stub.default("chat", chat)
    ChatService(mgr).ask("q", intent="general_chat")
    assert expiries == sorted(expiries) and len(set(expiries)) == 3  # moved forward at each look


def test_a_turn_whose_lease_was_lost_while_its_owner_ran_is_reported_precisely(make_manager, llm_stub):
    # the heartbeat cannot keep up with the lease (a stalled owner): another process recovers the
    # turn and processes it; the owner learns exactly that, with the turn's ID
    mgr = make_manager(MEMORY_LEASE_SECONDS=0.3, MEMORY_HEARTBEAT_SECONDS=30)
    other = make_manager(MEMORY_LEASE_SECONDS=0.3, MEMORY_HEARTBEAT_SECONDS=30)
    llm_stub.default("extraction", ext_reply())

    def chat(_request):
        time.sleep(0.4)
        other.recover()
        other.process_pending()
        return "late answer"

    llm_stub.default("chat", chat)
    with pytest.raises(MemoryFencedError) as caught:
        ChatService(mgr).ask("q", intent="general_chat")
    [turn] = rows(mgr, "SELECT id, state FROM turns")
    assert turn["state"] == "interrupted"
    message = str(caught.value)
    assert type(caught.value).__name__ == "TurnLeaseLostError"
    assert turn["id"] in message and "lease ran out while the request was still running" in message
    assert "late answer" not in message


def test_close_stops_every_keeper_and_nothing_is_renewed_afterwards(make_manager, llm_stub):
    mgr = make_manager(MEMORY_LEASE_SECONDS=30, MEMORY_HEARTBEAT_SECONDS=0.05)
    release = threading.Event()
    started = threading.Event()

    def chat(_request):
        started.set()
        release.wait(5)
        return "answer"

    llm_stub.default("chat", chat)
    worker = threading.Thread(target=lambda: _ask_quietly(mgr), daemon=True)
    worker.start()
    assert started.wait(5)
    mgr.close(join_timeout=2)
    [before] = rows(mgr, "SELECT lease_expires_at FROM turns")
    time.sleep(0.3)
    assert rows(mgr, "SELECT lease_expires_at FROM turns") == [before]
    release.set()
    worker.join(5)


def _ask_quietly(mgr) -> None:
    try:
        ChatService(mgr).ask("q", intent="general_chat")
    except Exception:  # noqa: BLE001 - the store closed under the request; that is the point
        pass


@pytest.mark.parametrize("outcome", ["completes", "raises"])
def test_every_workflow_turn_is_kept_through_failing_turn(make_manager, outcome):
    # RepairService._turn (audit batches, patch explain/revise) and ChatService.ask all run their
    # work inside `failing_turn`: that block alone keeps the turn, and stops keeping it at its end
    mgr = make_manager(**LEASE)
    other = make_manager(**LEASE)
    handle = mgr.begin_turn("/audit src")
    with pytest.raises(RuntimeError) if outcome == "raises" else contextlib.nullcontext():
        with mgr.failing_turn(handle):
            time.sleep(0.6)
            assert other.recover() == []
            if outcome == "raises":
                raise RuntimeError("the scanner broke")
    assert mgr.turn_keepers.running() == []
    if outcome == "completes":
        mgr.complete_turn(handle, "summary")
    assert _turn(mgr, handle.turn_id)["state"] == ("completed" if outcome == "completes" else "failed")
