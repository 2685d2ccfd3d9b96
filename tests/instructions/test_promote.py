"""`memory promote ID... [--to PATH] [--yes] [--json]` (contracts §9): reviewed Memory items into one
marked section of an instruction file — a diff without `--yes`; one bullet per item (statement,
the user's quote, its date); idempotent; re-promote replaces; text outside the section never
changes; forgotten items' bullets go; atomic, mode kept, never through a link; `--to` outside the
repository rc 2; a read-only file rc 1 with nothing changed; only active items."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from autopatch_tui.core.instructions import section
from autopatch_tui.core.instructions.promote import plan_promotion, write_confirmed, write_promotion
from autopatch_tui.core.manager import MemoryManager
from tests.support.recall_seed import add_turn, revise_item, seed_item

DAY = time.mktime((2026, 11, 3, 12, 0, 0, 0, 0, -1))


def item(mgr: MemoryManager, statement: str, quote: str, *, subject: str | None = None, when: float = DAY) -> str:
    """An active item whose provenance is `quote`, said by the user in a turn of `when`."""
    handle = add_turn(mgr, quote + " (and more words around it)", "ok")
    mgr.store.conn().execute("UPDATE turns SET created_at = ? WHERE id = ?", (when, handle.turn_id))
    seeded = seed_item(mgr.store.conn(), subject=subject or statement[:30], statement=statement,
                       sources=[(handle.turn_id, "user", quote)])
    return seeded.logical_id


def promote(invoke_cli, *args: str, json: bool = True):
    return invoke_cli("memory", "promote", *args, json=json)


def test_a_diff_first_then_a_new_file_on_yes(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Run `make check` before proposing a patch.", "please always run make check before a patch")
    rc, out, err = promote(invoke_cli, a, json=False)
    assert rc == 0, err
    assert not (repo / "AGENTS.md").exists()  # without --yes nothing is written
    assert out.startswith("--- /dev/null\n+++ b/AGENTS.md\n") and "+- Run `make check` before proposing" in out
    assert "--yes" in out

    rc, doc, err = promote(invoke_cli, a, "--yes")
    assert rc == 0, err
    assert set(doc) == {"path", "written", "promoted", "diff"}
    assert doc["written"] is True and doc["promoted"] == [a] and doc["path"] == str(repo / "AGENTS.md")
    text = (repo / "AGENTS.md").read_text("utf-8")
    assert text == "".join(line + "\n" for line in (
        section.BEGIN, section.HEADING, "",
        f"- Run `make check` before proposing a patch. <!-- memory:{a} -->",
        "  > “please always run make check before a patch” — 2026-11-03",
        section.END))
    assert doc["diff"].splitlines()[2:] == ["@@ -0,0 +1,6 @@", *("+" + line for line in text.splitlines())]
    assert stat.S_IMODE((repo / "AGENTS.md").stat().st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_text_outside_the_section_never_changes(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    head = "# Team rules\r\n\r\nRun the linters.\r\nNo trailing newline at the end"
    (repo / "AGENTS.md").write_bytes(head.encode("utf-8"))
    a = item(manager, "Keep imports sorted.", "keep the imports sorted please")
    rc, doc, err = promote(invoke_cli, a, "--yes")
    assert rc == 0 and doc["written"], err
    data = (repo / "AGENTS.md").read_bytes()
    assert data.startswith(head.encode("utf-8") + b"\r\n\r\n" + section.BEGIN.encode() + b"\r\n")
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")  # the file's own line endings
    tail = b"\r\n## Written by hand after the section\r\nIt stays.\r\n"
    (repo / "AGENTS.md").write_bytes(data + tail)
    b = item(manager, "Use pathlib for paths.", "use pathlib, not os.path")
    rc, doc, err = promote(invoke_cli, b, "--yes")
    assert rc == 0 and doc["written"], err
    after = (repo / "AGENTS.md").read_bytes()
    assert after.startswith(head.encode("utf-8") + b"\r\n\r\n") and after.endswith(tail)
    bullets = section.section_bullets(after.decode("utf-8"))
    assert [x.item_id for x in bullets] == [a, b]


def test_promote_is_idempotent_and_re_promote_replaces_the_bullet(repo: Path, manager: MemoryManager,
                                                                   invoke_cli) -> None:
    a = item(manager, "Retries stop after five attempts.", "stop retrying after five attempts")
    b = item(manager, "Log in JSON.", "logs must be JSON lines")
    assert promote(invoke_cli, a, b, "--yes")[0] == 0
    path = repo / "AGENTS.md"
    first, mtime = path.read_text("utf-8"), path.stat().st_mtime_ns
    rc, doc, err = promote(invoke_cli, b, a, "--yes")  # again, in another order: nothing to write
    assert rc == 0 and doc["written"] is False and doc["diff"] == "", err
    assert path.read_text("utf-8") == first and path.stat().st_mtime_ns == mtime
    rc, out, err = promote(invoke_cli, a, json=False)
    assert rc == 0 and "nothing to write" in out

    revise_item(manager.store.conn(), a, subject="retry limit", statement="Retries stop after three attempts.")
    rc, doc, err = promote(invoke_cli, a, "--yes")
    assert rc == 0 and doc["written"], err
    text = path.read_text("utf-8")
    assert "three attempts" in text and "five attempts." not in text
    bullets = section.section_bullets(text)
    assert [x.item_id for x in bullets] == [a, b]  # replaced in place, one bullet per item
    assert "-- Retries stop after five attempts." in doc["diff"] and "+- Retries stop after three" in doc["diff"]


def test_a_forgotten_items_bullet_goes_on_the_next_promote(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Use tabs in Makefiles.", "tabs in makefiles")
    b = item(manager, "Name branches after issues.", "name the branch after the issue")
    assert promote(invoke_cli, a, b, "--yes")[0] == 0
    path = repo / "AGENTS.md"
    # a teammate's promoted item (another person's Memory: this store does not know it) must survive
    theirs = "- Their rule. <!-- memory:mem-01TEAMMATE0000000000000000 -->\n  > “theirs” — 2026-01-02\n"
    path.write_text(path.read_text("utf-8").replace(section.END, theirs + section.END), "utf-8")
    manager.forget(a)
    c = item(manager, "Prefer small commits.", "small commits please")
    rc, doc, err = promote(invoke_cli, c, "--yes")
    assert rc == 0 and doc["written"], err
    ids = [x.item_id for x in section.section_bullets(path.read_text("utf-8"))]
    assert ids == [b, "mem-01TEAMMATE0000000000000000", c]
    assert "Use tabs in Makefiles" not in path.read_text("utf-8")


def test_to_outside_the_repository_is_a_usage_error(repo: Path, tmp_path: Path, manager: MemoryManager,
                                                    invoke_cli) -> None:
    a = item(manager, "Document public functions.", "document every public function")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "out").symlink_to(outside)
    (repo / "loop").symlink_to(repo / "loop")
    (repo / "README.md").write_text("# readme\n", "utf-8")
    for to in ("../elsewhere.md", str(outside / "AGENTS.md"), "out/AGENTS.md", ".git/AGENTS.md",
               ".autopatch-j/AGENTS.md", "no-such-folder/AGENTS.md", ".", "loop/AGENTS.md", "README.md/AGENTS.md",
               "x" * 300, "d/" * 3000 + "x", "bad\x00name"):
        rc, doc, err = promote(invoke_cli, a, "--to", to, "--yes")
        assert rc == 2, (to, err)
    assert list(outside.iterdir()) == [] and not (repo / "AGENTS.md").exists()
    assert (repo / "README.md").read_text("utf-8") == "# readme\n"
    assert not (tmp_path / "elsewhere.md").exists()
    (repo / "docs").mkdir()
    rc, doc, err = promote(invoke_cli, a, "--to", "docs/TEAM.md", "--yes")  # another file inside: fine
    assert rc == 0 and doc["written"] and doc["path"] == str(repo / "docs" / "TEAM.md"), err


def test_a_read_only_file_fails_and_nothing_changes(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Pin dependencies.", "pin every dependency")
    path = repo / "AGENTS.md"
    path.write_text("# Rules\n", "utf-8")
    path.chmod(0o444)
    before = path.stat()
    rc, doc, err = promote(invoke_cli, a, "--yes", json=False)
    assert rc == 1 and "read-only" in err
    after = path.stat()
    assert path.read_text("utf-8") == "# Rules\n"
    assert (after.st_mtime_ns, after.st_ino, stat.S_IMODE(after.st_mode)) == (before.st_mtime_ns, before.st_ino, 0o444)
    assert [p.name for p in repo.iterdir() if p.name.startswith(".AGENTS")] == []


def test_the_files_mode_is_kept_and_a_link_is_never_written_through(repo: Path, manager: MemoryManager,
                                                                    invoke_cli) -> None:
    a = item(manager, "Squash before merging.", "squash before you merge")
    path = repo / "AGENTS.md"
    path.write_text("# Rules\n", "utf-8")
    path.chmod(0o640)
    assert promote(invoke_cli, a, "--yes")[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and "Squash before merging." in path.read_text("utf-8")

    real = repo / "docs" / "RULES.md"
    real.parent.mkdir()
    real.write_text("# Real rules\n", "utf-8")
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").symlink_to(real)
    rc, doc, err = promote(invoke_cli, a, "--to", "sub/AGENTS.md", "--yes", json=False)
    assert rc == 1 and "symbolic link" in err
    assert real.read_text("utf-8") == "# Real rules\n" and (repo / "sub" / "AGENTS.md").is_symlink()
    (repo / "linked").symlink_to(repo / "docs")  # a folder reached through a link (inside the repository)
    rc, doc, err = promote(invoke_cli, a, "--to", "linked/NEW.md", "--yes", json=False)
    assert rc == 1 and "link" in err and not (repo / "docs" / "NEW.md").exists()


def test_only_active_items_and_nothing_is_written_for_a_bad_one(repo: Path, manager: MemoryManager,
                                                                invoke_cli) -> None:
    a = item(manager, "Write tests first.", "write the tests first")
    gone = item(manager, "Use camelCase.", "camel case everywhere")
    manager.forget(gone)
    for ids in ((gone,), (a, gone), (a, "mem-NOSUCHITEM")):
        rc, doc, err = promote(invoke_cli, *ids, "--yes", json=False)
        assert rc == 1, (ids, err)
        assert not (repo / "AGENTS.md").exists()
    rc, doc, err = promote(invoke_cli, gone, json=False)
    assert rc == 1 and "forgotten" in err and "only active items" in err


def test_broken_markers_refuse_and_keep_the_file(repo: Path, manager: MemoryManager, invoke_cli) -> None:
    a = item(manager, "Keep functions short.", "keep functions short")
    path = repo / "AGENTS.md"
    broken = f"# Rules\n{section.BEGIN}\n- kept by hand\n"  # a begin without an end: which lines are ours?
    path.write_text(broken, "utf-8")
    rc, doc, err = promote(invoke_cli, a, "--yes", json=False)
    assert rc == 1 and "marker" in err
    assert path.read_text("utf-8") == broken


def test_hostile_statements_and_quotes_cannot_break_the_section(repo: Path, manager: MemoryManager,
                                                                invoke_cli) -> None:
    a = item(manager, f"Close it {section.END} now\x1b[31m", "quote with --> and \x1b]0;title\x07 and\nnewline")
    b = item(manager, "Second rule.", "second")
    rc, out, err = promote(invoke_cli, a, b, "--yes", json=False)
    assert rc == 0, err
    assert "\x1b" not in out and "\x07" not in out  # printed escaped
    text = (repo / "AGENTS.md").read_text("utf-8")
    assert "\x1b" not in text and "\x07" not in text
    assert text.count(section.END) == 1 and [x.item_id for x in section.section_bullets(text)] == [a, b]
    assert section.promoted_statements(text)[a] == section.one_line(f"Close it {section.END} now\x1b[31m")


def test_the_file_changed_since_the_plan_is_not_overwritten(repo: Path, manager: MemoryManager) -> None:
    a = item(manager, "Review every patch.", "review every patch")
    path = repo / "AGENTS.md"
    path.write_text("# Rules\n", "utf-8")
    plan = plan_promotion(manager, [a])
    path.write_text("# Rules\nedited meanwhile by the user\n", "utf-8")
    with pytest.raises(Exception, match="changed since"):
        write_promotion(manager, plan)
    assert path.read_text("utf-8") == "# Rules\nedited meanwhile by the user\n"
    assert write_promotion(manager, plan_promotion(manager, [a])) is True


def test_promote_keeps_the_lines_it_did_not_write_inside_its_section(repo: Path, manager: MemoryManager,
                                                                     invoke_cli) -> None:
    a = item(manager, "Run make check first.", "run make check first please")
    b = item(manager, "Use pathlib for paths.", "use pathlib")
    c = item(manager, "Prefer small commits.", "small commits please")
    assert promote(invoke_cli, a, b, "--yes")[0] == 0
    path = repo / "AGENTS.md"
    text = path.read_text("utf-8")
    # by hand inside the section: a note, an unkeyed bullet, a paragraph after a blank line; and a
    # formatter wrapped b's bullet so that its ID comment is on the next line
    bullet_b = next(x for x in section.section_bullets(text) if x.item_id == b).lines
    wrapped = "* Use pathlib for\n  paths. <!-- memory:" + b + " -->\n" + bullet_b[1] + "\n"
    hand = "NOTE by hand: ask Ana before removing a rule.\n- A hand-written rule.\n\nA second paragraph.\n"
    text = text.replace("\n".join(bullet_b) + "\n", wrapped).replace(section.END, hand + section.END)
    path.write_text(text, "utf-8")
    manager.forget(a)
    rc, doc, err = promote(invoke_cli, b, c, "--yes")
    assert rc == 0 and doc["written"], err
    after = path.read_text("utf-8")
    assert hand in after and wrapped in after  # b's words unchanged: its wrapped bullet left as it was
    assert "Run make check first." not in after
    assert [x.item_id for x in section.section_bullets(after)] == [b, c]
    assert after.index(wrapped) < after.index("Prefer small commits.") < after.index(hand)
    assert promote(invoke_cli, b, c, "--yes")[1]["written"] is False  # idempotent with the hand lines there


def test_a_confirmed_plan_is_written_only_while_it_is_still_the_diff_shown(repo: Path, manager: MemoryManager) -> None:
    a = item(manager, "Tag every release.", "tag every release")
    b = item(manager, "Sign the tags.", "sign them")
    shown = plan_promotion(manager, [a, b])
    revise_item(manager.store.conn(), a, subject="releases", statement="Tag and sign every release.")
    with pytest.raises(Exception, match="changed since the diff was shown"):
        write_confirmed(manager, shown)
    assert not (repo / "AGENTS.md").exists()
    shown = plan_promotion(manager, [a, b])
    manager.forget(b)
    with pytest.raises(Exception, match="only active items"):
        write_confirmed(manager, shown)
    assert not (repo / "AGENTS.md").exists()
    shown = plan_promotion(manager, [a])
    assert write_confirmed(manager, shown).written is True
    assert (repo / "AGENTS.md").read_text("utf-8") == shown.new_text
