"""resolve_repo_root / git_dir_for / read_origin_remote against real repositories built with git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from autopatch_tui.core.errors import RepoPathError
from autopatch_tui.core.identity.repo import git_dir_for, read_origin_remote, resolve_repo_root

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git binary not installed")


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.com",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.com",
        GIT_TERMINAL_PROMPT="0",
    )
    return env


@pytest.fixture
def git(tmp_path: Path):
    home = tmp_path / "_home"
    home.mkdir()
    env = _git_env(home)

    def run(*args: str, cwd: Path) -> str:
        done = subprocess.run(
            [GIT, "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"git {' '.join(args)} failed: {done.stderr}"
        return done.stdout.strip()

    return run


def _init_repo(git, path: Path, *, origin: str | None = None, commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", str(path), cwd=path.parent)
    if origin is not None:
        git("remote", "add", "origin", origin, cwd=path)
    if commit:
        (path / "README").write_text("hello\n")
        git("add", "README", cwd=path)
        git("commit", "-q", "-m", "init", cwd=path)
    return path.resolve()


def _no_git_above(path: Path) -> bool:
    return not any((p / ".git").exists() for p in (path.resolve(), *path.resolve().parents))


# --------------------------------------------------------------------------- resolve_repo_root


def test_normal_repo_from_nested_subfolder(git, tmp_path: Path) -> None:
    root = _init_repo(git, tmp_path / "repo")
    nested = root / "src" / "pkg" / "deep"
    nested.mkdir(parents=True)
    assert resolve_repo_root(nested) == root
    assert resolve_repo_root(str(nested)) == root
    assert resolve_repo_root(root) == root
    assert git("rev-parse", "--show-toplevel", cwd=nested) == str(root)


def test_file_path_means_its_folders_repo(git, tmp_path: Path) -> None:
    root = _init_repo(git, tmp_path / "repo")
    f = root / "src" / "mod.py"
    f.parent.mkdir()
    f.write_text("x = 1\n")
    assert resolve_repo_root(f) == root
    assert resolve_repo_root(root / "README") == root


def test_relative_start_is_resolved_against_cwd(git, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _init_repo(git, tmp_path / "repo")
    (root / "a").mkdir()
    monkeypatch.chdir(root / "a")
    assert resolve_repo_root(".") == root
    assert resolve_repo_root("..") == root


def test_start_through_symlink_resolves_to_real_repo(git, tmp_path: Path) -> None:
    root = _init_repo(git, tmp_path / "repo")
    (root / "sub").mkdir()
    link = tmp_path / "alias"
    link.symlink_to(root / "sub", target_is_directory=True)
    assert resolve_repo_root(link) == root


def test_linked_worktree_resolves_to_main_worktree(git, tmp_path: Path) -> None:
    main = _init_repo(git, tmp_path / "main", origin="git@github.com:Org/Repo.git")
    git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature", cwd=main)
    wt = tmp_path / "wt"
    assert (wt / ".git").is_file()
    (wt / "inner" / "dir").mkdir(parents=True)
    assert resolve_repo_root(wt) == main
    assert resolve_repo_root(wt / "inner" / "dir") == main
    assert resolve_repo_root(wt / "README") == main


def test_worktree_nested_inside_main_repo(git, tmp_path: Path) -> None:
    main = _init_repo(git, tmp_path / "main")
    git("worktree", "add", "-q", str(main / ".worktrees" / "wt"), "-b", "topic", cwd=main)
    assert resolve_repo_root(main / ".worktrees" / "wt") == main


def test_worktree_of_bare_repo_is_its_own_top_level(git, tmp_path: Path) -> None:
    src = _init_repo(git, tmp_path / "src", origin="https://example.com/org/src.git")
    git("clone", "-q", "--bare", str(src), str(tmp_path / "bare.git"), cwd=tmp_path)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=tmp_path / "bare.git")
    wt = (tmp_path / "wt").resolve()
    (wt / "d").mkdir()
    assert resolve_repo_root(wt / "d") == wt
    assert git_dir_for(wt) == (tmp_path / "bare.git").resolve()
    # the bare clone's origin is the source repository path
    assert read_origin_remote(wt) == str(src)


def test_worktree_whose_main_repo_vanished_is_its_own_top_level(git, tmp_path: Path) -> None:
    main = _init_repo(git, tmp_path / "main")
    git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature", cwd=main)
    gitdir = main / ".git" / "worktrees" / "wt"
    (gitdir / "commondir").write_text("../../../nowhere/.git\n")
    assert resolve_repo_root(tmp_path / "wt") == (tmp_path / "wt").resolve()


def test_real_submodule_is_its_own_top_level(git, tmp_path: Path) -> None:
    lib = _init_repo(git, tmp_path / "lib")
    sup = _init_repo(git, tmp_path / "super", origin="https://example.com/super.git")
    git("submodule", "add", "-q", str(lib), "vendor/lib", cwd=sup)
    sub = sup / "vendor" / "lib"
    assert (sub / ".git").is_file()
    assert not (sup / ".git" / "modules" / "vendor" / "lib" / "commondir").exists()
    assert resolve_repo_root(sub / "README") == sub
    assert resolve_repo_root(sup / "vendor") == sup
    assert git_dir_for(sub) == (sup / ".git" / "modules" / "vendor" / "lib").resolve()
    assert read_origin_remote(sub) == str(lib)
    assert read_origin_remote(sup) == "https://example.com/super.git"


def test_handwritten_gitfile_without_commondir(tmp_path: Path) -> None:
    gitdir = tmp_path / "store" / "modules" / "m"
    gitdir.mkdir(parents=True)
    (gitdir / "config").write_text('[remote "origin"]\n\turl = https://example.com/m.git\n')
    sub = tmp_path / "work" / "m"
    (sub / "x").mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../store/modules/m\n")  # relative to the .git file's folder
    assert resolve_repo_root(sub / "x") == sub.resolve()
    assert git_dir_for(sub) == gitdir.resolve()
    assert read_origin_remote(sub) == "https://example.com/m.git"


def test_separate_git_dir_clone(git, tmp_path: Path) -> None:
    src = _init_repo(git, tmp_path / "src")
    (tmp_path / "gitdirs").mkdir()
    git("clone", "-q", "--separate-git-dir", str(tmp_path / "gitdirs" / "c.git"), str(src), str(tmp_path / "c"),
        cwd=tmp_path)
    c = (tmp_path / "c").resolve()
    assert (c / ".git").is_file()
    assert resolve_repo_root(c) == c
    assert git_dir_for(c) == (tmp_path / "gitdirs" / "c.git").resolve()
    assert read_origin_remote(c) == str(src)


def test_non_git_folder_is_itself(tmp_path: Path) -> None:
    if not _no_git_above(tmp_path):
        pytest.skip("tmp_path lies inside a git repository on this machine")
    plain = tmp_path / "plain" / "deeper"
    plain.mkdir(parents=True)
    assert resolve_repo_root(plain) == plain.resolve()
    (plain / "f.txt").write_text("x")
    assert resolve_repo_root(plain / "f.txt") == plain.resolve()
    assert git_dir_for(plain) is None
    assert read_origin_remote(plain) is None


def test_nearest_repo_wins_for_nested_repos(git, tmp_path: Path) -> None:
    outer = _init_repo(git, tmp_path / "outer")
    inner = _init_repo(git, outer / "vendor" / "inner", commit=False)
    assert resolve_repo_root(inner / ".") == inner
    assert resolve_repo_root(outer / "vendor") == outer


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage\n",
        b"gitdir:\n",
        b"gitdir: /definitely/not/here/.git\n",
        b"GITDIR: ../x\n",
        b"\xff\xfe\x00binary\x00",
        b"gitdir: a\x00b\n",
    ],
)
def test_malformed_gitfile_makes_its_folder_the_top_level(tmp_path: Path, content: bytes) -> None:
    proj = tmp_path / "proj"
    (proj / "a" / "b").mkdir(parents=True)
    (proj / ".git").write_bytes(content)
    assert resolve_repo_root(proj / "a" / "b") == proj.resolve()
    assert git_dir_for(proj) is None
    assert read_origin_remote(proj) is None


def test_gitfile_pointing_at_a_file_is_malformed(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "notadir").write_text("x")
    (proj / ".git").write_text("gitdir: ../notadir\n")
    assert resolve_repo_root(proj) == proj.resolve()
    assert git_dir_for(proj) is None


def test_gitfile_with_crlf_and_absolute_path(tmp_path: Path) -> None:
    gitdir = tmp_path / "gd"
    gitdir.mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".git").write_bytes(b"gitdir: " + str(gitdir).encode() + b"\r\n")
    assert resolve_repo_root(proj) == proj.resolve()
    assert git_dir_for(proj) == gitdir.resolve()


def test_missing_path_raises_repo_path_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "still-nope"
    with pytest.raises(RepoPathError, match="does not exist") as info:
        resolve_repo_root(missing)
    assert str(missing) in str(info.value)
    assert info.value.exit_code == 2


def test_dangling_symlink_raises_repo_path_error(tmp_path: Path) -> None:
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(RepoPathError):
        resolve_repo_root(link)


def test_empty_or_bad_type_raises_repo_path_error() -> None:
    with pytest.raises(RepoPathError):
        resolve_repo_root("")
    with pytest.raises(RepoPathError):
        resolve_repo_root("   ")
    with pytest.raises(RepoPathError):
        resolve_repo_root(42)  # type: ignore[arg-type]
    with pytest.raises(RepoPathError):
        resolve_repo_root(b"/tmp")  # type: ignore[arg-type]


def test_environment_is_ignored(git, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _init_repo(git, tmp_path / "a", origin="https://example.com/a.git")
    b = _init_repo(git, tmp_path / "b", origin="https://example.com/b.git")
    monkeypatch.setenv("GIT_DIR", str(b / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(b))
    monkeypatch.setenv("GIT_COMMON_DIR", str(b / ".git"))
    assert resolve_repo_root(a) == a
    assert git_dir_for(a) == a / ".git"
    assert read_origin_remote(a) == "https://example.com/a.git"


# --------------------------------------------------------------------------- git_dir_for / origin


def test_git_dir_for_normal_and_worktree(git, tmp_path: Path) -> None:
    main = _init_repo(git, tmp_path / "main")
    git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature", cwd=main)
    assert git_dir_for(main) == main / ".git"
    # called on the linked worktree itself, the remotes still live in the main repository's config
    assert git_dir_for(tmp_path / "wt") == main / ".git"


def test_origin_set_with_git_remote_add(git, tmp_path: Path) -> None:
    root = _init_repo(git, tmp_path / "repo", origin="git@github.com:Org/Repo.git")
    git("remote", "add", "upstream", "https://example.com/upstream.git", cwd=root)
    assert read_origin_remote(root) == "git@github.com:Org/Repo.git"  # raw, not normalized


def test_origin_after_set_url(git, tmp_path: Path) -> None:
    root = _init_repo(git, tmp_path / "repo", origin="https://old.example.com/r.git")
    git("remote", "set-url", "origin", "ssh://git@new.example.com:2222/r.git", cwd=root)
    assert read_origin_remote(root) == "ssh://git@new.example.com:2222/r.git"


def test_repo_without_origin(git, tmp_path: Path) -> None:
    root = _init_repo(git, tmp_path / "repo")
    git("remote", "add", "upstream", "https://example.com/upstream.git", cwd=root)
    assert read_origin_remote(root) is None


def test_worktree_reads_main_repos_origin(git, tmp_path: Path) -> None:
    main = _init_repo(git, tmp_path / "main", origin="https://github.com/org/repo.git")
    git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature", cwd=main)
    assert read_origin_remote(resolve_repo_root(tmp_path / "wt")) == "https://github.com/org/repo.git"
    assert read_origin_remote(tmp_path / "wt") == "https://github.com/org/repo.git"


def test_missing_or_unreadable_config(git, tmp_path: Path) -> None:
    root = _init_repo(git, tmp_path / "repo", origin="https://example.com/r.git")
    config = root / ".git" / "config"
    config.unlink()
    assert read_origin_remote(root) is None
    config.mkdir()  # a directory where the file should be: unreadable
    assert read_origin_remote(root) is None


HANDWRITTEN = r"""# a comment line
; another comment
[core]
	bare = false
[remote "upstream"]
	url = https://example.com/upstream.git
[remote "Origin"]
	url = https://example.com/wrong-case-subsection.git
[Remote "origin"]   ; section names are case-insensitive
	fetch = +refs/heads/*:refs/remotes/origin/*
	pushurl = https://example.com/push.git
	URL = "https://example.com/my repo;v1#x.git"  # trailing comment
	url = https://example.com/second.git
"""


def _write_config(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "hand"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(text)
    return root


def _git_says(git, root: Path) -> str | None:
    """What git itself reads (our parser must agree)."""
    done = subprocess.run(
        [GIT, "config", "--file", str(root / ".git" / "config"), "--get-all", "remote.origin.url"],
        capture_output=True,
        text=True,
        env=_git_env(root),
        check=False,
    )
    return done.stdout.splitlines()[0] if done.returncode == 0 and done.stdout else None


def test_handwritten_config_quotes_comments_and_case(git, tmp_path: Path) -> None:
    root = _write_config(tmp_path, HANDWRITTEN)
    assert read_origin_remote(root) == "https://example.com/my repo;v1#x.git"
    assert _git_says(git, root) == "https://example.com/my repo;v1#x.git"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[remote "origin"]\n  url=https://e.com/a.git\n', "https://e.com/a.git"),
        ('[remote "origin"] url = https://e.com/same-line.git\n', "https://e.com/same-line.git"),
        ('[remote "origin"]\n\turl = https://e.com/a.git ; comment\n', "https://e.com/a.git"),
        ('[remote "origin"]\n\turl = "  padded  "\n', "  padded  "),
        ('[remote "origin"]\n\turl = a  \t b\n', "a    b"),  # each inner blank -> a space, like git
        ('[remote "origin"]\n\turl = "C:\\\\repos\\\\x.git"\n', "C:\\repos\\x.git"),
        ('[remote "origin"]\n\turl = say \\"hi\\"\n', 'say "hi"'),
        ('[remote "origin"]\n\turl = https://e.com/\\\n  cont.git\n', "https://e.com/  cont.git"),  # git keeps the indent
        ("[remote.origin]\n\turl = https://e.com/legacy.git\n", "https://e.com/legacy.git"),
        ("[remote.ORIGIN]\n\turl = https://e.com/legacy-lower.git\n", "https://e.com/legacy-lower.git"),
        ('[remote "origin"]\n\turl\n\turl = https://e.com/after-novalue.git\n', "https://e.com/after-novalue.git"),
        ('[remote "origin"]\n\turl = "unterminated\n\turl = https://e.com/next.git\n', "https://e.com/next.git"),
        ('[remote "origin"]\n\turl = bad \\q escape\n\turl = https://e.com/ok.git\n', "https://e.com/ok.git"),
        ('[remote "o\\"rigin"]\n\turl = https://e.com/escaped.git\n', None),
        ('[remote "origin"]\n\tpushurl = https://e.com/p.git\n', None),
        ('[remote "origin2"]\n\turl = https://e.com/2.git\n', None),
        ('[remote]\n\turl = https://e.com/nosub.git\n', None),
        ('[remote "origin"]\n#\turl = https://e.com/commented.git\n', None),
        ('[remote "origin"]\n\turl = ""\n', None),
        ("", None),
        ('\ufeff[remote "origin"]\n\turl = https://e.com/bom.git\n', "https://e.com/bom.git"),
        ('[remote "origin"]\r\n\turl = https://e.com/crlf.git\r\n', "https://e.com/crlf.git"),
    ],
)
def test_config_parsing(git, tmp_path: Path, text: str, expected: str | None) -> None:
    root = _write_config(tmp_path, text)
    assert read_origin_remote(root) == expected


@pytest.mark.parametrize(
    "text",
    [
        HANDWRITTEN,
        '[remote "origin"]\n\turl = "  padded  "\n',
        '[remote "origin"]\n\turl = a  \t b\n',
        '[remote "origin"]\n\turl = https://e.com/\\\n  cont.git\n',
        "[remote.ORIGIN]\n\turl = https://e.com/legacy-lower.git\n",
        '[remote "origin"] url = https://e.com/same-line.git\n',
        '[remote "origin"]\n\turl = say \\"hi\\"\n',
    ],
)
def test_parser_agrees_with_git(git, tmp_path: Path, text: str) -> None:
    root = _write_config(tmp_path, text)
    assert read_origin_remote(root) == _git_says(git, root)
