"""`autopatch-tui ask` and `autopatch-tui memory search`."""

from __future__ import annotations

import argparse

from autopatch_tui.cli.output import emit_json, say, warn
from autopatch_tui.core import constants as C
from autopatch_tui.core.manager import MemoryManager


def cmd_ask(mgr: MemoryManager, args: argparse.Namespace) -> int:
    try:
        from autopatch_tui.core.agent.chat import ChatService  # the agent only for `ask` (slow import)

        result = ChatService(mgr).ask(args.text, intent=args.intent, scope_paths=args.path or [])
    finally:
        flush = mgr.process_pending()
        if flush.retry_wait:
            warn(f"{flush.retry_wait} Memory job(s) will be retried at the next start")
        if flush.failed:
            warn(f"{flush.failed} Memory job(s) failed; `memory status` shows why")
    if args.json:
        emit_json({"turn_id": result.turn_id, "thread_id": result.thread_id, "answer": result.answer,
                   "state": result.state})
    else:
        say(result.answer)
    return 0


def cmd_search(mgr: MemoryManager, args: argparse.Namespace) -> int:
    from autopatch_tui.core.recall.cli_search import search_memory

    results = search_memory(mgr, args.query, args.intent or "general_chat", args.path or ())
    if args.json:
        emit_json({"results": results})
        return 0
    if not results:
        say("No matching Memory items.")
    for r in results:
        say(f"{r['id']}  [{r['kind']}] {r['subject']}: {r['statement']}  ({r['match_type']})")
    return 0


def add_chat_parsers(sub: argparse._SubParsersAction, memory_sub: argparse._SubParsersAction,
                     common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("ask", help="one ordinary turn without the UI", parents=[common])
    p.add_argument("text")
    p.add_argument("--intent", choices=C.ORDINARY_INTENTS)
    p.add_argument("--path", action="append", help="a scope path (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_ask)

    p = memory_sub.add_parser("search", help="deterministic recall, as the agent's memory_search", parents=[common])
    p.add_argument("query")
    p.add_argument("--intent", choices=C.INTENTS)
    p.add_argument("--path", action="append", help="a scope path (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_search)
