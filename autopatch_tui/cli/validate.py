"""Checks of command-line input that argparse alone does not make (contracts §4: usage errors exit 2).

Light on purpose: only the standard library and the package's error types, so the CLI starts fast."""

from __future__ import annotations

import argparse
import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from autopatch_tui.core.confine import ConfinementError, check_text, confine, kind_of, resolve_inside, shown
from autopatch_tui.core.errors import RepoPathError, UsageError
from autopatch_tui.core.ids import id_problem
from autopatch_tui.core.terminal_text import has_controls, plain_os_error

MAX_TIMEOUT_SECONDS = 3600.0  # an hour: anything longer is a typo, not a wait anyone means


def timeout_seconds(text: str) -> float:
    """An argparse `type`: a finite number of seconds in [0, MAX_TIMEOUT_SECONDS]. `float()` alone
    accepts "-1", "nan", "inf" and "1e308"."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0 or value > MAX_TIMEOUT_SECONDS:
        raise argparse.ArgumentTypeError(f"the timeout must be between 0 and {MAX_TIMEOUT_SECONDS:g} seconds")
    return value


def require_repo_dir(raw: str) -> None:
    """`--repo` must name an existing directory (a file there once made its folder the repository)."""
    if not raw:
        raise RepoPathError("repository path is empty")
    try:
        mode = os.stat(raw).st_mode
    except FileNotFoundError:
        raise RepoPathError(f"repository path does not exist: {raw}") from None
    except (OSError, ValueError) as exc:
        raise RepoPathError(f"repository path cannot be read: {raw}: {plain_os_error(exc)}") from None
    if not stat.S_ISDIR(mode):
        raise RepoPathError(f"repository path is not a directory: {raw}")


def non_blank_query(text: str) -> str:
    """An argparse `type`: a search query with something in it (an empty one once crashed the search)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the search query is empty")
    return text


def non_blank_message(text: str) -> str:
    """An argparse `type`: an `ask` message with something in it (an empty one was sent to the model)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the message is empty")
    return text


def record_id(text: str) -> str:
    """An argparse `type`: an item, job or store ID (or a unique prefix of one): at most
    MAX_ID_CHARS characters, no control characters. An over-long one is never echoed back."""
    problem = id_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text.strip()


def label_text(text: str) -> str:
    """An argparse `type`: a store label: one line of printable text (the registry's length bound
    is checked by the store service, the one door for the app and the CLI)."""
    if has_controls(text):
        raise argparse.ArgumentTypeError("a label is one line of text without control characters")
    return text


def export_target(text: str) -> str:
    """An argparse `type`: `--to PATH` names a path (an empty one once wrote to the default folder)."""
    if not text.strip() or "\x00" in text:
        raise argparse.ArgumentTypeError("--to needs a file or folder path")
    return text


def scope_paths(repo: Path, paths: Sequence[str], *, must_exist: bool) -> list[str]:
    """`--path` values as repository-relative POSIX paths. A relative path is taken relative to the
    repository root (as stored scope paths and `@path` in the app are); an absolute one must lie in
    the repository. Symlinks are resolved before the check, so a link leading out is refused too.
    The repository root is kept as "." (the tools' name for it; "" is refused by `confine`), and a
    path the tools' shared confinement check refuses (e.g. under `.git/` or `.autopatch-j/`) is
    refused here too — a symlink loop, a NUL byte or an over-long path as well. Outside the
    repository, refused, or missing when `must_exist` → `UsageError`."""
    root = repo.resolve()
    out: list[str] = []
    for raw in paths:
        text = raw.strip()
        if not text:
            raise UsageError("--path needs a path inside the repository")
        try:
            check_text(text)
            given = Path(text).expanduser()
            target = given if given.is_absolute() else root / given
            check_text(str(target))
            resolved = resolve_inside(target)
        except ConfinementError as exc:
            raise UsageError(f"--path is refused: {shown(text)} ({exc})") from None
        except (RuntimeError, ValueError, OSError):  # expanduser of an unknown "~name" and the like
            raise UsageError(f"--path cannot be resolved: {shown(text)}") from None
        try:
            rel = resolved.relative_to(root)
        except ValueError:
            raise UsageError(f"--path is outside the repository ({root}): {shown(text)}") from None
        try:  # keep the name the user gave (a link inside the repository stays the link's name)
            rel = Path(os.path.normpath(target)).relative_to(root)
        except ValueError:
            pass
        value = rel.as_posix()  # "." for the repository root
        try:  # the one check every tool applies: a scope the tools would refuse is refused here
            confine(root, value)
        except ConfinementError as exc:
            raise UsageError(f"--path is refused: {shown(text)} ({exc})") from None
        if must_exist and kind_of(resolved) is None:
            raise UsageError(f"--path does not exist in the repository: {shown(text)}"
                             " (relative paths are relative to the repository root)")
        if value not in out:
            out.append(value)
    return out


MAX_PAGE = 10_000  # core/memory/pages.py MAX_LIMIT (not imported: `--help` builds this parser)


def page_limit(text: str) -> int:
    """An argparse `type`: `--limit N`, 1 to MAX_PAGE."""
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_PAGE:
        raise argparse.ArgumentTypeError(f"a number from 1 to {MAX_PAGE:,} is expected")
    return int(text)


def page_cursor(text: str) -> str:
    """An argparse `type`: `--after CURSOR`, the cursor a previous page printed (its shape is
    checked by the command)."""
    if id_problem(text):  # empty, over-long or with control characters: never echoed
        raise argparse.ArgumentTypeError("not a cursor a page printed")
    return text.strip()


def add_paging(parser: argparse.ArgumentParser) -> None:
    """`--limit N --after CURSOR` (issue 33): one page; `--json` adds `"next": CURSOR | null`."""
    parser.add_argument("--limit", type=page_limit, metavar="N", help="show one page of at most N")
    parser.add_argument("--after", type=page_cursor, metavar="CURSOR", help="the page after this cursor "
                        "(printed under a page, and as \"next\" in --json)")
