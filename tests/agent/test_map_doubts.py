"""The Memory Map marks an item whose claim the repository contradicts (issue 31, deliverable 4;
contracts §10): the model sees the doubt beside the item, and only while the repository disagrees."""

from __future__ import annotations

from tests.support.recall_seed import seed_item

from .conftest import chat_requests

DOUBT = ("(the repository disagrees: says pnpm (javascript package manager); package-lock.json exists, "
         "no pnpm-lock.yaml)")


def _map_of_next_request(chat, llm_stub) -> str:
    llm_stub.script("chat", "ok")
    chat.ask("how do we install dependencies with the package manager?", intent="general_chat")
    return chat_requests(llm_stub)[-1].messages[0]["content"].partition("Project Memory Map")[2]


def test_the_map_says_when_the_repository_disagrees_and_stops_when_it_agrees(chat_mgr, chat, llm_stub, repo) -> None:
    conn = chat_mgr.store.conn()
    item = seed_item(conn, subject="package manager", statement="Always use pnpm for installs.",
                     recall_mode="always").logical_id
    other = seed_item(conn, subject="commit style", statement="Write commit messages in English.",
                      recall_mode="always").logical_id
    assert DOUBT not in _map_of_next_request(chat, llm_stub)  # no lock file at all: nothing to check
    (repo / "package-lock.json").write_text("{}")
    shown = _map_of_next_request(chat, llm_stub)
    line = next(li for li in shown.splitlines() if item in li)
    assert line.endswith(DOUBT)
    assert "disagrees" not in next(li for li in shown.splitlines() if other in li)
    (repo / "pnpm-lock.yaml").write_text("lockfileVersion: 9\n")  # now the repository agrees
    assert "disagrees" not in _map_of_next_request(chat, llm_stub)
