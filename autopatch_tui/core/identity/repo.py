"""Find the repository a command works on, and read its `origin` remote, from the filesystem alone.

No git binary, no subprocess, and nothing from the environment (GIT_DIR, GIT_WORK_TREE, ...):
the answer depends only on the path given and the files around it.

Layouts understood when walking up from the start folder:

* `.git` directory                      -> its parent is the top-level.
* `.git` file `gitdir: <dir>` where `<dir>` holds `commondir` (a linked worktree, `git worktree add`):
    - common dir named `.git`           -> the MAIN worktree's top-level (the common dir's parent);
    - any other name (a bare repo, or a `--separate-git-dir` / submodule git dir)
                                        -> the linked worktree's own top-level.
* `.git` file without `commondir` (submodule, `git clone --separate-git-dir`)
                                        -> the folder holding the `.git` file.
* a malformed `.git` file (no `gitdir:` line, target missing, unreadable)
                                        -> the folder holding it; never an error.
* no `.git` anywhere up to the filesystem root -> the start folder itself.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autopatch_tui.core.errors import RepoPathError

__all__ = ["git_dir_for", "read_origin_remote", "resolve_repo_root"]

# A `.git` file or `commondir` file is one short line; anything bigger is not one.
_MAX_POINTER_BYTES = 64 * 1024
# A git config bigger than this is not something we parse.
_MAX_CONFIG_BYTES = 4 * 1024 * 1024


# --------------------------------------------------------------------------- filesystem helpers


def _stat_mode(path: Path) -> int | None:
    """`st_mode` following symlinks, or None when the path cannot be stat'ed (missing, no permission...)."""
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return None


def _is_dir(path: Path) -> bool:
    mode = _stat_mode(path)
    return mode is not None and stat.S_ISDIR(mode)


def _is_file(path: Path) -> bool:
    mode = _stat_mode(path)
    return mode is not None and stat.S_ISREG(mode)


def _read_small_text(path: Path, limit: int) -> str | None:
    """The file's text (UTF-8, undecodable bytes replaced), or None if unreadable, not a regular file
    (checked on what was opened, which never blocks: a FIFO there is not waited on) or larger than
    `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")


def _first_line(text: str) -> str:
    """The first line without its line terminator."""
    return text.splitlines()[0] if text else ""


def _read_gitfile(dotgit: Path) -> Path | None:
    """The git dir a `.git` file points at (`gitdir: <path>`, relative to the file's folder), or None when
    the file is malformed or the target is not a directory."""
    text = _read_small_text(dotgit, _MAX_POINTER_BYTES)
    if text is None:
        return None
    line = _first_line(text.lstrip("\ufeff"))
    prefix = "gitdir:"
    if not line.startswith(prefix):
        return None
    target = line[len(prefix):].strip()
    if not target or "\x00" in target:
        return None
    try:
        gitdir = (dotgit.parent / target).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return gitdir if _is_dir(gitdir) else None


def _common_dir(gitdir: Path) -> Path | None:
    """The directory `<gitdir>/commondir` names (relative to `gitdir`); present only in the git dir of a
    linked worktree. None when there is no `commondir` or it does not lead to a directory (a worktree
    whose main repository was moved or deleted) -- both mean "use this worktree on its own"."""
    pointer = gitdir / "commondir"
    if not _is_file(pointer):
        return None
    text = _read_small_text(pointer, _MAX_POINTER_BYTES)
    target = _first_line(text).strip() if text is not None else ""
    if not target or "\x00" in target:
        return None
    try:
        common = (gitdir / target).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return common if _is_dir(common) else None


# --------------------------------------------------------------------------- public API


def resolve_repo_root(start: str | os.PathLike[str]) -> Path:
    """The top-level folder of the repository containing `start` (see the module docstring for the rules).

    `start` must exist; a file stands for its parent folder. Raises `RepoPathError` otherwise.
    """
    try:
        text = os.fspath(start)
    except TypeError as exc:
        raise RepoPathError(f"repository path must be a path, got {type(start).__name__}") from exc
    if not isinstance(text, str):
        raise RepoPathError(f"repository path must be text, got {type(text).__name__}")
    if not text:
        raise RepoPathError("repository path is empty")
    raw = Path(text)
    try:
        here = raw.resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise RepoPathError(f"repository path cannot be resolved: {raw}") from exc
    mode = _stat_mode(here)
    if mode is None:
        raise RepoPathError(f"repository path does not exist: {raw}")
    if not stat.S_ISDIR(mode):
        here = here.parent

    for folder in (here, *here.parents):
        dotgit = folder / ".git"
        dot_mode = _stat_mode(dotgit)
        if dot_mode is None:
            continue
        if stat.S_ISDIR(dot_mode):
            return folder
        if stat.S_ISREG(dot_mode):
            return _top_level_for_gitfile(folder, dotgit)
        # A `.git` that is neither a folder nor a regular file (fifo, socket...) is not a repository marker.
    return here


def _top_level_for_gitfile(folder: Path, dotgit: Path) -> Path:
    gitdir = _read_gitfile(dotgit)
    if gitdir is None:
        return folder  # malformed `.git` file: the folder is the top-level
    common = _common_dir(gitdir)
    if common is None:
        return folder  # submodule / separate git dir, or a worktree whose common dir is gone
    if common.name == ".git":
        return common.parent  # linked worktree of a normal repository: the main worktree
    return folder  # linked worktree of a bare repository (or of a separate git dir)


def git_dir_for(root: Path) -> Path | None:
    """The git directory whose `config` holds the remotes of the repository at `root` (a top-level as
    returned by `resolve_repo_root`): `root/.git`, the `gitdir:` target of a `.git` file, or that
    target's common dir for a linked worktree. None when `root` is not a repository top-level."""
    dotgit = Path(root) / ".git"
    mode = _stat_mode(dotgit)
    if mode is None:
        return None
    if stat.S_ISDIR(mode):
        return dotgit.resolve()
    if not stat.S_ISREG(mode):
        return None
    gitdir = _read_gitfile(dotgit)
    if gitdir is None:
        return None
    common = _common_dir(gitdir)
    return gitdir if common is None else common


def read_origin_remote(root: Path) -> str | None:
    """The raw `url` of `[remote "origin"]` in the repository's git config (the first one if there are
    several), exactly as written after git-config unquoting. None when there is no git dir, no config,
    the config is unreadable, or it has no (non-blank) origin url. A line git would reject is skipped;
    `include`/`includeIf` files are not followed; `url.<base>.insteadOf` rewrites are not applied."""
    gitdir = git_dir_for(root)
    if gitdir is None:
        return None
    text = _read_small_text(gitdir / "config", _MAX_CONFIG_BYTES)
    if text is None:
        return None
    url = _first_config_value(text, section="remote", subsection="origin", key="url")
    if url is None or not url.strip():
        return None
    return url


# --------------------------------------------------------------------------- git-config parsing


class _ConfigSyntaxError(ValueError):
    """One line of a git config could not be parsed; that line is skipped."""


def _first_config_value(text: str, *, section: str, subsection: str | None, key: str) -> str | None:
    """First value of `section.subsection.key` in git-config `text`.

    Section and key names compare case-insensitively, the quoted subsection case-sensitively (the
    legacy `[section.sub]` form is lower-cased, as git does). A line git would reject is skipped.
    """
    want = (section.lower(), subsection, key.lower())
    current: tuple[str, str | None] | None = None
    lines = text.lstrip("\ufeff").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        rest = line.lstrip(" \t")
        if not rest or rest[0] in "#;":
            continue
        if rest[0] == "[":
            try:
                current, rest = _parse_section_header(rest)
            except _ConfigSyntaxError:
                current = None  # entries under a broken header belong to no section we know
                continue
            rest = rest.lstrip(" \t")
            if not rest or rest[0] in "#;":
                continue
        try:
            name, value, i = _parse_entry(rest, lines, i)
        except _ConfigSyntaxError:
            continue
        if value is not None and current is not None and (current[0], current[1], name) == want:
            return value
    return None


def _parse_section_header(text: str) -> tuple[tuple[str, str | None], str]:
    """Parse `[name]`, `[name "sub"]` or legacy `[name.sub]` at the start of `text`.
    Returns ((lower-cased name, subsection), text after the closing bracket)."""
    pos = 1
    n = len(text)
    start = pos
    while pos < n and (text[pos].isalnum() or text[pos] in "-."):
        pos += 1
    name = text[start:pos]
    if not name:
        raise _ConfigSyntaxError("empty section name")
    if pos < n and text[pos] == "]":
        if "." in name:
            head, _, sub = name.partition(".")
            if not head or not sub:
                raise _ConfigSyntaxError("bad legacy subsection")
            return (head.lower(), sub.lower()), text[pos + 1:]
        return (name.lower(), None), text[pos + 1:]
    if "." in name:
        raise _ConfigSyntaxError("dotted section name with quoted subsection")
    while pos < n and text[pos] in " \t":
        pos += 1
    if pos >= n or text[pos] != '"':
        raise _ConfigSyntaxError("expected subsection")
    pos += 1
    sub: list[str] = []
    while True:
        if pos >= n:
            raise _ConfigSyntaxError("unterminated subsection")
        ch = text[pos]
        pos += 1
        if ch == '"':
            break
        if ch == "\\":
            if pos >= n:
                raise _ConfigSyntaxError("unterminated subsection")
            ch = text[pos]
            pos += 1
        sub.append(ch)
    if pos >= n or text[pos] != "]":
        raise _ConfigSyntaxError("expected ]")
    return (name.lower(), "".join(sub)), text[pos + 1:]


def _parse_entry(text: str, lines: list[str], next_index: int) -> tuple[str, str | None, int]:
    """Parse `key`, `key = value` at the start of `text` (continuation lines taken from `lines`).
    Returns (lower-cased key, value, index of the next unread line). A bare `key` (git's "no value",
    boolean true) has value None."""
    pos = 0
    n = len(text)
    if not text[0].isalpha():
        raise _ConfigSyntaxError("bad key")
    while pos < n and (text[pos].isalnum() or text[pos] == "-"):
        pos += 1
    name = text[:pos].lower()
    while pos < n and text[pos] in " \t":
        pos += 1
    if pos >= n or text[pos] in "#;":
        return name, None, next_index
    if text[pos] != "=":
        raise _ConfigSyntaxError("expected =")
    value, next_index = _parse_value(text[pos + 1:], lines, next_index)
    return name, value, next_index


_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}


def _parse_value(text: str, lines: list[str], next_index: int) -> tuple[str, int]:
    """git's value rules: outside quotes leading/trailing blanks are dropped, each inner blank becomes a
    space and `#`/`;` start a comment; `"` toggles quoting; escapes \\t \\b \\n \\\\ \\"; a backslash at
    the end of a line continues the value on the next line."""
    out: list[str] = []
    quoted = False
    pending_spaces = 0
    pos = 0
    while True:
        if pos >= len(text):
            if quoted:
                raise _ConfigSyntaxError("unterminated quote")
            return "".join(out), next_index
        ch = text[pos]
        pos += 1
        if ch in " \t\r\f\v" and not quoted:
            if out:
                pending_spaces += 1
            continue
        if not quoted and ch in "#;":
            return "".join(out), next_index
        out.append(" " * pending_spaces)
        pending_spaces = 0
        if ch == "\\":
            if pos >= len(text):  # line continuation
                if next_index >= len(lines):
                    return "".join(out), next_index
                text = lines[next_index]
                next_index += 1
                pos = 0
                continue
            esc = text[pos]
            pos += 1
            if esc not in _ESCAPES:
                raise _ConfigSyntaxError("unknown escape")
            out.append(_ESCAPES[esc])
            continue
        if ch == '"':
            quoted = not quoted
            continue
        out.append(ch)
