"""The Memory browser's longer notices, as plain `Text` or `str` (never markup): a degraded store's
diagnostic, and the bodies of the forget and clear confirmations."""

from __future__ import annotations

from rich.text import Text

from autopatch_tui.core.memory.models import ItemDetail
from autopatch_tui.core.paths import StorePaths

CLEAR_BODY = ("This is `memory clear --confirm`: it deletes all Memory data — turns, items, jobs and the "
              "damaged database — and starts one empty thread. Exports are kept. It cannot be undone; export "
              "a snapshot first if you want one.")


def degraded_text(diagnostic: str, schema_version: int | None, paths: StorePaths, *,
                  merged_away: bool = False) -> Text:
    """What is wrong with the store, where it is, and what Export and Clear do about it. A store
    merged into one not reachable here (`merged_away`) has no schema to report and nothing to clear:
    the text names the fix and says that chat works without Memory meanwhile."""
    if merged_away:
        from autopatch_tui.core.no_memory import NO_MEMORY_NOTE

        text = Text()
        text.append("Diagnostic: ", style="bold")
        text.append(diagnostic)
        text.append(f"\n\nNothing here was changed or lost. {NO_MEMORY_NOTE}")
        return text
    try:
        where = str(paths.db.relative_to(paths.repo))
    except (AttributeError, ValueError):
        where = "memory.db"
    text = Text()
    text.append("Diagnostic: ", style="bold")
    text.append(diagnostic)
    if schema_version is not None:
        text.append(f"\nSchema version found: {schema_version}")
    text.append(f"\nStore: {where}")
    text.append("\n\nThe store was not modified. Nothing can be listed, searched or forgotten until it is "
                "cleared. Export writes a snapshot of what can still be read; Clear runs "
                "`memory clear --confirm`: it deletes all Memory data (exports are kept) and starts one "
                "empty thread.")
    return text


def forget_body(d: ItemDetail) -> str:
    return (f"{d.statement}\n\n{d.kind} · {d.id}\n\nThe item leaves the list and recall at once; its "
            "candidates are suppressed. The raw turns it came from are kept.")
