"""`autopatch-tui memory review [keep ID... | keep --all]` and `memory audit` (contracts §8)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from autopatch_tui.cli.output import emit_json, say
from autopatch_tui.core.errors import MemoryNotFoundError, UsageError
from autopatch_tui.core.terminal_text import one_line

if TYPE_CHECKING:  # the parser is built without it (`--help` imports no Memory code)
    from autopatch_tui.core.manager import MemoryManager

MAX_ID_CHARS = 128
KIND_WORDS = {"user_preference": "preference", "project_decision": "decision", "discussion_context": "discussion"}


def item_id(text: str) -> str:
    """An argparse `type`: an item ID (or a unique prefix of one), neither blank nor over-long."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an item ID is empty")
    if len(text) > MAX_ID_CHARS:
        raise argparse.ArgumentTypeError(f"an item ID is at most {MAX_ID_CHARS} characters")
    return text.strip()


def item_revision(text: str) -> tuple[str, int | None]:
    """An argparse `type` for `memory review keep`: `ID` (the current revision) or `ID@REV` (exactly
    the revision the user saw: `memory review` shows it as rREV, `--json` as "revision")."""
    ident, at, rev = text.strip().rpartition("@")
    if not at:
        return item_id(text), None
    if not rev.isascii() or not rev.isdigit() or int(rev) < 1 or len(rev) > 9:
        raise argparse.ArgumentTypeError(f"{one_line(text.strip())!r}: after @ comes a revision number (ID@REV)")
    return item_id(ident), int(rev)


def approval_note(mode: str) -> str:
    from autopatch_tui.core.memory.review_service import APPROVAL_ENV

    if mode == "review":
        return "approval: review — a new item is not recalled until you keep it"
    return (f"approval: auto — new items are recalled while they wait here (set {APPROVAL_ENV}=review or "
            "memory_approval = \"review\" in config.toml to hold them back)")


def cmd_review(mgr: MemoryManager, args: argparse.Namespace) -> int:
    if getattr(args, "review_action", None) == "keep":
        return cmd_review_keep(mgr, args)
    entries = mgr.review.items()
    if args.json:
        emit_json({"approval": mgr.review.approval, "items": [e.as_json() for e in entries]})
        return 0
    say(f"{len(entries)} item{'s' if len(entries) != 1 else ''} awaiting review, oldest first; "
        + approval_note(mgr.review.approval))
    for e in entries:
        s = e.summary
        paths = f" ({one_line(', '.join(s.applies_to_paths))})" if s.applies_to_paths else ""
        say(f"{one_line(s.id)}  {e.change} r{e.revision} [{KIND_WORDS.get(s.kind, s.kind)}] {one_line(s.subject)}: "
            f"{one_line(s.statement)}{paths}")
    if entries:
        say("Keep exactly what you read: `memory review keep ID@REV...` (refused if the item changed since), "
            "or `memory review keep --all`; forget: `memory forget ID`.")
    return 0


cmd_review.reads_only = True  # type: ignore[attr-defined]  # a read-only store still lists its inbox


def cmd_review_keep(mgr: MemoryManager, args: argparse.Namespace) -> int:
    given: list[tuple[str, int | None]] = args.ids or []
    if args.all and given:
        raise UsageError("memory review keep: give item IDs or --all, not both")
    if not args.all and not given:
        raise UsageError("memory review keep: give at least one item ID, or --all")
    mgr.require_healthy()  # the list above may run read-only; keeping writes
    from autopatch_tui.core.memory.review_service import RevisionChangedError  # only when keeping

    ids = [i for i, _ in given]
    revisions: dict[str, int] = {}
    for i, rev in given:
        if rev is not None:
            if revisions.setdefault(i, rev) != rev:
                raise UsageError(f"memory review keep: {one_line(i)} is named with two revisions")
    try:
        kept = mgr.review.keep_all() if args.all else mgr.review.keep(ids, revisions=revisions or None)
    except RevisionChangedError as exc:  # say how to go on
        raise MemoryNotFoundError(f"{exc} — read it again (`memory review`), then `memory review keep "
                                  f"{one_line(exc.logical_id)}@{exc.revision}`") from None
    if args.json:
        emit_json({"kept": kept})
        return 0
    if not kept:
        say("Nothing awaits review.")
    else:
        say(f"Kept {len(kept)} item{'s' if len(kept) != 1 else ''}: {', '.join(one_line(k) for k in kept)}")
    return 0


def cmd_audit(mgr: MemoryManager, args: argparse.Namespace) -> int:
    report = mgr.audit()
    if args.json:
        emit_json(report.as_json())
        return 0
    say(f"Checked {report.checked} active item{'s' if report.checked != 1 else ''}: "
        f"{len(report.duplicates)} duplicate group(s), {len(report.conflicts)} conflict(s), "
        f"{len(report.stale_paths)} item(s) with stale paths, {len(report.disagreements)} item(s) the two readers"
        " disagreed on.")
    if report.truncated:
        from autopatch_tui.core.memory.audit import MAX_PAIR_CHECKS  # the audit's code: only when auditing

        say(f"The conflict check stopped after {MAX_PAIR_CHECKS:,} pairs of items: the conflicts below are "
            "some of them, not all.")
    for f in report.duplicates:
        say(f"duplicate: {', '.join(one_line(i) for i in f.ids)} — {one_line(f.why)}")
    for f in report.conflicts:
        say(f"conflict:  {', '.join(one_line(i) for i in f.ids)} — {one_line(f.why)}")
    for s in report.stale_paths:
        say(f"stale:     {one_line(s.id)} — no file matches {', '.join(one_line(p) for p in s.paths)}")
    for d in report.disagreements:
        say(f"readers:   {one_line(d.id)} — the gate and the model read its source turn differently"
            f" ({', '.join(d.rules)})")
    return 0


cmd_audit.reads_only = True  # type: ignore[attr-defined]


def add_review_parsers(msub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = msub.add_parser("review", help="items awaiting review (oldest first); `review keep` marks them kept",
                        parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_review)
    rsub = p.add_subparsers(dest="review_action", metavar="ACTION")
    k = rsub.add_parser("keep", help="mark items kept: IDs (ID@REV: only if still that revision), or --all",
                        parents=[common])
    k.add_argument("ids", nargs="*", metavar="ID[@REV]", type=item_revision)
    k.add_argument("--all", action="store_true", help="keep every item awaiting review")
    # SUPPRESS: `memory review --json keep …` keeps the --json given before `keep`
    k.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    k.set_defaults(handler=cmd_review)

    p = msub.add_parser("audit", help="duplicates, conflicts and stale paths among the active items (no model)",
                        parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_audit)
