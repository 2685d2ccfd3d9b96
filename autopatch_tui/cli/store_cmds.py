"""`autopatch-tui memory stores|merge-scan|merge`: duplicate project stores."""

from __future__ import annotations

import argparse

from autopatch_tui.cli.output import emit_json, say, warn
from autopatch_tui.core.manager import MemoryManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autopatch_tui.core.stores.service import StoreService


def service_for(mgr: MemoryManager) -> StoreService:
    from autopatch_tui.core.stores.service import StoreService  # only store commands need it
    return StoreService(mgr.settings, clock=mgr.clock, model=mgr.memory_model)


def cmd_stores(mgr: MemoryManager, args: argparse.Namespace) -> int:
    svc = service_for(mgr)
    action = getattr(args, "stores_action", None)
    if action == "add":
        info = svc.add(args.path)
        say(f"Registered {info.name} ({info.db_path}), {info.fact_count} active item(s).")
        return 0
    if action == "label":
        svc.set_label(args.store, args.label)
        say(f"Label of {args.store} set.")
        return 0
    stores = svc.stores()
    if args.json:
        emit_json({"stores": stores})
        return 0
    if not stores:
        say("No known project stores.")
    for s in stores:
        flag = " (retired)" if s["retired"] else ""
        say(f"{s['store']}{flag}  {s['label'] or '-'}  {s['fact_count']} item(s)  {s['root'] or '-'}")
    return 0


def cmd_merge_scan(mgr: MemoryManager, args: argparse.Namespace) -> int:
    result = service_for(mgr).scan()
    if args.json:
        emit_json(result.as_dict())
        return 0
    if result.engine == "no_model":
        warn("no Memory model configured: only stores with the same origin remote are proposed")
    if result.truncated:
        warn("more pairs than one scan judges; run the scan again after merging")
    if not result.proposals:
        say("No duplicate stores found.")
    for p in result.proposals:
        say(f"{p.source} -> {p.target}  [{p.confidence}, judged by {p.judged_by}] {p.reason}")
    return 0


def cmd_merge(mgr: MemoryManager, args: argparse.Namespace) -> int:
    result = service_for(mgr).merge(args.source, args.target, organize=not args.no_organize)
    if args.json:
        emit_json(result.as_dict())
        return 0
    say(f"Merged {args.source} into {result.target}: {result.merged_turns} turn(s), {result.merged_items} item(s);"
        f" organize: {result.reorg_status}.")
    say(f"{args.source} is retired; its file is kept as a backup and its checkouts now use {result.target}.")
    return 0


def add_store_parsers(memory_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = memory_sub.add_parser("stores", help="known project stores", parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stores)
    ssub = p.add_subparsers(dest="stores_action", metavar="ACTION")
    a = ssub.add_parser("add", help="register a checkout or a loose memory.db", parents=[common])
    a.add_argument("path")
    a.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a.set_defaults(handler=cmd_stores)
    lab = ssub.add_parser("label", help="set a store's display label", parents=[common])
    lab.add_argument("store")
    lab.add_argument("label")
    lab.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    lab.set_defaults(handler=cmd_stores)

    p = memory_sub.add_parser("merge-scan", help="find stores that are the same project", parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_merge_scan)

    p = memory_sub.add_parser("merge", help="merge SOURCE into TARGET", parents=[common])
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--no-organize", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_merge)
