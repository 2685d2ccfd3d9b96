"""The `autopatch-tui` console script. Exit codes (contracts §4): 0 success, 1 the operation
failed, 2 usage error, 3 Memory is degraded and the command needs a healthy store. With `--json`
every outcome is exactly one JSON document on stdout, a failure's too (`output.fail`)."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from autopatch_tui import __version__
from autopatch_tui.core.errors import AutopatchError, MemoryDegradedError, UsageError

# `--help`, `--version` and usage errors import no Memory code (issue 23): the settings, the log,
# the manager and what a command runs are imported in `_dispatch`, once the arguments are good.
# `--version` alone builds no parser and imports no command module, nor `logging`, the output or
# signal helpers (issue 33): `main` answers it; `run` and `_dispatch` import what they use.


def _log():  # -> logging.Logger
    import logging

    return logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DEGRADED = 0, 1, 2, 3


@functools.cache
def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size` finds it (COLUMNS, then the terminal)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's own formatter, given the width it would compute: argparse builds one for every
    argument it adds, and finding the width itself imports `shutil` (and its compression modules)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)

class _EpilogFormatter(argparse.RawDescriptionHelpFormatter, _Formatter):
    """The top parser's: its epilog's lines as written, at the width `_Formatter` gives."""


HELP_EPILOG = """\
With no COMMAND, autopatch-tui starts the full-screen app on the repository. No COMMAND starts
the app: each one does its work, prints its result and exits (`--json`: exactly one JSON
document on stdout, an error's too).

exit codes:
  0  success
  1  the operation failed
  2  usage error: an unknown or missing argument, an empty ask or search, an over-long ID or
     label, a --repo that is not a folder, a --path outside the repository
  3  Memory is degraded and the command needs a healthy store (`memory status` prints its
     report, then exits 3 too)
"""


class UsageProblem(Exception):
    """argparse found the command line wrong; `usage` is the parser's usage line."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("unrecognized arguments:") and "--json" in message.split(":", 1)[1].split():
            what = "the full-screen app" if self.prog == "autopatch-tui" else f"`{self.prog}`"
            message = f"{what} has no --json form; run a command with --json"
        raise UsageProblem(message, self.format_usage())


VERSION_TEXT = f"autopatch-tui {__version__}"


class _Version(argparse.Action):
    """`--version`: the version line, or with `--json` anywhere on the line `{"version": str}`."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[no-untyped-def]
        from autopatch_tui.cli.output import RUN, emit_json, say

        if RUN.json_mode:
            emit_json({"version": __version__})
        else:
            say(VERSION_TEXT)
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    from autopatch_tui.cli.chat_cmds import add_chat_parsers
    from autopatch_tui.cli.memory_cmds import add_memory_parsers
    from autopatch_tui.cli.store_cmds import add_store_parsers

    common = _Parser(add_help=False)
    common.add_argument("--repo", default=argparse.SUPPRESS, help="the repository (default: the current folder's)")
    parser = _Parser(prog="autopatch-tui", description="Chat with an AI code assistant about a repository, "
                     "with a durable, auditable project Memory.", parents=[common], epilog=HELP_EPILOG,
                     formatter_class=_EpilogFormatter)
    parser.add_argument("--version", action=_Version, help="print the version and exit (`--json`: {\"version\"})")
    parser.set_defaults(handler=None)
    # an explicit `prog` spares argparse a help formatter (and its `shutil` import) per subparser group
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, prog=parser.prog)
    memory_sub = add_memory_parsers(sub, common)
    add_chat_parsers(sub, memory_sub, common)
    add_store_parsers(memory_sub, common)
    return parser


def command_name(args: argparse.Namespace) -> str:
    """The command's words only (`memory stores add`), never its arguments: safe for the log."""
    words = [getattr(args, k, None) for k in ("command", "memory_command", "stores_action", "review_action")]
    return " ".join(w for w in words if w) or "app"


def wants_json(argv: Sequence[str]) -> bool:
    """`--json` among the options (not after `--`, where it would be an argument's text)."""
    options = argv[:argv.index("--")] if "--" in argv else argv
    return "--json" in options


def run(argv: Sequence[str] | None = None) -> int:
    from autopatch_tui.cli.output import fail, start_run

    argv = list(sys.argv[1:] if argv is None else argv)
    start_run(json_mode=wants_json([a for a in argv if _is_utf8(a)]))
    bad = next((i for i, a in enumerate(argv, 1) if not _is_utf8(a)), None)
    if bad is not None:  # bytes the OS could not decode (surrogateescape): never echoed, never used as a path
        _log().info("command refused: argument %d is not valid UTF-8", bad)
        return fail(EXIT_USAGE, f"argument {bad} is not valid UTF-8 text")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageProblem as exc:
        sys.stderr.write(exc.usage)
        _log().info("command refused: usage")
        return fail(EXIT_USAGE, exc.message)
    command = command_name(args)
    started = time.monotonic()
    rc = _dispatch(args, command)
    _log().info("command %s exit %d after %.2f s", command, rc, time.monotonic() - started)
    return rc


def _is_utf8(arg: str) -> bool:
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _dispatch(args: argparse.Namespace, command: str) -> int:
    from autopatch_tui.cli.after_answer import check_after_answer
    from autopatch_tui.cli.memory_cmds import WORKS_DEGRADED, WORKS_READ_ONLY
    from autopatch_tui.cli.output import fail, warn
    from autopatch_tui.cli.signals import Terminated, command_signals
    from autopatch_tui.cli.store_cmds import REGISTRY_LEVEL
    from autopatch_tui.cli.validate import require_repo_dir

    repo = getattr(args, "repo", None)
    try:
        from autopatch_tui.core.logs import setup_file_log
        from autopatch_tui.core.settings import load_settings

        settings = load_settings()
        setup_file_log(settings)
        _log().debug("command %s started", command)
        if repo is not None:
            require_repo_dir(repo)  # before anything is created next to it
        if args.handler is None:
            from autopatch_tui.tui.launch import (
                launch_app,  # Textual only for the full-screen app
            )

            return launch_app(repo, settings)
        # SIGTERM/SIGHUP raise `Terminated` here, which unwinds to the clean close (leases handed back)
        with command_signals() as closing:
            if args.handler in REGISTRY_LEVEL:  # the per-user registry: no store for the working directory
                return int(args.handler(settings, args))
            precheck = getattr(args, "precheck", None)
            without_store = getattr(args.handler, "without_store", None)
            if precheck is not None or without_store is not None:
                from autopatch_tui.core.identity.repo import resolve_repo_root

                root = resolve_repo_root(repo if repo is not None else Path.cwd())
                if precheck is not None:  # argument checks that need the repository, before its store is opened
                    precheck(args, root)
                if without_store is not None:  # a read that never creates a store where there is none
                    from autopatch_tui.core.stores.presence import has_memory

                    if not has_memory(root, settings.home):
                        return int(without_store(root, args))
            from autopatch_tui.core.manager import MemoryManager

            mgr = MemoryManager.open(repo, settings)
            try:
                if mgr.redirect is not None:
                    warn(mgr.redirect.notice)
                reads = args.handler in WORKS_READ_ONLY or getattr(args.handler, "reads_only", False)
                if not mgr.healthy and args.handler not in WORKS_DEGRADED and not (reads and mgr.readable):
                    mgr.require_healthy()
                rc = int(args.handler(mgr, args))
                check_after_answer(mgr)  # the deep store check, bounded, once the answer is out
                return rc
            finally:
                closing.started = True  # a later signal no longer interrupts: the close is bounded
                mgr.close()
    except UsageError as exc:
        _log().info("command %s refused: %s", command, exc)
        return fail(EXIT_USAGE, str(exc))
    except MemoryDegradedError as exc:
        _log().info("command %s: Memory is degraded", command)
        return fail(EXIT_DEGRADED, f"Memory is degraded: {exc.diagnostic}", degraded_advice(exc))
    except AutopatchError as exc:
        _log().info("command %s failed: %s", command, exc)
        return fail(exc.exit_code if exc.exit_code in (EXIT_FAILED, EXIT_USAGE, EXIT_DEGRADED) else EXIT_FAILED,
                    str(exc))
    except Terminated as exc:
        _log().info("command %s terminated by %s", command, exc.name)
        try:
            return fail(EXIT_FAILED, f"terminated by {exc.name}"
                        + ("; an unfinished turn is kept as failed" if command == "ask" else ""))
        except OSError as write_exc:  # the terminal hung up: the log still says what happened
            _log().info("command %s: stderr is gone (%s)", command, write_exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        _log().info("command %s interrupted", command)
        return fail(EXIT_FAILED, "interrupted")
    except BrokenPipeError:  # output piped into a pager or `head` that closed early
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:  # a bug: one safe line here, its type and frames in the log, no traceback
        _log().error("command %s crashed", command, exc_info=exc)
        return fail(EXIT_FAILED, f"unexpected error ({type(exc).__name__}); see the log at {log_file_hint()}")


def degraded_advice(exc: MemoryDegradedError) -> str:
    """The next step for a degraded store (a second stderr line)."""
    from autopatch_tui.core.memory.render import PERMISSION_CAUSES, degraded_hint

    if "merged into" in exc.diagnostic:
        return "register the holder's checkout or file with `memory stores add PATH` on this machine"
    if getattr(exc, "cause", None) in PERMISSION_CAUSES:
        return degraded_hint(exc.cause)
    return "run `autopatch-tui memory status` for details; `memory clear --confirm` starts a clean store"


def log_file_hint() -> str:
    from autopatch_tui.core.logs import log_path
    from autopatch_tui.core.settings import default_home

    return str(log_path(default_home(os.environ)))


QUIET_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "openai")  # they would log endpoints and prompts


def main(argv: Sequence[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else list(argv)) == ["--version"]:  # what argparse would print, unbuilt
        print(VERSION_TEXT)
        return EXIT_OK
    import logging

    from autopatch_tui.core.logs import guard_handler

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for handler in logging.getLogger().handlers:  # the log file takes INFO/DEBUG; the terminal only warnings
        handler.setLevel(logging.WARNING)
        guard_handler(handler)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    return run(argv)


if __name__ == "__main__":
    raise SystemExit(main())
