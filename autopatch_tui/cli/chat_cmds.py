"""`autopatch-tui ask` and `autopatch-tui memory search`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from autopatch_tui.cli.output import emit_json, say, warn
from autopatch_tui.cli.signals import exit_signals
from autopatch_tui.cli.validate import add_paging, non_blank_message, non_blank_query, scope_paths
from autopatch_tui.core import constants as C

if TYPE_CHECKING:  # the parser is built without them (`--help` imports no Memory code)
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.pipeline.exit_once import ExitOutcome


def check_ask(args: argparse.Namespace, repo: Path) -> None:
    """Before the store opens: the message (TEXT, or stdin for `-` or no TEXT), and every `--path`
    exists inside the repository (never saved as scope otherwise)."""
    args.text = ask_message(args.text, sys.stdin)
    args.path = scope_paths(repo, args.path or [], must_exist=True)


MAX_STDIN_BYTES = 1 << 20  # 1 MiB: a message, not a file dump; more is refused, never cut


def ask_message(text: str | None, stdin: TextIO | None) -> str:
    """The message of `ask` (contracts §4): TEXT, or stdin when TEXT is `-` or omitted and stdin
    is not a terminal. Read bounded, as UTF-8; empty, too large or not text → `UsageError` (rc 2)."""
    from autopatch_tui.core.errors import UsageError

    if text is not None and text != "-":
        return text
    if stdin is None or (text is None and _is_terminal(stdin)):
        raise UsageError("ask needs a message: TEXT, or `-` (or a pipe) to read it from stdin")
    source = getattr(stdin, "buffer", None)
    try:
        raw = source.read(MAX_STDIN_BYTES + 1) if source is not None else stdin.read(MAX_STDIN_BYTES + 1).encode()
    except (OSError, ValueError) as exc:
        raise UsageError(f"ask: stdin cannot be read ({type(exc).__name__})") from None
    if len(raw) > MAX_STDIN_BYTES:
        raise UsageError(f"ask: the message on stdin is over {MAX_STDIN_BYTES // (1 << 20)} MiB; nothing was sent")
    try:
        message = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("ask: the message on stdin is not UTF-8 text") from None
    if message.startswith("\ufeff"):  # a byte-order mark some editors write
        message = message[1:]
    if not message.strip():
        raise UsageError("the message is empty")
    return message


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False


def check_search(args: argparse.Namespace, repo: Path) -> None:
    args.path = scope_paths(repo, args.path or [], must_exist=False)  # a deleted file may still be recalled


def cmd_ask(mgr: MemoryManager, args: argparse.Namespace) -> int:
    from autopatch_tui.core.agent.chat import ChatService  # the agent only for `ask` (slow import)
    from autopatch_tui.core.logs import log_path
    from autopatch_tui.core.pipeline.exit_once import ExitFlush

    exit_flush = ExitFlush(lambda: mgr, wait_for_turns=False)  # the app's bounded, once-only exit flush
    with exit_signals(exit_flush):  # SIGTERM/SIGHUP end the turn (saved as failed), then the flush runs
        try:
            result = ChatService(mgr).ask(args.text, intent=args.intent, scope_paths=args.path or [])
        finally:
            _report_flush(exit_flush.run("ask"), log_path(mgr.settings.home))
    if args.json:
        emit_json({"turn_id": result.turn_id, "thread_id": result.thread_id, "answer": result.answer,
                   "state": result.state, "memory_used": [u.as_json() for u in result.memory_used]})
    else:
        say(result.answer)
    return 0


def _report_flush(outcome: ExitOutcome | None, log_file: Path) -> None:
    if outcome is None:
        return
    if outcome.timed_out:
        warn("the Memory flush took too long; pending jobs resume at the next start")
    flush = outcome.result
    if flush is None:
        if not outcome.timed_out:  # it failed: the log has the error's type (never its message)
            warn(f"the Memory flush failed; see {log_file}")
        return
    if flush.retry_wait:
        warn(f"{flush.retry_wait} Memory job(s) will be retried at the next start")
    if flush.failed:
        warn(f"{flush.failed} Memory job(s) failed; `memory status` shows why")


def cmd_search(mgr: MemoryManager, args: argparse.Namespace) -> int:
    from autopatch_tui.core.errors import UsageError
    from autopatch_tui.core.recall.cli_search import search_memory
    from autopatch_tui.core.recall.session import RecallLimitError

    try:
        results = search_memory(mgr, args.query, args.intent or "general_chat", args.path or ())
    except RecallLimitError as exc:  # a query without searchable text
        raise UsageError(f"memory search: {exc}") from None
    paged = args.limit is not None or args.after is not None
    shown_ids = [r["id"] for r in results]  # every match, not only this page
    results, cursor = search_page(results, args.limit, args.after) if paged else (results, None)
    if args.json:
        emit_json({"results": results, "next": cursor})
        return 0
    from autopatch_tui.core.recall.cli_search import held_back_matches

    held = held_back_matches(mgr, args.query, shown_ids, args.intent or "general_chat", args.path or ())
    if not results:
        say("No matching Memory items.")
    for r in results:
        say(f"{r['id']}  [{r['kind']}] {r['subject']}: {r['statement']}  ({r['match_type']})")
    if cursor is not None:
        say(f"... more: the same search with `--after {cursor}`")
    if held:  # review mode hides them: say so, or a user wonders why a fact they taught is not found
        say(f"{held} item(s) awaiting review also matched; review mode recalls an item once you keep it "
            "(`memory review`).")
    return 0


def search_page(results: list[dict[str, str]], limit: int | None,
                after: str | None) -> tuple[list[dict[str, str]], str | None]:
    """A page of the ranked results after the cursor `N.ID` (N results shown so far, the last one's
    ID): the ranking is computed again, and the page goes on after that ID — or, when a write
    (a forget, a revision) took that very item out of the results, after the first N - 1."""
    start = 0
    if after is not None:
        shown, dot, last = after.partition(".")
        if not dot or not shown.isascii() or not shown.isdigit() or not last:
            from autopatch_tui.core.errors import UsageError

            raise UsageError("--after takes the cursor a previous page printed")
        ids = [r["id"] for r in results]
        start = ids.index(last) + 1 if last in ids else min(max(int(shown) - 1, 0), len(results))
    page = results[start:start + limit] if limit is not None else results[start:]
    end = start + len(page)
    return page, f"{end}.{page[-1]['id']}" if page and end < len(results) else None


cmd_search.reads_only = True  # type: ignore[attr-defined]  # also runs on a read-only store


def search_without_store(repo: Path, args: argparse.Namespace) -> int:
    from autopatch_tui.cli.memory_cmds import no_memory_line

    if args.json:
        emit_json({"results": [], "next": None})
    else:
        say(no_memory_line(repo))
    return 0


cmd_search.without_store = search_without_store  # type: ignore[attr-defined]


def add_chat_parsers(sub: argparse._SubParsersAction, memory_sub: argparse._SubParsersAction,
                     common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("ask", help="one ordinary turn without the UI", parents=[common])
    p.add_argument("text", metavar="TEXT", nargs="?", type=non_blank_message,
                   help="the message; `-` or omitted with stdin not a terminal: read from stdin")
    p.add_argument("--intent", choices=C.ORDINARY_INTENTS)
    p.add_argument("--path", action="append", help="a scope path (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_ask, precheck=check_ask)

    p = memory_sub.add_parser("search", help="deterministic recall, as the agent's memory_search", parents=[common])
    p.add_argument("query", type=non_blank_query)
    p.add_argument("--intent", choices=C.INTENTS)
    p.add_argument("--path", action="append", help="a scope path (repeatable)")
    p.add_argument("--json", action="store_true")
    add_paging(p)
    p.set_defaults(handler=cmd_search, precheck=check_search)
