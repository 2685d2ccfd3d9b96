"""`autopatch-tui memory …` and `autopatch-tui new`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from autopatch_tui.cli.output import RUN, emit_json, emit_json_stream, fail, say, warn
from autopatch_tui.cli.review_cmds import add_review_parsers
from autopatch_tui.cli.steer_cmds import add_steer_parsers
from autopatch_tui.cli.validate import add_paging, export_target, record_id, timeout_seconds
from autopatch_tui.core.terminal_text import one_line

if TYPE_CHECKING:  # the parser is built without them (`--help` imports no Memory code)
    import sqlite3

    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.memory.pages import Page


EXIT_DEGRADED = 3


def cmd_status(mgr: MemoryManager, args: argparse.Namespace) -> int:
    """The report, always; on a degraded store exit 3 like every command that needs a healthy
    store, and say so: a stderr line, and in `--json` an `error` member beside the report. A store
    whose deep-check verdict is not known yet is checked first (for at most the after-answer bound):
    `status` is the command scripts ask "is Memory healthy?", so it answers after the check, not
    before it (a store too large for the bound is still checked on after the answer)."""
    from autopatch_tui.cli.after_answer import check_after_answer

    check_after_answer(mgr, before_answer=True)  # nothing to do when the verdict is remembered
    report = mgr.status()
    degraded = report.state == "degraded"
    message = f"Memory is degraded: {report.diagnostic or 'unknown'}"
    if args.json:
        document = report.model_dump(mode="json")
        if degraded:
            document["error"] = {"code": EXIT_DEGRADED, "message": message}
        emit_json(document)
    else:
        from autopatch_tui.core.memory.render import render_status

        for line in render_status(report):
            say(line)
    if degraded:
        RUN.json_written = True  # the report is this run's one document
        return fail(EXIT_DEGRADED, message)
    return 0


def no_memory_line(repo: Path) -> str:
    from autopatch_tui.core.paths import StorePaths
    from autopatch_tui.core.stores.presence import NO_MEMORY_YET

    return (f"{NO_MEMORY_YET}: {StorePaths(repo).db} does not exist; the first chat turn creates it.")


def status_without_store(repo: Path, args: argparse.Namespace) -> int:
    """`memory status` where no store exists: nothing is created; the §5 document of an empty,
    healthy Memory (schema_version 0: no file; active_thread_id null, every count 0)."""
    if args.json:
        from autopatch_tui.core.memory.status import missing_status
        from autopatch_tui.core.paths import StorePaths

        emit_json(missing_status(StorePaths(repo)))
    else:
        say(no_memory_line(repo))
    return 0


cmd_status.without_store = status_without_store  # type: ignore[attr-defined]


def list_without_store(repo: Path, args: argparse.Namespace) -> int:
    if args.json:
        emit_json({"items": [], "next": None})
    else:
        say(no_memory_line(repo))
    return 0


def cmd_list(mgr: MemoryManager, args: argparse.Namespace) -> int:
    """`--json` without `--limit`/`--after`: every item, streamed (constant memory), `"next": null`.
    Otherwise one page (human output: the first 50 without `--limit`), the cursor of the next
    page and how many more (core/memory/pages.py)."""
    from autopatch_tui.core.memory import pages
    from autopatch_tui.core.memory.items import summary_from_row
    from autopatch_tui.core.memory.review_marks import ReviewMarksError
    from autopatch_tui.core.memory.sqlite import read_txn

    conn = mgr.store.read_conn()
    with read_txn(conn):
        kept: frozenset[str] = frozenset()
        if args.json:  # contracts §8: each item says whether it awaits review
            try:
                kept = mgr.review.kept(conn)
            except ReviewMarksError as exc:  # the listing still works; every item counts as awaiting review
                warn(str(exc))

        def entry(row: sqlite3.Row) -> dict[str, object]:
            return {**summary_from_row(row).model_dump(mode="json"), "review": "kept" if row["id"] in kept else "new"}

        if args.json and args.limit is None and args.after is None:
            emit_json_stream("items", (entry(r) for r in pages.all_items(conn, kind=args.kind)), {"next": None})
            return 0
        page = pages.item_page(conn, limit=args.limit or pages.DEFAULT_HUMAN_PAGE, after=args.after, kind=args.kind)
        if args.json:
            emit_json({"items": [entry(r) for r in page.rows], "next": page.next})
            return 0
    from autopatch_tui.core.memory.render import render_item_line

    if not page.rows and args.after is None:
        say("No active Memory items.")
    for r in page.rows:
        say(render_item_line(summary_from_row(r)))
    if page.next is not None:
        say(more_line(page, "memory list"))
    return 0


cmd_list.without_store = list_without_store  # type: ignore[attr-defined]


def more_line(page: Page, command: str) -> str:
    """The line under a page that has more after it: how many, and the command for the next page."""
    return f"... {page.more:,} more: `{command} --after {page.next}`"


def cmd_show(mgr: MemoryManager, args: argparse.Namespace) -> int:
    item = mgr.show_item(args.id)
    if args.json:
        emit_json(item)
    else:
        from autopatch_tui.core.memory.render import render_item

        for line in render_item(item):
            say(line)
        from autopatch_tui.core.memory.steering import kept_over

        for k in kept_over(mgr, item.id):  # its history: kept over a refusal (issue 31.2)
            say(f"kept over rule: {k.words} ({k.rule}), your decision on turn {one_line(k.turn_id)}")
    return 0


def cmd_forget(mgr: MemoryManager, args: argparse.Namespace) -> int:
    from autopatch_tui.core.instructions.promote import forget_note

    logical = mgr.forget(args.id)
    if args.json:
        emit_json({"forgotten": logical})
        return 0
    say(f"Forgot {logical}: it no longer appears in listings or recall.")
    say("The raw conversation turns it came from are kept; `memory clear --confirm` deletes everything.")
    note = forget_note(mgr.repo, logical)
    if note:
        say(note)
    return 0


def cmd_clear(mgr: MemoryManager, args: argparse.Namespace) -> int:
    thread_id = mgr.clear(confirm=args.confirm)
    for moved in mgr.moved_aside:
        warn(f"moved aside (not deleted): {moved}")
    if args.json:
        emit_json({"cleared": True, "thread_id": thread_id})
        return 0
    say(f"Memory cleared. New empty active thread: {thread_id}. Existing exports were kept.")
    return 0


def cmd_export(mgr: MemoryManager, args: argparse.Namespace) -> int:
    path = mgr.export(to=Path(args.to) if args.to is not None else None)
    if args.json:
        emit_json({"path": str(path)})
    else:
        say(str(path))
    return 0


def cmd_new(mgr: MemoryManager, args: argparse.Namespace) -> int:
    result = mgr.new_thread(timeout=args.timeout)
    f = result.flush
    if f.timed_out:  # a warning: stderr, in --json mode too (contracts §4)
        warn(f"the Memory flush timed out: {f.pending} job(s) of the old thread stay queued")
    if args.json:
        emit_json(result)
        return 0
    say(f"New thread {result.new_thread_id} (archived {result.old_thread_id}).")
    say(f"Memory flush: {f.completed} job(s) done, {f.pending} still pending")
    return 0


def cmd_retry(mgr: MemoryManager, args: argparse.Namespace) -> int:
    new_job = mgr.retry_job(args.job_id)
    if args.json:
        emit_json({"job_id": args.job_id, "new_job_id": new_job})
    else:
        say(f"Job {args.job_id} queued again as {new_job}; it runs in the background or with `memory process`.")
    return 0


def cmd_process(mgr: MemoryManager, args: argparse.Namespace) -> int:
    result = mgr.process_pending()
    if args.json:
        emit_json(result.as_dict())
        return 0
    if not mgr.has_model:
        warn(f"Memory jobs stay pending: {mgr.model_problem}")
    r = result
    say(f"Memory jobs: {r.succeeded} succeeded, {r.succeeded_no_output} without output, {r.retry_wait} to retry,"
        f" {r.failed} failed, {r.pending} pending")
    if r.retry_wait:
        warn(f"{r.retry_wait} job(s) hit a transient error and will be retried at the next start")
    if r.failed:
        warn(f"{r.failed} job(s) failed; `memory status` shows the safe diagnostics")
    return 0


def check_promote(args: argparse.Namespace, repo: Path) -> None:
    """Before the store opens: `--to` names a file inside the repository (rc 2 otherwise)."""
    from autopatch_tui.core.instructions.promote import target_path

    target_path(repo, args.to)


def cmd_promote(mgr: MemoryManager, args: argparse.Namespace) -> int:
    from autopatch_tui.core.instructions.promote import (
        loader_reads,
        plan_promotion,
        promote_now,
    )
    from autopatch_tui.core.instructions.section import visible

    if args.yes:
        result = promote_now(mgr, args.ids, to=args.to, prune=args.prune)
        plan, written = result.plan, result.written
    else:
        plan, written, result = plan_promotion(mgr, args.ids, to=args.to, prune=args.prune), False, None
    if args.json:
        emit_json({"path": str(plan.path), "written": written, "promoted": list(plan.promoted), "diff": plan.diff})
        return 0
    if not plan.changed:
        if not plan.promoted:
            say(f"{plan.shown} holds no bullet of an item that is no longer active; nothing to write.")
        else:
            held = "this item as it is" if len(plan.promoted) == 1 else "these items as they are"
            say(f"{plan.shown} already holds {held}; nothing to write.")
        if result is not None and result.kept:
            say(f"Kept {len(result.kept)} item(s) that awaited review: the file already holds their words.")
        return 0
    sys.stdout.write(visible(plan.diff))
    root = mgr.repo.resolve()
    if plan.shown == "AGENTS.md" and plan.old_text is None and os.path.lexists(root / "CLAUDE.md"):
        warn("creating AGENTS.md at the root stops the root CLAUDE.md from being read (a root CLAUDE.md is read "
             "only without an AGENTS.md); leave --to off to write into CLAUDE.md instead")
    from autopatch_tui.core.instructions.files import MAX_BYTES

    if len(plan.new_text.encode("utf-8")) > MAX_BYTES:
        warn(visible(f"{plan.shown} is larger than the {MAX_BYTES // 1024} KiB the assistant reads of its "
                     "instruction files; what lies past that is cut from its prompt"))
    if not loader_reads(plan.shown, root):
        warn(visible(f"{plan.shown} is not a file the assistant reads as instructions (only AGENTS.md files, or "
                     "the root's CLAUDE.md when the root has no AGENTS.md)"))
    n_new = len(plan.new_items)
    if written:
        gone = f"; removed {len(plan.removed)} bullet(s) of items no longer active" if plan.removed else ""
        if plan.promoted:
            say(visible(f"Wrote {len(plan.promoted)} item(s) to {plan.shown}{gone}."))
        else:
            say(visible(f"Removed {len(plan.removed)} bullet(s) of items no longer active from {plan.shown}."))
        if result is not None and result.kept:
            say(f"Kept {len(result.kept)} item(s) that awaited review: this diff was their review.")
        if result is not None and result.keep_problem:
            warn(visible(result.keep_problem))
    else:
        say(visible(f"Nothing was written: run again with --yes to write {plan.shown}."))
        if n_new:
            say(f"Writing also keeps {n_new} item(s) still awaiting review: the diff above is their review.")
    return 0


cmd_promote.reads_only = True  # type: ignore[attr-defined]  # it reads the store, writes only the instruction file


# commands that can run on a degraded store
WORKS_DEGRADED = {cmd_status, cmd_export, cmd_clear}
# commands that only read: they also run on a read-only store (the manager refuses any write)
WORKS_READ_ONLY = {cmd_list, cmd_show}


def add_memory_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> argparse._SubParsersAction:
    mem = sub.add_parser("memory", help="audit and manage the project Memory", parents=[common])
    msub = mem.add_subparsers(dest="memory_command", metavar="COMMAND", required=True, prog=mem.prog)

    p = msub.add_parser("status", help="health, counts and job failures", parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_status)

    p = msub.add_parser("list", help="active items", parents=[common])
    p.add_argument("--kind", choices=("user_preference", "project_decision", "discussion_context"))
    p.add_argument("--json", action="store_true")
    add_paging(p)
    p.set_defaults(handler=cmd_list)

    p = msub.add_parser("show", help="one item in any status", parents=[common])
    p.add_argument("id", type=record_id)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_show)

    p = msub.add_parser("forget", help="forget one item (raw turns are kept)", parents=[common])
    p.add_argument("id", type=record_id)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_forget)

    p = msub.add_parser("clear", help="delete all Memory data (needs --confirm)", parents=[common])
    p.add_argument("--confirm", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_clear)

    p = msub.add_parser("export", help="write a JSON snapshot", parents=[common])
    p.add_argument("--to", metavar="PATH", type=export_target,
                   help="a new file, or a folder, instead of .autopatch-j/memory-exports/")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_export)

    p = msub.add_parser("retry", help="re-run one failed job as a fresh job for the same input", parents=[common])
    p.add_argument("job_id", metavar="JOB_ID", type=record_id)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_retry)

    p = msub.add_parser("process", help="give every pending Memory job one processing chance now", parents=[common])
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_process)

    p = msub.add_parser("promote", help="write items into the marked section of AGENTS.md (or the root's CLAUDE.md "
                        "when it has no AGENTS.md; a diff without --yes)",
                        parents=[common])
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--to", metavar="PATH", help="another file inside the repository (relative to its root)")
    p.add_argument("--prune", action="store_true",
                   help="remove the bullets of items no longer active (forgotten, replaced); no ID needed")
    p.add_argument("--yes", action="store_true", help="write the file (without it, only the diff is printed)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_promote, precheck=check_promote)

    add_review_parsers(msub, common)
    add_steer_parsers(msub, common)

    p = sub.add_parser("new", help="start a new thread (/new)", parents=[common])
    p.add_argument("--timeout", type=timeout_seconds, default=None,
                   help="seconds to wait for the old thread's Memory jobs (0 to 3600)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_new)
    return msub
