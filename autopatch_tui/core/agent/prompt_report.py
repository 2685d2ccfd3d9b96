"""What the model saw: the last request's prompt by part, in tokens (never any text).

Built by the request door (`request_context`) when a request is sent and again when it ends (then
with the server's `usage` when the server reported one), and handed on as a `PromptMeasured`
event: the status bar shows `context_label` and `instructions_label`, `/context` shows
`context_lines`. A report holds labels, repository-relative paths, counts and token figures
only — safe for a status line (contracts §6), though never logged."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

# kinds of parts, in prompt order
SYSTEM = "system"
INSTRUCTIONS = "instructions"
CHECKPOINT = "checkpoint"
MEMORY_MAP = "memory_map"
HISTORY = "history"
FILES = "files"
MESSAGE = "message"
TOOL_SCHEMAS = "tool_schemas"
TOOL_RESULTS = "tool_results"
FRAMING = "framing"


@dataclass(frozen=True)
class PromptPart:
    kind: str
    label: str
    tokens: int


@dataclass(frozen=True)
class PromptReport:
    intent: str
    window: int  # the model's context window (tokens)
    max_output: int  # the reply budget of the context profile
    parts: tuple[PromptPart, ...]
    estimated_tokens: int  # the whole prompt of the last call, as the app estimates it
    instruction_files: tuple[str, ...] = ()
    instructions_cut: bool = False
    instructions_skipped: tuple[tuple[str, str], ...] = ()  # (path, why) of files found but not read
    instructions_left_out: tuple[str, ...] = ()  # files left out for the bound
    map_items: int = 0
    steps: int = 0  # model calls of the request so far
    ended: bool = False  # False while the request is being sent
    server_prompt_tokens: int | None = None  # `usage` of the last call, when the server reported it
    server_completion_tokens: int | None = None
    reply_tokens: int = 0  # estimate of the last reply (when the server reported no usage)

    @property
    def reported(self) -> bool:
        return self.server_prompt_tokens is not None

    @property
    def used_tokens(self) -> int:
        """The window the request filled: prompt and reply, as the server counted them or estimated."""
        if self.server_prompt_tokens is not None:
            return self.server_prompt_tokens + (self.server_completion_tokens or 0)
        return self.estimated_tokens + self.reply_tokens

    @property
    def percent(self) -> int:
        return round(100 * self.used_tokens / self.window) if self.window > 0 else 0


def window_text(tokens: int) -> str:
    """32768 -> "32k", 128000 -> "128k", 1048576 -> "1M", 200 -> "200"."""
    for unit, binary, decimal in (("M", 1 << 20, 1_000_000), ("k", 1 << 10, 1000)):
        if tokens >= decimal:
            base = binary if tokens % decimal and not tokens % binary else decimal
            value = tokens / base
            return f"{value:.0f}{unit}" if value >= 10 or value == int(value) else f"{value:.1f}{unit}"
    return str(tokens)


def context_label(report: PromptReport | None) -> str:
    """The status bar's context use: "ctx 38% of 32k" ("~ctx" when the figure is the app's estimate)."""
    if report is None:
        return ""
    mark = "" if report.reported else "~"
    return f"{mark}ctx {report.percent}% of {window_text(report.window)}"


def instructions_label(paths: tuple[str, ...], not_read: tuple[str, ...] = ()) -> str:
    """"AGENTS.md ×2", "CLAUDE.md", "CLAUDE.md + AGENTS.md ×2"; then the files found but not read:
    "AGENTS.md · CLAUDE.md not read", "AGENTS.md ×2 · 3 not read (/context)"; "" when none was found."""
    names: dict[str, int] = {}
    for p in paths:
        name = PurePosixPath(p).name
        names[name] = names.get(name, 0) + 1
    label = " + ".join(name if n == 1 else f"{name} ×{n}" for name, n in names.items())
    if not_read:
        unread = f"{not_read[0]} not read" if len(not_read) == 1 else f"{len(not_read)} not read (/context)"
        label = f"{label} · {unread}" if label else unread
    return label


def not_read(report: PromptReport) -> tuple[str, ...]:
    """The instruction files the request found but did not read (skipped, shadowed, left out)."""
    return tuple(dict.fromkeys([p for p, _ in report.instructions_skipped] + list(report.instructions_left_out)))


def context_lines(report: PromptReport | None) -> list[str]:
    """`/context`: the last request's prompt by part, with tokens, and the window."""
    if report is None:
        return ["No request has been sent to the model in this session yet; /context shows the last one's prompt."]
    state = "" if report.ended else " (still running)"
    calls = f"{report.steps} model call{'s' if report.steps != 1 else ''}"
    lines = [f"Last request{state}: {report.intent}, {calls}; the last call's prompt by part "
             "(the app's token estimates):"]
    width = max(len(p.label) for p in report.parts) if report.parts else 10
    for p in report.parts:
        lines.append(f"  {p.label.ljust(width)}  {p.tokens:>8,}")
    lines.append(f"  {'prompt (estimate)'.ljust(width)}  {report.estimated_tokens:>8,}")
    if report.reported:
        reply = report.server_completion_tokens or 0
        lines.append(f"The server counted {report.server_prompt_tokens:,} prompt + {reply:,} reply tokens: "
                     f"{report.used_tokens:,} of the {report.window:,}-token window ({report.percent}%).")
    else:
        lines.append(f"The server reported no usage: about {report.used_tokens:,} tokens with the reply, of the "
                     f"{report.window:,}-token window ({report.percent}%, the app's estimate).")
    lines.append(f"Window {report.window:,} tokens; {report.max_output:,} are kept for the reply.")
    if report.instructions_cut:
        lines.append("The instruction files were cut to their bound (the prompt says where).")
    for path, why in report.instructions_skipped:
        lines.append(f"Not read: {path} ({why}).")
    for path in report.instructions_left_out:
        lines.append(f"Not read: {path} (left out for the bound on instruction files).")
    return lines
