"""The scoped files of a `code_explain` request put into the prompt, for models without tools.

Every path goes through the source tools' own check (`SourceTools.resolve`: repository-confined,
symlinks resolved); a directory is walked in name order, skipping the source tools' skipped
directories; nothing under `.git` or `.autopatch-j` is read, at any depth. Files are line-numbered
like `read_file` and added while they fit the token budget; the last one that does not fit is cut
with a marker, the rest are counted as omitted."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.agent.source_tools import (
    MAX_FILE_BYTES,
    REFUSED_DIRS,
    SKIPPED_DIRS,
    SourceToolError,
    SourceTools,
)
from autopatch_tui.core.confine import ConfinementError, is_regular, kind_of, read_regular, resolve_inside
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.tree_walk import TreeWalk

MAX_FILES = 200  # files looked at per request, whatever the budget
MIN_CUT_TOKENS = 200  # a cut-off file shorter than this is left out instead
HEADER = ("Tool calling is off for this model, so the files in scope are included here (read-only, "
          "line-numbered). Explain from them; cite file paths and line numbers.")
CUT_MARKER = "[... rest of the file omitted for the context budget ...]"


@dataclass(frozen=True)
class ScopedFiles:
    text: str  # "" when nothing was included
    included: tuple[str, ...]
    omitted: int  # files in scope left out (budget, unreadable, binary)
    cut: bool  # the last included file was cut short


def _refused(rel: Path) -> bool:
    return any(part in REFUSED_DIRS for part in rel.parts)


def _candidates(tools: SourceTools, scope: list[str]) -> tuple[list[Path], int]:
    """Resolved files in scope (deduplicated, in order) and the count of refused scope entries."""
    seen: dict[Path, None] = {}
    refused = 0
    for raw in scope:
        try:
            target = tools.resolve(raw)
        except SourceToolError:
            refused += 1
            continue
        if _refused(target.relative_to(tools.repo)):
            refused += 1
            continue
        kind = kind_of(target)
        if kind == "file":
            seen.setdefault(target)
        elif kind == "dir":
            for dirpath, dirnames, filenames in TreeWalk(target):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
                for name in sorted(filenames):
                    seen.setdefault(Path(dirpath) / name)
                    if len(seen) >= MAX_FILES:
                        return list(seen), refused
        else:
            refused += 1
        if len(seen) >= MAX_FILES:
            break
    return list(seen), refused


def _read(tools: SourceTools, path: Path) -> tuple[str, str] | None:
    """(repo-relative path, line-numbered text), or None when it may not or cannot be read."""
    try:
        resolved = resolve_inside(path)
        rel = resolved.relative_to(tools.repo)
    except (ConfinementError, ValueError):  # a loop, or a symlink out of the repository
        return None
    if _refused(rel) or not is_regular(resolved):  # a FIFO, socket or device would block the read
        return None
    try:
        text = read_regular(resolved, MAX_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError, ConfinementError):
        return None
    if "\x00" in text:
        return None
    numbered = "\n".join(f"{n}: {line}" for n, line in enumerate(text.splitlines(), 1))
    return rel.as_posix(), numbered


def scoped_files(repo: Path, scope: list[str], budget_tokens: int) -> ScopedFiles:
    tools = SourceTools(repo)
    files, omitted = _candidates(tools, scope)
    parts: list[str] = []
    included: list[str] = []
    used = estimate_tokens(HEADER)
    cut = False
    for n, path in enumerate(files):
        item = _read(tools, path)
        if item is None:
            omitted += 1
            continue
        rel, body = item
        block = f"\n\n### {rel}\n{body}"
        cost = estimate_tokens(block)
        if used + cost <= budget_tokens:
            parts.append(block)
            included.append(rel)
            used += cost
            continue
        room = budget_tokens - used - estimate_tokens(CUT_MARKER) - 2
        if room >= MIN_CUT_TOKENS:
            lines, size = [], estimate_tokens(f"\n\n### {rel}\n")
            for line in body.splitlines():
                size += estimate_tokens(line + "\n")
                if size > room:
                    break
                lines.append(line)
            parts.append(f"\n\n### {rel}\n" + "\n".join(lines) + "\n" + CUT_MARKER)
            included.append(rel)
            cut = True
            omitted += len(files) - n - 1
        else:
            omitted += len(files) - n
        break
    if not included:
        return ScopedFiles("", (), omitted, False)
    return ScopedFiles(HEADER + "".join(parts), tuple(included), omitted, cut)


def footer(files: ScopedFiles) -> str:
    """The note under an answer given without tools."""
    if not files.included:
        what = "no file in scope could be included, so the answer is not based on the source"
    else:
        what = f"{len(files.included)} file(s) in scope were put into the prompt"
        if files.cut or files.omitted:
            what += f" ({'the last one cut short, ' if files.cut else ''}{files.omitted} left out)"
    return f"\n\n---\n*Tools were off for this answer: {what}.*"
