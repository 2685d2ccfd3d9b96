"""Instruction files a hostile or busy repository cannot turn against the reader (issue 28 item 5):
the root's `AGENTS.md` applies to every request, so it is kept first whatever else is there (a
35 KB vendored `AGENTS.md`, 64 nested ones); an in-place edit that keeps size and mtime is seen
(the cache key has the ctime); a folder swapped for a link between the walk and the read never
leads outside the repository (each component opened `O_NOFOLLOW` from the root)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from autopatch_tui.core.instructions import files as inst
from autopatch_tui.core.instructions.files import MAX_BYTES, MAX_DEPTH, load_instructions

ROOT_RULE = "ROOT-RULE: run make check before proposing a patch."


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    inst.clear_cache()


def put(repo: Path, rel: str, text: str) -> Path:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def test_a_35_kb_vendored_agents_md_never_evicts_the_roots(repo: Path) -> None:
    put(repo, "AGENTS.md", ROOT_RULE + "\n")
    put(repo, "vendor/lib/AGENTS.md", "VENDORED\n" + "a vendored library's long instructions\n" * 950)  # ~35 KB
    put(repo, "vendor/lib/x.py", "")
    for tokens in (None, 4000, 600):
        got = load_instructions(repo, ["vendor/lib/x.py"], max_tokens=tokens)
        assert got.paths[0] == "AGENTS.md" and ROOT_RULE in got.render(), tokens
        assert not got.files[0].cut
        assert len(got.render().encode("utf-8")) <= MAX_BYTES


def test_64_nested_agents_md_never_evict_the_roots(repo: Path) -> None:
    put(repo, "AGENTS.md", ROOT_RULE + "\n")
    deep = "/".join(f"d{i:02d}" for i in range(MAX_DEPTH))
    folder = ""
    for part in deep.split("/"):
        folder = f"{folder}/{part}" if folder else part
        put(repo, f"{folder}/AGENTS.md", f"NESTED {part}\n" + "x" * 600)
    put(repo, f"{deep}/f.py", "")
    got = load_instructions(repo, [f"{deep}/f.py"])
    assert got.paths[0] == "AGENTS.md" and ROOT_RULE in got.render()
    assert got.left_out  # the bound did bite; the root survived it
    assert got.files[-1].path == f"{deep}/AGENTS.md"  # and the closest one is kept next


def test_an_in_place_edit_keeping_size_and_mtime_is_seen(repo: Path) -> None:
    path = put(repo, "AGENTS.md", "Use tabs.\n")
    assert "Use tabs." in load_instructions(repo).render()
    st = path.stat()
    with open(path, "r+b") as fh:  # same inode, same size
        fh.write(b"Use TABS.\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime back (a tool preserving times)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    if after.st_ctime_ns == st.st_ctime_ns:  # a file system with a coarse ctime: wait for it to move
        time.sleep(0.02)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "Use TABS." in load_instructions(repo).render()


def test_a_folder_swapped_for_a_link_mid_read_never_leads_outside(repo: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    put(outside, "AGENTS.md", "SECRET from outside the repository")
    put(repo, "AGENTS.md", "ROOT")
    put(repo, "pkg/AGENTS.md", "PKG rules")
    put(repo, "pkg/x.py", "")
    real_read = inst._read

    def swap_then_read(real: Path, st: os.stat_result, *args: object) -> object:
        if real.parent.name == "pkg" and not (repo / "pkg").is_symlink():  # between the walk and the read
            os.rename(repo / "pkg", repo / "pkg.old")
            os.symlink(outside, repo / "pkg")
        return real_read(real, st, *args)

    monkeypatch.setattr(inst, "_read", swap_then_read)
    got = load_instructions(repo, ["pkg/x.py"])
    assert "SECRET" not in got.render()
    assert got.paths == ("AGENTS.md",)
    assert dict(got.skipped).get("pkg/AGENTS.md", "").startswith("a folder on its path became a link")


def test_a_nested_claude_md_is_named_as_not_read(repo: Path) -> None:
    """Issue 30 item 6: a file another assistant reads but this one does not is named, with why."""
    put(repo, "AGENTS.md", "ROOT")
    put(repo, "CLAUDE.md", "ROOT CLAUDE")
    put(repo, "pkg/CLAUDE.md", "PKG CLAUDE rules")
    put(repo, "pkg/x.py", "")
    got = load_instructions(repo, ["pkg/x.py"])
    assert got.paths == ("AGENTS.md",) and "PKG CLAUDE" not in got.render()
    assert dict(got.skipped) == {"CLAUDE.md": inst.SHADOWED, "pkg/CLAUDE.md": inst.NESTED_CLAUDE}
