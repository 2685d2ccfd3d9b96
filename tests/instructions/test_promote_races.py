"""Promote under races and kills (issue 28 items 3 and 7): plan, check and write under one lock, so
racing promotes never lose a bullet; a hand edit that lands while the file is being replaced is
never lost (the promote says so and writes nothing); the temporary file lives in
`.autopatch-j/tmp/`, so a kill -9 during a promote leaves nothing in the repository, and the next
promote sweeps it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from autopatch_tui.core.instructions import promote as pr
from autopatch_tui.core.instructions import section
from autopatch_tui.core.manager import MemoryManager
from tests.support.fixtures import PROJECT_ROOT
from tests.support.recall_seed import add_turn, seed_item


def item(mgr: MemoryManager, statement: str) -> str:
    handle = add_turn(mgr, f"please: {statement}", "ok")
    return seed_item(mgr.store.conn(), subject=statement[:30], statement=statement,
                     sources=[(handle.turn_id, "user", statement)]).logical_id


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


def test_racing_promotes_never_lose_a_bullet(repo: Path, manager: MemoryManager) -> None:
    rounds, width = 10, 4
    ids = [item(manager, f"Rule number {n} applies.") for n in range(rounds * width)]
    (repo / "AGENTS.md").write_text("# Team rules\n", "utf-8")
    succeeded: list[str] = []
    for r in range(rounds):
        batch = ids[r * width:(r + 1) * width]
        procs = [subprocess.Popen([sys.executable, "-m", "autopatch_tui", "memory", "promote", i, "--yes", "--json"],
                                  cwd=repo, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in batch]
        for i, p in zip(batch, procs, strict=True):
            out, err = p.communicate(timeout=120)
            if p.returncode == 0:
                succeeded.append(i)
            else:  # a promote that cannot write says so (and wrote nothing)
                assert p.returncode == 1 and "nothing was written" in err, err
    found = {b.item_id for b in section.section_bullets((repo / "AGENTS.md").read_text("utf-8"))}
    missing = [i for i in succeeded if i not in found]
    assert not missing, f"{len(missing)} of {len(succeeded)} promotes exited 0 without their bullet"
    assert len(succeeded) == rounds * width  # under the lock each one waits its turn and lands
    assert (repo / "AGENTS.md").read_text("utf-8").startswith("# Team rules\n")


def _edit_during_the_write(monkeypatch: pytest.MonkeyPatch, path: Path, edit) -> list[int]:
    """Make `edit(path)` happen once the new text is flushed to its temporary file — after the
    "unchanged since the diff" check, before the file is replaced."""
    real_fsync = os.fsync
    done: list[int] = []

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if not done and os.path.isfile(f"/proc/self/fd/{fd}") and os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            done.append(fd)
            edit(path)

    monkeypatch.setattr(os, "fsync", fsync)
    return done


@pytest.mark.parametrize("how", ["in place", "by rename"])
def test_a_hand_edit_during_the_write_is_never_lost(repo: Path, manager: MemoryManager,
                                                    monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    a = item(manager, "Review every patch.")
    path = repo / "AGENTS.md"
    path.write_text("# Rules\n", "utf-8")
    plan = pr.plan_promotion(manager, [a])

    def edit(p: Path) -> None:
        if how == "in place":  # an editor writing into the file
            with open(p, "a", encoding="utf-8") as fh:
                fh.write("edited by hand during the promote\n")
        else:  # an editor saving a new file over the old one
            tmp = p.with_name("AGENTS.md.swp")
            tmp.write_text("# Rules\nedited by hand during the promote\n", "utf-8")
            os.replace(tmp, p)

    done = _edit_during_the_write(monkeypatch, path, edit)
    with pytest.raises(pr.PromoteError, match="changed since the diff"):
        pr.write_promotion(manager, plan)
    assert done
    assert "edited by hand during the promote" in path.read_text("utf-8")
    assert "Review every patch." not in path.read_text("utf-8")
    assert sorted(p.name for p in repo.iterdir()) == [".autopatch-j", ".git", "AGENTS.md"]
    monkeypatch.undo()
    assert pr.promote_now(manager, [a]).written  # promoting again keeps the edit and adds the bullet
    text = path.read_text("utf-8")
    assert "edited by hand during the promote" in text and "Review every patch." in text


_KILLED_PROMOTE = """
import os, signal, sys
real = os.fsync
def fsync(fd):
    real(fd)
    if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
        os.kill(os.getpid(), signal.SIGKILL)  # the new text is on disk, not yet in place
os.fsync = fsync
from autopatch_tui.cli.main import run
sys.exit(run(["memory", "promote", sys.argv[1], "--yes"]))
"""


def test_kill_9_during_promote_leaves_nothing_in_the_repository(repo: Path, manager: MemoryManager,
                                                                run_cli) -> None:
    a = item(manager, "Pin every dependency.")
    path = repo / "AGENTS.md"
    path.write_text("# Rules\n", "utf-8")
    proc = subprocess.run([sys.executable, "-c", _KILLED_PROMOTE, a], cwd=repo, env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert path.read_text("utf-8") == "# Rules\n"
    in_repo = [p.relative_to(repo).as_posix() for p in repo.rglob("*")
               if ".git" not in p.relative_to(repo).parts[:1] and ".autopatch-j" not in p.relative_to(repo).parts[:1]]
    assert in_repo == ["AGENTS.md"]  # no temporary file beside it
    left = sorted(p.name for p in (repo / ".autopatch-j" / "tmp").iterdir())
    assert len(left) == 1 and left[0].startswith("promote-") and left[0].endswith(".tmp")
    rc, doc, err = run_cli("memory", "promote", a, "--yes", json=True)  # the next promote sweeps it
    assert rc == 0 and doc["written"], err
    assert [p.name for p in (repo / ".autopatch-j" / "tmp").iterdir()] == []


def test_a_promote_that_cannot_get_the_lock_says_so_and_writes_nothing(repo: Path, manager: MemoryManager,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from autopatch_tui.core.instructions import promote_write

    a = item(manager, "Sign every tag.")
    path = repo / "AGENTS.md"
    path.write_text("# Rules\n", "utf-8")
    monkeypatch.setattr(promote_write, "LOCK_WAIT_SECONDS", 0.2)
    with promote_write.promote_lock(repo.resolve()):  # another promote is writing
        with pytest.raises(pr.PromoteError, match="nothing was written"):
            pr.promote_now(manager, [a])
        with pytest.raises(pr.PromoteError, match="nothing was written"):
            pr.write_confirmed(manager, pr.plan_promotion(manager, [a]))
    assert path.read_text("utf-8") == "# Rules\n"
    assert pr.promote_now(manager, [a]).written  # the lock released: it lands


def test_on_another_file_system_the_temporary_file_goes_beside_and_nothing_is_left(
        repo: Path, manager: MemoryManager, monkeypatch: pytest.MonkeyPatch) -> None:
    from autopatch_tui.core.repair import patch_files

    a = item(manager, "Keep the changelog current.")
    path = repo / "AGENTS.md"
    path.write_text("# Rules\n", "utf-8")
    path.chmod(0o640)
    monkeypatch.setattr(patch_files, "same_device", lambda x, y: False)  # .autopatch-j on another mount
    seen: list[list[str]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):  # while the new text waits beside the file
            seen.append(sorted(p.name for p in repo.iterdir()) + sorted(
                p.name for p in (repo / ".autopatch-j" / "tmp").iterdir()))

    monkeypatch.setattr(os, "fsync", fsync)
    assert pr.promote_now(manager, [a]).written
    assert seen and any(n.startswith(".AGENTS.md.autopatch-") for n in seen[0])  # beside the file …
    assert any(n.startswith("beside-") for n in seen[0])  # … named by a marker the sweep reads
    assert "Keep the changelog current." in path.read_text("utf-8") and (path.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in repo.iterdir()) == [".autopatch-j", ".git", "AGENTS.md"]
    assert list((repo / ".autopatch-j" / "tmp").iterdir()) == []
