"""Which instruction files a request reads (contracts §9): the `AGENTS.md` cascade from the root down
to the scope (closer later), a root `CLAUDE.md` only without a root `AGENTS.md`, 32 KiB in all with
the closest kept first — and nothing a hostile repository can turn against the reader."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from autopatch_tui.core.instructions import files as inst
from autopatch_tui.core.instructions.files import MAX_BYTES, load_instructions


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    inst.clear_cache()


def put(repo: Path, rel: str, text: str | bytes) -> Path:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, "utf-8")
    return path


def test_the_cascade_runs_from_the_root_down_to_the_scope(repo: Path) -> None:
    put(repo, "AGENTS.md", "ROOT rules")
    put(repo, "src/AGENTS.md", "SRC rules")
    put(repo, "src/net/AGENTS.md", "NET rules")
    put(repo, "src/net/client.py", "x = 1\n")
    put(repo, "src/other/AGENTS.md", "OTHER rules")  # not on the way to the scope
    put(repo, "docs/AGENTS.md", "DOCS rules")
    got = load_instructions(repo, ["src/net/client.py"])
    assert got.paths == ("AGENTS.md", "src/AGENTS.md", "src/net/AGENTS.md")
    text = got.render()
    assert text.index("ROOT rules") < text.index("SRC rules") < text.index("NET rules")  # closer comes later
    assert "OTHER" not in text and "DOCS" not in text
    # a folder as the scope includes its own file; several scopes: shallower first, each file once
    got = load_instructions(repo, ["docs", "src/net/", "src/net/client.py", "./src"])
    assert got.paths == ("AGENTS.md", "docs/AGENTS.md", "src/AGENTS.md", "src/net/AGENTS.md")
    assert load_instructions(repo, []).paths == ("AGENTS.md",)  # no scope: the root only
    assert load_instructions(repo, ["no/such/file.py"]).paths == ("AGENTS.md",)


def test_claude_md_only_at_the_root_and_only_without_agents_md(repo: Path) -> None:
    put(repo, "CLAUDE.md", "CLAUDE root")
    put(repo, "src/CLAUDE.md", "CLAUDE src")
    put(repo, "src/a.py", "")
    assert load_instructions(repo, ["src/a.py"]).paths == ("CLAUDE.md",)
    put(repo, "AGENTS.md", "AGENTS root")
    got = load_instructions(repo, ["src/a.py"])
    assert got.paths == ("AGENTS.md",) and "CLAUDE" not in got.render()
    (repo / "AGENTS.md").unlink()
    (repo / "AGENTS.md").mkdir()  # a folder named AGENTS.md is no AGENTS.md
    assert load_instructions(repo, ["src/a.py"]).paths == ("CLAUDE.md",)


def test_links_never_lead_out_or_into_git(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    put(outside, "secret.txt", "OUTSIDE-SECRET")
    put(outside, "AGENTS.md", "OUTSIDE-AGENTS")
    put(repo, ".git/info/notes", "GIT-INTERNAL")
    (repo / "AGENTS.md").symlink_to(outside / "secret.txt")
    (repo / "src").mkdir()
    (repo / "src" / "AGENTS.md").symlink_to(repo / ".git" / "info" / "notes")
    (repo / "src" / "out").symlink_to(outside)  # a scope folder that leaves the repository
    put(repo, "src/in/AGENTS.md", "INSIDE-TARGET")
    (repo / "lib").mkdir()
    (repo / "lib" / "AGENTS.md").symlink_to(repo / "src" / "in" / "AGENTS.md")  # a link inside: fine
    put(repo, ".git/hooks/AGENTS.md", "GIT-AGENTS")
    put(repo, ".autopatch-j/AGENTS.md", "STATE-AGENTS")
    got = load_instructions(repo, ["src/out/x.py", "lib/a.py", ".git/hooks/x", ".autopatch-j/x", "/etc/x", "../x"])
    text = got.render()
    for secret in ("OUTSIDE", "GIT-", "STATE-AGENTS"):
        assert secret not in text
    assert got.paths == ("lib/AGENTS.md",) and "INSIDE-TARGET" in text
    assert {p for p, _ in got.skipped} == {"AGENTS.md", "src/AGENTS.md"}


def test_a_fifo_never_blocks_and_bad_bytes_are_skipped(repo: Path) -> None:
    os.mkfifo(repo / "AGENTS.md")
    put(repo, "CLAUDE.md", "a root AGENTS.md that cannot be used: the root CLAUDE.md stands in")
    put(repo, "a/AGENTS.md", b"\xff\xfe bad bytes \xc3")
    put(repo, "a/b/AGENTS.md", b"text with a NUL \x00 byte")
    put(repo, "a/b/c/AGENTS.md", "\ufeffWITH-BOM rules\n")
    put(repo, "a/b/c/d/AGENTS.md", "   \n\n  ")  # empty: nothing to say
    box: dict[str, object] = {}
    worker = threading.Thread(target=lambda: box.setdefault("got", load_instructions(repo, ["a/b/c/d/x.py"])),
                              daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "reading instruction files blocked on a FIFO"
    got = box["got"]
    assert got.paths == ("CLAUDE.md", "a/b/c/AGENTS.md")
    assert dict(got.skipped) == {"AGENTS.md": "not a regular file", "a/AGENTS.md": "not UTF-8 text",
                                 "a/b/AGENTS.md": "not UTF-8 text"}
    assert "\ufeff" not in got.render() and "WITH-BOM rules" in got.render()


def test_a_huge_file_is_cut_never_read_whole(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open(repo / "AGENTS.md", "wb") as fh:
        fh.write(b"# rules\n" + b"rule line of text\n" * 10_000)
        fh.truncate(512 * 1024 * 1024)  # half a gigabyte (sparse)
    asked: list[int] = []
    real = inst.read_regular_head
    monkeypatch.setattr(inst, "read_regular_head", lambda path, n: asked.append(n) or real(path, n))
    got = load_instructions(repo)
    assert asked == [MAX_BYTES]
    (only,) = got.files
    assert only.cut and got.cut and len(only.text.encode("utf-8")) <= MAX_BYTES
    assert only.text.endswith(inst.CUT_MARKER.format(bound="32 KiB")) and "\x00" not in only.text


def test_32_kib_in_all_closest_kept_first_and_the_cut_says_so(repo: Path) -> None:
    line = "keep this rule in mind at all times\n"
    put(repo, "AGENTS.md", "ROOT\n" + line * 400)  # ~14 KiB each
    put(repo, "a/AGENTS.md", "A\n" + line * 400)
    put(repo, "a/b/AGENTS.md", "B\n" + line * 400)
    put(repo, "a/b/c/AGENTS.md", "C\n" + line * 400)
    got = load_instructions(repo, ["a/b/c/x.py"])
    assert sum(len(f.text.encode("utf-8")) for f in got.files) <= MAX_BYTES
    # the two closest whole, the next one cut, the root left out — and the prompt says so
    assert got.paths == ("a/AGENTS.md", "a/b/AGENTS.md", "a/b/c/AGENTS.md")
    assert [f.cut for f in got.files] == [True, False, False]
    assert got.left_out == ("AGENTS.md",)
    text = got.render()
    assert "cut here" in text and "left out" in text and "AGENTS.md" in text.rsplit("left out", 1)[1]
    # a model's small window: a token bound cuts sooner
    small = load_instructions(repo, ["a/b/c/x.py"], max_tokens=500)
    assert small.paths == ("a/b/c/AGENTS.md",) and small.files[0].cut
    assert small.left_out == ("AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md")


def test_a_changed_file_is_read_again_without_a_restart(repo: Path) -> None:
    path = put(repo, "AGENTS.md", "FIRST version")
    assert "FIRST version" in load_instructions(repo).render()
    path.write_text("SECOND version, longer", "utf-8")
    assert "SECOND version" in load_instructions(repo).render()
    put(repo, "src/AGENTS.md", "NEW nested file")
    assert load_instructions(repo, ["src/x.py"]).paths == ("AGENTS.md", "src/AGENTS.md")
    (repo / "src" / "AGENTS.md").unlink()
    assert load_instructions(repo, ["src/x.py"]).paths == ("AGENTS.md",)


def test_an_unchanged_file_is_not_read_again(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = put(repo, "AGENTS.md", "rules")
    reads: list[Path] = []
    real = inst.read_regular_head
    monkeypatch.setattr(inst, "read_regular_head", lambda p, n: reads.append(p) or real(p, n))
    for _ in range(5):
        load_instructions(repo)
    assert len(reads) == 1
    stamp = time.time() + 5
    os.utime(path, (stamp, stamp))  # touched: read again
    load_instructions(repo)
    assert len(reads) == 2


def test_loops_nul_bytes_and_over_long_paths_are_passed_over(repo: Path) -> None:
    put(repo, "AGENTS.md", "ROOT")
    (repo / "loop").symlink_to(repo / "loop")  # a link to itself
    (repo / "a").symlink_to(repo / "b")
    (repo / "b").symlink_to(repo / "a")
    (repo / "src").mkdir()
    (repo / "src" / "AGENTS.md").symlink_to(repo / "src" / "AGENTS.md")
    scopes = ["loop/x.py", "a/x.py", "src/x.py", "bad\x00name/x.py", "x" * 4000 + "/y.py", "/".join(["d"] * 500)]
    got = load_instructions(repo, scopes)
    assert got.paths == ("AGENTS.md",)
    assert [p for p, _ in got.skipped] == ["src/AGENTS.md"]
