"""`autopatch-tui memory remember TEXT`, `memory refused [keep N]` (issue 31, contracts §4, §10)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from autopatch_tui.cli.output import emit_json, say, warn
from autopatch_tui.cli.validate import non_blank_message
from autopatch_tui.core.terminal_text import one_line

if TYPE_CHECKING:  # the parser is built without them (`--help` imports no Memory code)
    from autopatch_tui.core.manager import MemoryManager

KIND_WORDS = {"user_preference": "preference", "project_decision": "decision", "discussion_context": "discussion"}


def receipt_lines(receipt) -> list[str]:
    """"remembered · preference · <statement> · mem-…" / "not remembered · <rule in words>" (escaped)."""
    lines = [f"remembered · {KIND_WORDS.get(i.kind, i.kind)} · {one_line(i.statement)} · {one_line(i.id)}"
             for i in receipt.remembered]
    lines += [f"not remembered · {r.words}" for r in receipt.refused]
    if not lines and receipt.waiting is None:
        lines.append("not remembered · nothing in it reads as a preference or a decision")
    return lines


def cmd_remember(mgr: MemoryManager, args: argparse.Namespace) -> int:
    from autopatch_tui.core.memory.steering import remember

    receipt = remember(mgr, args.text)
    if receipt.waiting:
        warn(receipt.waiting)
    if args.json:
        emit_json(receipt.as_json())
        return 0
    for line in receipt_lines(receipt):
        say(line)
    if receipt.refused:
        say("`memory refused` lists it; `memory refused keep N` keeps it anyway.")
    return 0


def refused_number(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 100000:
        raise argparse.ArgumentTypeError(f"{one_line(text)!r}: N is the number `memory refused` shows (1, 2, …)")
    return int(text)


def cmd_refused(mgr: MemoryManager, args: argparse.Namespace) -> int:
    from autopatch_tui.core.memory import steering

    if getattr(args, "refused_action", None) == "keep":
        kept = steering.keep_refused(mgr, args.n)
        if args.json:
            emit_json({"kept": kept.model_dump(mode="json")})
        else:
            say(f"kept · {KIND_WORDS.get(kept.kind, kept.kind)} · {one_line(kept.statement)} · {one_line(kept.id)}")
        return 0
    entries = steering.refused(mgr)
    if args.json:
        emit_json({"refused": [e.as_json() for e in entries]})
        return 0
    if not entries:
        say("No refused candidates.")
    for e in entries:
        kind = KIND_WORDS.get(str(e.candidate.get("kind", "")), "")
        say(f"{e.n:>3}  {e.words} · {kind} · {one_line(str(e.candidate.get('statement', '')))}")
        say(f"     “{one_line(e.quote)}” (turn {one_line(e.turn_id)})")
    if entries:
        say("`memory refused keep N` keeps one anyway, as your decision.")
    return 0


def add_steer_parsers(msub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = msub.add_parser("remember", help="remember TEXT now, as your explicit request; prints a receipt",
                        parents=[common])
    p.add_argument("text", metavar="TEXT", type=non_blank_message)  # contracts §4: memory remember TEXT
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_remember)

    p = msub.add_parser("refused", help="the last refused candidates; `refused keep N` keeps one anyway",
                        parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_refused)
    rsub = p.add_subparsers(dest="refused_action", metavar="ACTION")
    k = rsub.add_parser("keep", help="keep refused candidate N as your decision", parents=[common])
    k.add_argument("n", metavar="N", type=refused_number)
    k.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    k.set_defaults(handler=cmd_refused)
