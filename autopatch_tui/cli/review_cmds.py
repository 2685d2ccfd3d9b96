"""`autopatch-tui memory review [keep ID... | keep --all]` and `memory audit` (contracts §8)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from autopatch_tui.cli.output import emit_json, emit_json_stream, say
from autopatch_tui.cli.validate import add_paging, page_limit
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
    if args.json and args.limit is None and args.after is None:  # everything, streamed
        emit_json_stream("items", (e.as_json() for e in mgr.review.all_entries()),
                         {"approval": mgr.review.approval, "next": None})
        return 0
    from autopatch_tui.core.memory.pages import DEFAULT_HUMAN_PAGE

    entries, page = mgr.review.page(limit=args.limit or DEFAULT_HUMAN_PAGE, after=args.after)
    if args.json:
        emit_json({"approval": mgr.review.approval, "items": [e.as_json() for e in entries], "next": page.next})
        return 0
    total = len(entries) + page.more
    say(f"{total} item{'s' if total != 1 else ''} awaiting review{' after the cursor' if args.after else ''}, "
        "oldest first; " + approval_note(mgr.review.approval))
    for e in entries:
        s = e.summary
        paths = f" ({one_line(', '.join(s.applies_to_paths))})" if s.applies_to_paths else ""
        say(f"{one_line(s.id)}  {e.change} r{e.revision} [{KIND_WORDS.get(s.kind, s.kind)}] {one_line(s.subject)}: "
            f"{one_line(s.statement)}{paths}")
    if page.next is not None:
        say(f"... {page.more:,} more: `memory review --after {page.next}`")
    if entries:
        say("Keep exactly what you read: `memory review keep ID@REV...` (refused if the item changed since), "
            "or `memory review keep --all`" + (" (every item awaiting review, also those not shown)"
                                               if page.next is not None or args.after else "")
            + "; forget: `memory forget ID`.")
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


AUDIT_SECTIONS = ("duplicates", "conflicts", "stale_paths", "stale_claims", "reader_disagreements")
MAX_AUDIT_CURSOR = 4096


def audit_key(entry: dict) -> str:
    """A finding's key within its section: its item IDs (and the claim, for a stale claim)."""
    ids = entry["ids"] if "ids" in entry else [entry["id"]]
    return "\x1f".join([*ids, str(entry["claim"])] if "claim" in entry else ids)


def audit_cursor(text: str) -> tuple[int, str]:
    """`--after` of `memory audit`: `SECTION.KEY` as a page printed it (the key in URL-safe base64:
    an item ID or a claim may hold any character)."""
    import base64
    import binascii

    section, dot, key = text.partition(".")
    try:
        if not dot or section not in AUDIT_SECTIONS or len(text) > MAX_AUDIT_CURSOR:
            raise ValueError
        return AUDIT_SECTIONS.index(section), base64.b64decode(key.encode("ascii"), b"-_", validate=True).decode("utf-8")
    except (ValueError, binascii.Error):  # UnicodeError is a ValueError
        raise UsageError("--after takes the cursor a previous page printed") from None


def audit_page(doc: dict, limit: int, after: str | None) -> tuple[dict, str | None, int]:
    """One page of the audit's findings, section after section, each sorted by its key, after the
    cursor: (the document with only this page's findings, the next cursor or None, how many more).
    A key, not a position: a finding found before and after a write is shown once."""
    start = audit_cursor(after) if after is not None else (-1, "")
    rows = sorted(((n, audit_key(e), e) for n, name in enumerate(AUDIT_SECTIONS) for e in doc.get(name, ())),
                  key=lambda r: (r[0], r[1]))
    rest = [r for r in rows if (r[0], r[1]) > start]
    shown = rest[:limit]
    paged = {**doc, **{name: [] for name in AUDIT_SECTIONS if name in doc}}
    for n, _, entry in shown:
        paged[AUDIT_SECTIONS[n]].append(entry)
    more = len(rest) - len(shown)
    if not more:
        return paged, None, 0
    import base64

    n, key, _ = shown[-1]
    return paged, f"{AUDIT_SECTIONS[n]}.{base64.urlsafe_b64encode(key.encode('utf-8')).decode('ascii')}", more


def _audit_line(section: str, entry: dict) -> str:
    if section == "stale_paths":
        return f"stale:     {one_line(entry['id'])} — no file matches {', '.join(one_line(p) for p in entry['paths'])}"
    if section == "stale_claims":
        return f"disagrees: {one_line(entry['id'])} — says {one_line(entry['claim'])}; {one_line(entry['evidence'])}"
    if section == "reader_disagreements":
        return (f"readers:   {one_line(entry['id'])} — the gate and the model read its source turn differently"
                f" ({', '.join(one_line(r) for r in entry['rules'])})")
    word = "duplicate:" if section == "duplicates" else "conflict: "
    return f"{word} {', '.join(one_line(i) for i in entry['ids'])} — {one_line(entry['why'])}"


def cmd_audit(mgr: MemoryManager, args: argparse.Namespace) -> int:
    """The whole audit is computed; `--limit`/`--after` page its findings (and human output shows
    the first 50), `--json` adds `"next"`."""
    report = mgr.audit()
    doc = report.as_json()
    paged = args.json and (args.limit is not None or args.after is not None)
    if args.json and not paged:
        emit_json({**doc, "next": None})
        return 0
    from autopatch_tui.core.memory.pages import DEFAULT_HUMAN_PAGE

    page, cursor, more = audit_page(doc, args.limit or DEFAULT_HUMAN_PAGE, args.after)
    if args.json:
        emit_json({**page, "next": cursor})
        return 0
    counts = {name: len(doc.get(name, ())) for name in AUDIT_SECTIONS}
    say(f"Checked {report.checked} active item{'s' if report.checked != 1 else ''}: "
        f"{counts['duplicates']} duplicate group(s), {counts['conflicts']} conflict(s), "
        f"{counts['stale_paths']} item(s) with stale paths"
        + (f", {counts['stale_claims']} claim(s) the repository disagrees with" if "stale_claims" in doc else "")
        + f", {counts['reader_disagreements']} item(s) the two readers disagreed on.")
    if report.truncated:
        from autopatch_tui.core.memory.audit import MAX_PAIR_CHECKS  # the audit's code: only when auditing

        say(f"The conflict check stopped after {MAX_PAIR_CHECKS:,} pairs of items: the conflicts below are "
            "some of them, not all.")
    for name in AUDIT_SECTIONS:
        for entry in page.get(name, ()):
            say(_audit_line(name, entry))
    if cursor is not None:
        say(f"... {more:,} more: `memory audit --after {cursor}`")
    return 0


cmd_audit.reads_only = True  # type: ignore[attr-defined]


def add_review_parsers(msub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = msub.add_parser("review", help="items awaiting review (oldest first); `review keep` marks them kept",
                        parents=[common])
    p.add_argument("--json", action="store_true")
    add_paging(p)
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
    p.add_argument("--limit", type=page_limit, metavar="N", help="show one page of at most N findings")
    p.add_argument("--after", metavar="CURSOR", help="the page after this cursor (printed under a page, "
                   "and as \"next\" in --json)")
    p.set_defaults(handler=cmd_audit)
