"""Plain-text renderings of Memory reports, shared by the CLI and the app's slash commands."""

from __future__ import annotations

from autopatch_tui.core.memory.models import ItemDetail, ItemSummary, StatusReport
from autopatch_tui.core.memory.refusals import refusals_line

PERMISSION_CAUSES = frozenset({"read_only", "permission"})


def degraded_hint(cause: str | None) -> str:
    """What to do about a degraded store; a permission problem never suggests wiping Memory."""
    if cause == "read_only":
        return ("Nothing was changed. Reading works (status, list, show, search, `memory export --to PATH`); "
                "give this user write permission on the path named above to write again.")
    if cause == "permission":
        return "Nothing was changed. Give this user read permission on the path named above."
    return ("Nothing was changed. `memory export` saves what is readable; "
            "`memory clear --confirm` starts a clean store.")


def render_status(report: StatusReport) -> list[str]:
    lines = [f"Memory: {report.state}  ({report.db_path})",
             f"schema version {report.schema_version} (supported {report.supported_schema_version})"]
    if report.diagnostic:
        lines.append(f"diagnostic: {report.diagnostic}" + (f" [{report.cause}]" if report.cause else ""))
    if report.state == "degraded":
        lines.append(degraded_hint(report.cause))
        if report.cause != "read_only":
            return lines
    j = report.jobs
    lines += [
        f"generation {report.generation}; active thread {report.active_thread_id}",
        f"threads {report.threads}, turns {report.turns}, active items {report.active_items}",
        f"jobs: pending {j.pending}, leased {j.leased}, retry_wait {j.retry_wait}, failed {j.failed}, "
        f"succeeded {j.succeeded}, succeeded_no_output {j.succeeded_no_output}",
        f"summary: {report.summary.status} ({report.summary.path})",
        f"review: {report.review.new} item(s) awaiting review (`memory review`)",
    ]
    if report.candidates:
        lines.append(f"candidates: pending {report.candidates.get('pending', 0)}, suppressed "
                     f"{report.candidates.get('suppressed', 0)}"
                     " (a failed job's candidates come back with `memory retry JOB_ID`)")
    if report.refusals:
        lines.append(f"refused candidates (not remembered), by rule: {refusals_line(report.refusals)}")
    for f in report.failures:
        lines.append(
            f"  {f.status} {f.kind} job {f.job_id}: category={f.category} phase={f.phase} stage={f.stage}"
            f" rule={f.rule or '-'} attempts={f.attempts} provider_calls={f.provider_calls}"
        )
    if report.failures_total > len(report.failures):
        lines.append(f"  … {report.failures_total - len(report.failures)} more failed job(s) not listed "
                     f"({report.failures_total} in all)")
    return lines


def render_item(item: ItemDetail) -> list[str]:
    lines = [
        f"{item.id}  [{item.kind}] {item.status} (revision {item.revision}, updated {item.updated_at})",
        f"subject: {item.subject}",
        f"statement: {item.statement}",
        f"strength {item.strength}, origin {item.origin}, recall {item.recall_mode}",
        f"paths: {', '.join(item.applies_to_paths) or '(whole project)'}",
    ]
    if item.content and item.content != item.statement:
        lines.append(f"content: {item.content}")
    if item.aliases:
        lines.append(f"aliases: {', '.join(item.aliases)}")
    if item.keywords:
        lines.append(f"keywords: {', '.join(item.keywords)}")
    if item.thread_id:
        lines.append(f"thread: {item.thread_id}")
    lines.append("revisions:")
    lines += [f"  r{r.revision} {r.status} {r.updated_at}: {r.statement}" for r in item.revisions]
    lines.append("sources:")
    lines += [f"  {s.role} @ {s.turn_id}: \"{s.quote}\"" for s in item.sources]
    return lines


def render_item_line(i: ItemSummary) -> str:
    paths = f" ({', '.join(i.applies_to_paths)})" if i.applies_to_paths else ""
    return f"{i.id}  [{i.kind}] {i.subject}: {i.statement}{paths}"
