"""`autopatch-tui memory stores|merge-scan|merge`: duplicate project stores."""

from __future__ import annotations

import argparse

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from autopatch_tui.cli.output import emit_json, say, warn
from autopatch_tui.core.terminal_text import escape_controls
from autopatch_tui.cli.validate import label_text, record_id

if TYPE_CHECKING:
    from autopatch_tui.core.settings import Settings
    from autopatch_tui.core.stores.info import StoreInfo
    from autopatch_tui.core.stores.service import StoreService


@contextmanager
def store_service(settings: Settings, *, model: bool = False) -> Iterator[StoreService]:
    """The registry-level service, built from the settings alone: these commands never open (or
    create) a store for the working directory (contracts §1). `model`: with the Memory model
    (merge-scan's judge, merge's organize); its HTTP client is closed afterwards."""
    from autopatch_tui.core.stores.service import StoreService

    client = None
    memory_model = None
    if model:
        from autopatch_tui.core.llm.client import LLMClient
        from autopatch_tui.core.manager import build_memory_model

        client = LLMClient.from_settings(settings)
        memory_model, _ = build_memory_model(settings, client)
    try:
        yield StoreService(settings, model=memory_model)
    finally:
        if client is not None:
            client.close()


def store_row(info: StoreInfo) -> dict[str, object]:
    """A store's row as `memory stores --json` lists it (contracts §4: `stores add`/`label --json`)."""
    return {"store": info.name, "label": info.label, "root": info.root, "remote": info.remote,
            "fact_count": info.fact_count, "retired": info.retired_into is not None}


def cmd_stores(settings: Settings, args: argparse.Namespace) -> int:
    with store_service(settings) as svc:
        return _stores(svc, args)


def _stores(svc: StoreService, args: argparse.Namespace) -> int:
    action = getattr(args, "stores_action", None)
    if action == "add":
        info = svc.add(args.path)
        if args.json:
            emit_json(store_row(info))
            return 0
        say(f"Registered {info.name} ({info.db_path}), {info.fact_count} active item(s).")
        if not info.holds_something:
            say("It holds nothing yet: store lists show it once it holds a turn or an item.")
        return 0
    if action == "label":
        info = svc.set_label(args.store, args.label)
        if args.json:
            emit_json(store_row(info))
            return 0
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
        label, root = (escape_controls(str(v or "-"), one_line=True) for v in (s["label"], s["root"]))
        say(f"{s['store']}{flag}  {label}  {s['fact_count']} item(s)  {root}")
    return 0


def cmd_merge_scan(settings: Settings, args: argparse.Namespace) -> int:
    with store_service(settings, model=True) as svc:
        result = svc.scan()
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
        reason = escape_controls(p.reason, one_line=True)  # the model's words: one line, never raw
        from autopatch_tui.core.stores.scan import judge_words

        say(f"{p.source} -> {p.target}  [{p.confidence}, judged by {judge_words(p.judged_by)}] {reason}")
        for store, ev in ((p.source, p.source_evidence), (p.target, p.target_evidence)):
            say(f"  {store}: {evidence_line(ev)}")
    return 0


def evidence_line(ev: dict) -> str:
    """What a proposal rests on for one store: remote, root, fact count (store text escaped)."""
    remote, root = (escape_controls(str(ev.get(k) or "unknown"), one_line=True) for k in ("remote", "root"))
    return f"remote {remote} · root {root} · {ev.get('fact_count', '?')} fact(s)"


def cmd_merge(settings: Settings, args: argparse.Namespace) -> int:
    from autopatch_tui.core.stores.service import reorg_words

    with store_service(settings, model=not args.no_organize) as svc:
        result = svc.merge(args.source, args.target, organize=not args.no_organize)
    if args.json:
        emit_json(result.as_dict())
        return 0
    say(f"Merged {args.source} into {result.target}: {result.merged_turns} turn(s), {result.merged_items} item(s);"
        f" organize: {reorg_words(result.reorg_status)}.")
    say(f"{args.source} is retired; its file is kept as a backup and its checkouts now use {result.target}.")
    return 0


# registry-level commands: called with the Settings, never with a manager on the working directory
REGISTRY_LEVEL = {cmd_stores, cmd_merge_scan, cmd_merge}


def add_store_parsers(memory_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = memory_sub.add_parser("stores", help="known project stores", parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stores)
    ssub = p.add_subparsers(dest="stores_action", metavar="ACTION", prog=p.prog)
    a = ssub.add_parser("add", help="register a checkout or a loose memory.db", parents=[common])
    a.add_argument("path")
    # SUPPRESS: `memory stores --json add …` keeps the --json given before the action
    a.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    a.set_defaults(handler=cmd_stores)
    lab = ssub.add_parser("label", help="set a store's display label", parents=[common])
    lab.add_argument("store", type=record_id)
    lab.add_argument("label", type=label_text)
    lab.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    lab.set_defaults(handler=cmd_stores)

    p = memory_sub.add_parser("merge-scan", help="find stores that are the same project", parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_merge_scan)

    p = memory_sub.add_parser("merge", help="merge SOURCE into TARGET", parents=[common])
    p.add_argument("source", type=record_id)
    p.add_argument("target", type=record_id)
    p.add_argument("--no-organize", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_merge)
