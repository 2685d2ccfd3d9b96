"""What promote writes where, and what it refuses (issue 28 items 4–6, issue 30 item 6):
- the root's `CLAUDE.md` is the default target when the root has no `AGENTS.md` (contracts §9):
  creating an `AGENTS.md` would silently stop the `CLAUDE.md` in use from being read;
- markers shown inside a code fence are text, not the section;
- a file the loader would not read (NUL bytes), or a section an open fence would swallow, is
  refused with nothing written;
- an item whose ID is unusual (a hand-edited or merged store) is promoted, its key escaped;
- promoting an item that awaits review keeps it (the diff is the review);
- `forget` of a promoted item says its bullet remains and how to remove it (`--prune`)."""

from __future__ import annotations

import time
from pathlib import Path

from autopatch_tui.core.instructions import section
from autopatch_tui.core.instructions.files import load_instructions
from autopatch_tui.core.manager import MemoryManager
from tests.support.memory_factory import add_item
from tests.support.recall_seed import add_turn, seed_item

REVIEW = {"AUTOPATCH_MEMORY_APPROVAL": "review"}


def item(mgr: MemoryManager, statement: str, *, logical_id: str | None = None) -> str:
    if logical_id is not None:  # a hand-edited or merged store's ID
        return add_item(mgr.store.conn(), subject=statement[:30], statement=statement, logical_id=logical_id).logical_id
    handle = add_turn(mgr, f"please: {statement}", "ok")
    return seed_item(mgr.store.conn(), subject=statement[:30], statement=statement,
                     sources=[(handle.turn_id, "user", statement)]).logical_id


def test_the_roots_claude_md_is_the_default_target_when_there_is_no_agents_md(repo: Path, manager: MemoryManager,
                                                                               invoke_cli) -> None:
    a = item(manager, "Run the linters before a commit.")
    claude = repo / "CLAUDE.md"
    claude.write_text("# How we work\nBe brief.\n", "utf-8")
    rc, doc, err = invoke_cli("memory", "promote", a, "--yes", json=True)
    assert rc == 0 and doc["written"], err
    assert doc["path"] == str(claude) and "b/CLAUDE.md" in doc["diff"]
    assert not (repo / "AGENTS.md").exists()
    assert claude.read_text("utf-8").startswith("# How we work\nBe brief.\n")
    loaded = load_instructions(repo)
    assert loaded.paths == ("CLAUDE.md",) and a in loaded.promoted()  # the file in use holds it
    # an empty AGENTS.md is passed over by the loader: writing it would shadow CLAUDE.md again
    (repo / "AGENTS.md").write_text("\n", "utf-8")
    b = item(manager, "Prefer small commits.")
    rc, doc, err = invoke_cli("memory", "promote", b, "--yes", json=True)
    assert rc == 0 and doc["path"] == str(claude), err
    # with a root AGENTS.md that has text, AGENTS.md is the file read, and the target
    (repo / "AGENTS.md").write_text("# Rules\n", "utf-8")
    rc, doc, err = invoke_cli("memory", "promote", b, "--yes", json=True)
    assert rc == 0 and doc["path"] == str(repo / "AGENTS.md"), err


def test_markers_inside_a_code_fence_are_not_the_section(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Keep functions short.")
    doc_text = ("# Rules\n\nPromote writes a section like this one:\n\n```markdown\n" + section.BEGIN + "\n"
                + section.HEADING + "\n\n- An example. <!-- memory:mem-EXAMPLE -->\n" + section.END + "\n```\n\n"
                "~~~\n" + section.END + "\n~~~\n")
    path = repo / "AGENTS.md"
    path.write_text(doc_text, "utf-8")
    rc, doc, err = invoke_cli("memory", "promote", a, "--yes", json=True)
    assert rc == 0 and doc["written"], err
    text = path.read_text("utf-8")
    assert text.startswith(doc_text)  # the example is left exactly as it was
    assert [b.item_id for b in section.section_bullets(text)] == [a]
    assert a in load_instructions(repo).promoted() and "mem-EXAMPLE" not in load_instructions(repo).promoted()


def test_a_file_the_loader_would_not_read_is_refused(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Tag every release.")
    path = repo / "AGENTS.md"
    path.write_bytes(b"# Rules\x00\n")
    rc, _, err = invoke_cli("memory", "promote", a, "--yes")
    assert rc == 1 and "NUL" in err and "nothing was changed" in err
    assert path.read_bytes() == b"# Rules\x00\n"
    open_fence = "# Rules\n\n```sh\nmake check\n"  # a fence never closed: an appended section is code
    path.write_text(open_fence, "utf-8")
    rc, _, err = invoke_cli("memory", "promote", a, "--yes")
    assert rc == 1 and "code fence" in err
    assert path.read_text("utf-8") == open_fence


def test_an_item_with_an_unusual_id_is_promoted_with_its_key_escaped(repo: Path, manager: MemoryManager,
                                                                     invoke_cli) -> None:
    odd = item(manager, "Name branches after issues.", logical_id="mem-merged.01 from --> them")
    rc, out, err = invoke_cli("memory", "promote", odd, "--yes")
    assert rc == 0, err
    assert "Traceback" not in err
    text = (repo / "AGENTS.md").read_text("utf-8")
    assert "from --> them" not in text and text.count("-->") == 3  # the markers' and the key's own ends only
    assert [b.item_id for b in section.section_bullets(text)] == [odd]
    assert odd in load_instructions(repo).promoted()
    rc, doc, err = invoke_cli("memory", "promote", odd, "--yes", json=True)
    assert rc == 0 and doc["written"] is False, err  # idempotent: the escaped key is found again
    manager.forget(odd)
    rc, doc, err = invoke_cli("memory", "promote", "--prune", "--yes", json=True)
    assert rc == 0 and doc["written"], err
    assert section.section_bullets((repo / "AGENTS.md").read_text("utf-8")) == ()


def test_promoting_an_item_that_awaits_review_keeps_it(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Sign every tag.")
    b = item(manager, "Squash before merging.")
    rc, listed, _ = invoke_cli("memory", "review", json=True, env=REVIEW)
    assert {i["id"] for i in listed["items"]} == {a, b}
    rc, out, err = invoke_cli("memory", "promote", a, env=REVIEW)  # the diff only: nothing kept yet
    assert rc == 0 and "keeps 1 item(s) still awaiting review" in out, err
    assert {i["id"] for i in invoke_cli("memory", "review", json=True, env=REVIEW)[1]["items"]} == {a, b}
    rc, out, err = invoke_cli("memory", "promote", a, "--yes", env=REVIEW)
    assert rc == 0 and "Kept 1 item(s)" in out, err
    assert [i["id"] for i in invoke_cli("memory", "review", json=True, env=REVIEW)[1]["items"]] == [b]
    rc, found, _ = invoke_cli("memory", "list", json=True, env=REVIEW)
    assert {i["id"]: i["review"] for i in found["items"]}[a] == "kept"
    # a bullet already in the file (written by hand or by a teammate's promote): --yes keeps it too
    from autopatch_tui.core.instructions.promote import plan_promotion

    (repo / "AGENTS.md").write_text(plan_promotion(manager, [b]).new_text, "utf-8")
    rc, out, err = invoke_cli("memory", "promote", b, "--yes", env=REVIEW)
    assert rc == 0 and "nothing to write" in out and "Kept 1 item(s)" in out, (out, err)
    assert invoke_cli("memory", "review", json=True, env=REVIEW)[1]["items"] == []


def test_forget_of_a_promoted_item_says_its_bullet_remains_and_how_to_remove_it(
        repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Write tests first.")
    b = item(manager, "Not promoted.")
    assert invoke_cli("memory", "promote", a, "--yes")[0] == 0
    rc, out, err = invoke_cli("memory", "forget", b)
    assert rc == 0 and "remains" not in out  # nothing promoted: nothing to say
    rc, out, err = invoke_cli("memory", "forget", a)
    assert rc == 0, err
    assert "bullet in AGENTS.md remains" in out and "memory promote --prune --to AGENTS.md --yes" in out
    assert a in load_instructions(repo).promoted()  # still there: Memory never edits the file unasked
    rc, out, err = invoke_cli("memory", "promote", "--prune", "--to", "AGENTS.md")
    assert rc == 0 and "-- Write tests first." in out and "--yes" in out
    time.sleep(0)
    rc, out, err = invoke_cli("memory", "promote", "--prune", "--to", "AGENTS.md", "--yes")
    assert rc == 0 and "Removed 1 bullet(s) of items no longer active from AGENTS.md." in out, err
    assert a not in load_instructions(repo).promoted()
    rc, _, err = invoke_cli("memory", "promote")
    assert rc == 2 and "--prune" in err


def test_creating_agents_md_beside_a_claude_md_says_it_replaces_it(repo: Path, manager: MemoryManager,
                                                                    invoke_cli) -> None:
    a = item(manager, "Document public functions.")
    (repo / "CLAUDE.md").write_text("# Claude rules\n", "utf-8")
    rc, out, err = invoke_cli("memory", "promote", a, "--to", "AGENTS.md")
    assert rc == 0 and "stops the root CLAUDE.md from being read" in err and "leave --to off" in err
    assert not (repo / "AGENTS.md").exists()


def test_a_section_past_the_loaders_bound_is_said(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Keep the changelog current.")
    (repo / "AGENTS.md").write_text("# Rules\n" + "a long hand-written rule line\n" * 1300, "utf-8")  # ~38 KB
    rc, out, err = invoke_cli("memory", "promote", a)
    assert rc == 0 and "larger than the 32 KiB the assistant reads" in err
