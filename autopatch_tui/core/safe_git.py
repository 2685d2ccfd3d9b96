"""Every `git` the product runs goes through `run_git` (contracts §1; issue 28 item 2).

git honours the repository's own configuration, and some of it names commands git runs: a
repository (or a clone of one with a hand-edited `.git/config`) would run its code as the user.
`run_git` runs git with none of them:

- `core.fsmonitor=false`, `core.hooksPath=/dev/null` (no hook exists there), `diff.external=` and,
  for a command that can show a diff, `--no-ext-diff --no-textconv`; `core.pager=cat` and `--no-pager`, no askpass, credential helper, ssh command or editor, and
  `protocol.allow=never` (no transport at all);
- every filter, diff and merge driver the repository's configuration names (`filter.X.clean`,
  `.smudge`, `.process`; `diff.X.textconv`, `.command`; `merge.X.driver`) is set to nothing for
  the call — `.gitattributes` can only pick a driver by name, so none is left to run; a driver
  name that cannot be overridden on a command line refuses the call (`GitError`);
- an environment without the caller's `GIT_*` variables, with `GIT_CONFIG_NOSYSTEM=1`,
  `GIT_CONFIG_GLOBAL=/dev/null` (the product needs no user setting), `GIT_TERMINAL_PROMPT=0`,
  `GIT_OPTIONAL_LOCKS=0` (a read never rewrites the index);
- stdin closed, `/` as the working folder (`-C` names the repository, `--work-tree` makes it the
  work tree whatever `core.worktree` says), a timeout, bounded output.

A git that is missing, times out, or refuses the repository (one owned by another user: "dubious
ownership", since no user `safe.directory` applies here) raises `GitError` with one plain sentence;
callers fall back to walking the folder themselves."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from autopatch_tui.core.errors import AutopatchError

GIT_TIMEOUT_SECONDS = 10.0
MAX_OUTPUT_BYTES = 256 << 20

NEUTRAL_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "sequence.editor=false",
    "core.askPass=",
    "core.sshCommand=",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",
    "core.untrackedCache=false",
    "gpg.program=false",
)
# Commands that may show a diff: they get `--no-ext-diff --no-textconv` (a driver set to nothing
# by `-c` would fail the call rather than run, but these flags keep them from being looked up).
_DIFF_COMMANDS = frozenset({"diff", "log", "show", "whatchanged", "diff-files", "diff-index", "diff-tree",
                            "format-patch", "blame", "annotate"})
# Keys of repository configuration that name a command git may run for one path.
_DRIVER_KEY = re.compile(r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(textconv|command)|merge\..+\.driver)$",
                         re.IGNORECASE | re.DOTALL)


class GitError(AutopatchError):
    """git could not be used for this repository; the message is one plain sentence."""


def git_env() -> dict[str, str]:
    """The environment of every git call: the caller's without `GIT_*`, plus the fixed settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("PAGER", "SSH_ASKPASS")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0",
               GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", PAGER="cat", GIT_ASKPASS="", LC_ALL="C")
    return env


def _base(repo: Path, config: Sequence[str]) -> list[str]:
    # `--work-tree`: the repository is the work tree, whatever `core.worktree` its configuration
    # names (it would point `ls-files` at any folder the user can read); a `-c core.worktree=` is
    # not enough: git reads that key from the repository's own file while it sets up
    argv = ["git", "--no-pager", "-C", str(repo), f"--work-tree={repo}"]
    for item in config:
        argv += ["-c", item]
    return argv


def _run(argv: list[str], timeout: float) -> tuple[int, bytes, bytes]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd="/", env=git_env(),
                                  timeout=timeout, check=False)
        except FileNotFoundError:
            raise GitError("git is not installed (not found on PATH)") from None
        except subprocess.TimeoutExpired:
            raise GitError(f"git did not answer within {timeout:g} s") from None
        except OSError as exc:
            raise GitError(f"git could not start ({exc.strerror or type(exc).__name__})") from None
        if os.fstat(out.fileno()).st_size > MAX_OUTPUT_BYTES:
            raise GitError(f"git printed more than {MAX_OUTPUT_BYTES >> 20} MB")
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(64 * 1024)


def _refusal(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").lower()
    if "dubious ownership" in text or "safe.directory" in text:
        return "git refuses this repository (it belongs to another user)"
    if "not a git repository" in text:
        return "git does not see a repository here"
    return "git failed on this repository"


def driver_overrides(repo: Path, timeout: float = GIT_TIMEOUT_SECONDS) -> list[str]:
    """`KEY=` for every filter, diff and merge driver command the repository's configuration sets.
    `GitError` when one cannot be written as `-c KEY=` (a name holding `=` or a line break)."""
    code, out, err = _run(_base(repo, NEUTRAL_CONFIG) + ["config", "--null", "--name-only", "--list"], timeout)
    if code != 0:
        raise GitError(_refusal(err))
    keys = sorted({k for k in out.decode("utf-8", "surrogateescape").split("\0") if _DRIVER_KEY.match(k)})
    if any("=" in k or "\n" in k for k in keys):
        raise GitError("the repository's git configuration names a driver git cannot be told to skip")
    return [f"{k}=" for k in keys]


def _with_diff_flags(args: Sequence[str]) -> list[str]:
    """`args` with `--no-ext-diff --no-textconv` after the subcommand when it can show a diff."""
    args = list(args)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-c", "-C") else 1  # global options before the subcommand
    if i < len(args) and args[i] in _DIFF_COMMANDS:
        args[i + 1:i + 1] = ["--no-ext-diff", "--no-textconv"]
    return args


def run_git(repo: Path, args: Sequence[str], *, timeout: float = GIT_TIMEOUT_SECONDS) -> bytes:
    """git's standard output for `git args` in `repo` (see the module doc); `GitError` otherwise."""
    config = [*NEUTRAL_CONFIG, *driver_overrides(repo, timeout)]
    code, out, err = _run(_base(repo, config) + _with_diff_flags(args), timeout)
    if code != 0:
        raise GitError(_refusal(err))
    return out
