"""Issue #24 items 5 and 6 (patch writes): a `/patch apply` killed mid-write leaves nothing beside the
source (its temporary file is in `.autopatch-j/tmp/`, which git ignores) and the next start sweeps
it; a folder the user cannot write gets a plain message that names no absolute or temporary path."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autopatch_tui.core.repair import patch_files
from autopatch_tui.core.repair.findings import Finding
from autopatch_tui.core.repair.patch_files import sweep, temp_dir
from autopatch_tui.core.repair.patching import PatchApplyError, apply_draft, make_draft
from tests.memory._hostile import give_to_nobody, remove_tree, unprivileged, world_dir
from tests.repair.conftest import SWALLOW, write
from tests.support.fixtures import make_git_repo

ROOT = Path(__file__).resolve().parents[2]
F1 = Finding("F1", "pkg/load.py", 4, "S110", "swallows", tool="ruff")
GIT = shutil.which("git")

KILLED_APPLY = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from autopatch_tui.core.repair import patch_files
    from autopatch_tui.core.repair.findings import Finding
    from autopatch_tui.core.repair.patching import apply_draft, make_draft

    repo = Path(sys.argv[1])
    if sys.argv[2] == "other-fs":
        patch_files.same_device = lambda a, b: False
    def killed(*args, **kwargs):  # the kill lands after the new text is written, before the rename
        os.kill(os.getpid(), signal.SIGKILL)
    patch_files.os.replace = killed
    finding = Finding("F1", "pkg/load.py", 4, "S110", "swallows", tool="ruff")
    draft = make_draft(repo, finding, finding_id="F1", old_text="        pass\\n", new_text="        raise\\n")
    apply_draft(repo, draft)
""")


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def untracked(repo: Path) -> list[str]:
    out = subprocess.run([GIT, "-C", str(repo), "status", "--porcelain", "--untracked-files=all"], check=True,
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.startswith("??")]


def killed_apply(repo: Path, how: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED_APPLY, str(repo), how], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


@pytest.mark.skipif(GIT is None, reason="needs git")
def test_a_killed_apply_leaves_nothing_in_the_repository_and_the_next_start_sweeps_it(repo: Path) -> None:
    src = write(repo, "pkg/load.py", SWALLOW + "# padding\n" * 40_000)  # 400 KB: a leftover is no small thing
    killed_apply(repo, "same-fs")
    assert src.read_text(encoding="utf-8").startswith(SWALLOW)
    assert listing(src.parent) == ["load.py"]  # no `.load.py.XXXX.autopatch` beside the source
    assert untracked(repo) == ["?? pkg/load.py"]  # git sees the source only: `.autopatch-j/` ignores itself
    [leftover] = listing(temp_dir(repo))
    assert leftover.startswith("patch-") and (temp_dir(repo) / leftover).stat().st_size > 300_000
    assert oct(temp_dir(repo).stat().st_mode & 0o777) == "0o700"
    assert sweep(repo) == 1  # the next start: its process is gone
    assert listing(temp_dir(repo)) == []


def test_on_another_file_system_the_leftover_beside_the_source_is_swept_by_its_marker(repo: Path) -> None:
    src = write(repo, "pkg/load.py", SWALLOW)
    killed_apply(repo, "other-fs")
    beside = [n for n in listing(src.parent) if n != "load.py"]
    assert len(beside) == 1 and beside[0].startswith(".load.py.autopatch-")
    [marker] = listing(temp_dir(repo))
    assert marker.startswith("beside-")
    assert sweep(repo) == 1
    assert listing(src.parent) == ["load.py"] and listing(temp_dir(repo)) == []
    assert src.read_text(encoding="utf-8") == SWALLOW


def test_the_sweep_removes_only_what_a_dead_process_left(repo: Path, tmp_path: Path) -> None:
    write(repo, "pkg/load.py", SWALLOW)
    folder = temp_dir(repo)
    folder.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    host = patch_files.host_tag()
    mine = folder / f"patch-{host}-{os.getpid()}-0badc0de.tmp"  # a live process's write in progress
    gone = folder / f"patch-{host}-{dead_pid}-0badc0de.tmp"
    stranger = folder / "notes.txt"  # not ours by name
    for f in (mine, gone, stranger):
        f.write_text("x")
    outside = tmp_path / "precious.txt"
    outside.write_text("keep")
    link = folder / f"patch-{host}-{dead_pid}-0000beef.tmp"
    link.symlink_to(outside)  # named like ours, but a link: never followed, never removed
    # a marker of a dead process that names the source itself: only a file shaped like our temp goes
    (folder / f"beside-{host}-{dead_pid}-0badc0de").write_text("pkg/load.py")
    assert sweep(repo) == 1
    assert sorted(listing(folder)) == sorted([mine.name, stranger.name, link.name])
    assert outside.read_text() == "keep" and (repo / "pkg" / "load.py").read_text() == SWALLOW


def test_a_read_only_folder_gets_a_plain_message_and_nothing_is_left() -> None:
    base = world_dir("r24-ro-")
    try:
        repo = make_git_repo(base / "project")
        src = write(repo, "pkg/load.py", SWALLOW)
        draft = make_draft(repo, F1, finding_id="F1", old_text="        pass\n", new_text="        raise\n")
        give_to_nobody(base)
        os.chmod(src.parent, 0o555)
        with unprivileged(), pytest.raises(PatchApplyError) as caught:
            apply_draft(repo, draft)
        message = str(caught.value)
        assert message == "cannot write pkg/load.py: the folder pkg/ is read-only for you (no write permission)"
        assert src.read_text(encoding="utf-8") == SWALLOW and listing(src.parent) == ["load.py"]
        assert listing(temp_dir(repo)) == []
    finally:
        remove_tree(base)


def test_a_refused_rename_names_no_absolute_or_temporary_path(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write(repo, "pkg/load.py", SWALLOW)
    draft = make_draft(repo, F1, finding_id="F1", old_text="        pass\n", new_text="        raise\n")

    def refused(src_name: str, dst_name: str, **kwargs: object) -> None:  # what the kernel says for EACCES
        raise PermissionError(13, "Permission denied", str(temp_dir(repo) / src_name), None, str(src))

    monkeypatch.setattr(patch_files.os, "replace", refused)
    with pytest.raises(PatchApplyError) as caught:
        apply_draft(repo, draft)
    assert str(caught.value) == "cannot write pkg/load.py (permission denied); the file is unchanged"
    assert str(repo) not in str(caught.value) and listing(temp_dir(repo)) == []


def test_a_read_only_file_is_not_replaced() -> None:
    base = world_dir("r24-rof-")
    try:
        repo = make_git_repo(base / "project")
        src = write(repo, "pkg/load.py", SWALLOW)
        draft = make_draft(repo, F1, finding_id="F1", old_text="        pass\n", new_text="        raise\n")
        give_to_nobody(base)
        os.chmod(src, 0o444)
        with unprivileged(), pytest.raises(PatchApplyError, match=r"^pkg/load.py is read-only \(no write permission\)"):
            apply_draft(repo, draft)
        assert src.read_text(encoding="utf-8") == SWALLOW
    finally:
        remove_tree(base)


def test_an_apply_keeps_the_mode_and_leaves_no_temporary_file(repo: Path) -> None:
    src = write(repo, "pkg/load.py", SWALLOW)
    os.chmod(src, 0o750)
    draft = make_draft(repo, F1, finding_id="F1", old_text="        pass\n", new_text="        raise\n")
    apply_draft(repo, draft)
    assert "raise" in src.read_text(encoding="utf-8") and oct(src.stat().st_mode & 0o777) == "0o750"
    assert listing(src.parent) == ["load.py"] and listing(temp_dir(repo)) == []
    assert (repo / ".autopatch-j" / ".gitignore").read_text() == "*\n"


def test_the_apps_session_start_sweeps_a_killed_applys_leftover(repo: Path, settings) -> None:
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.tui.services import Services

    src = write(repo, "pkg/load.py", SWALLOW)
    killed_apply(repo, "same-fs")
    assert len(listing(temp_dir(repo))) == 1
    services = Services(MemoryManager.open(repo, settings), settings)
    try:
        assert services.start_session() == ""  # no saved audit: nothing to say
    finally:
        services.manager.close()
    assert listing(temp_dir(repo)) == [] and listing(src.parent) == ["load.py"]


def test_a_bind_mount_inside_the_repository_is_written_beside_the_file(repo: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bind mount has the same st_dev as the repository, yet a rename across it fails with EXDEV:
    the write goes beside the file instead (review of r24, finding 6)."""
    import errno

    src = write(repo, "sub/a.py", SWALLOW)
    os.chmod(src, 0o640)
    finding = Finding("F1", "sub/a.py", 4, "S110", "swallows", tool="ruff")
    draft = make_draft(repo, finding, finding_id="F1", old_text="        pass\n", new_text="        raise\n")
    real = os.replace
    seen: list[tuple[str, str]] = []

    def across_mounts(src_name: str, dst_name: str, *, src_dir_fd: int | None = None,
                      dst_dir_fd: int | None = None) -> None:
        seen.append((src_name, dst_name))
        if os.path.samestat(os.fstat(src_dir_fd), os.fstat(dst_dir_fd)):  # type: ignore[arg-type]
            return real(src_name, dst_name, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(patch_files.os, "replace", across_mounts)
    apply_draft(repo, draft)  # was: "cannot write sub/a.py (exdev); the file is unchanged"
    assert src.read_text(encoding="utf-8") == SWALLOW.replace("pass", "raise")
    assert oct(src.stat().st_mode & 0o777) == "0o640"
    assert [s for s, _ in seen][0].startswith("patch-") and [s for s, _ in seen][1].startswith(".a.py.autopatch-")
    assert listing(src.parent) == ["a.py"] and listing(temp_dir(repo)) == []  # no temp file, no marker


KILLED_SAVE = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from autopatch_tui.core.repair.findings import Finding
    from autopatch_tui.core.repair.scanner import ScanReport
    from autopatch_tui.core.repair.workspace import AuditWorkspace, ReviewState

    repo = Path(sys.argv[1])
    review = ReviewState()
    review.persist_to(repo)
    findings = [Finding(f"F{n}", "pkg/load.py", n, "S110", "swallows " * 400, tool="ruff") for n in range(1, 200)]
    review.start(AuditWorkspace.from_report("scan-1", (), ScanReport(files=1, findings=findings), thread_id="t"))
    def killed(*args, **kwargs):  # the kill lands after the new file is written, before the rename
        os.kill(os.getpid(), signal.SIGKILL)
    os.replace = killed
    review.workspace.set_failed("F1", "no patch was proposed")  # a change: the audit is saved again
""")


def test_a_killed_save_of_the_audit_leaves_nothing_the_next_start_does_not_sweep(repo: Path) -> None:
    """Review of r24, finding 9: a kill during a save of `.autopatch-j/audit.json` (up to 16 MB)
    left `.audit.json.<pid>.<hex>.tmp` that no sweep removed."""
    write(repo, "pkg/load.py", SWALLOW)
    proc = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(repo)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    state = repo / ".autopatch-j"
    leftovers = [p for p in state.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 500_000
    assert sweep(repo) == 1  # the next start: its process is gone
    assert [p for p in state.rglob("*") if p.name.endswith(".tmp")] == []
    assert sorted(p.name for p in state.iterdir() if p.is_file()) == [".gitignore", "audit.json"]


def test_the_host_tag_is_the_host_names_digest_as_before() -> None:
    """The tag is computed lazily (no `socket`, no OpenSSL at import) but stays what it was, so the
    sweep still knows the leftovers an earlier version wrote on this host as this host's."""
    import hashlib
    import socket

    assert patch_files.host_tag() == hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
