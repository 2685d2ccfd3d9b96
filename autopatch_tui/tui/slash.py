"""Slash commands of the chat prompt: parsing, help and completion. No UI here."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

COMMANDS: dict[str, str] = {
    "/new": "start a new thread (the old thread's Memory jobs are flushed first)",
    "/reset": "clear the project working state and caches; Memory is kept",
    "/memory status": "Memory health, counts and job failures",
    "/memory list": "active Memory items (optionally: a kind)",
    "/memory show": "one item with its revisions and provenance: /memory show ID",
    "/memory forget": "forget one item (raw turns are kept): /memory forget ID",
    "/memory clear --confirm": "delete all Memory data",
    "/memory export": "write a JSON snapshot",
    "/audit": "scan the code (or @paths) and draft patches for the findings: /audit [@path]... [TEXT]",
    "/audit next": "draft patches for the next batch of open findings",
    "/patch list": "the open audit's findings and patches",
    "/patch show": "one pending patch as a diff: /patch show ID",
    "/patch apply": "write a pending patch to its file: /patch apply ID",
    "/patch discard": "drop a pending patch: /patch discard ID",
    "/patch explain": "ask the model about a pending patch: /patch explain ID [QUESTION]",
    "/patch revise": "ask the model to revise a pending patch: /patch revise ID TEXT",
    "/explain": "ask about code (code_explain intent): /explain TEXT",
    "/chat": "general chat (general_chat intent): /chat TEXT",
    "/context": "what the last request sent the model: its prompt by part, in tokens, and the window",
    "/history": "open the thread history",
    "/browse": "open the Memory browser",
    "/jobs": "open the Memory job diagnostics",
    "/stores": "find duplicate project stores",
    "/retry": "send the newest failed turn again as a new turn (r on a failed note does the same)",
    "/help": "this list",
    "/quit": "flush Memory and quit",
}


class SlashError(ValueError):
    """The command line is not a valid slash command; the message says how to use it."""


@dataclass(frozen=True)
class SlashCommand:
    name: str  # e.g. "new", "memory", "explain"
    args: tuple[str, ...] = ()
    rest: str = ""  # raw text after the command word (for /explain and /chat)


PATCH_SUBCOMMANDS = ("list", "show", "apply", "discard", "explain", "revise")
PATCH_USAGE = "usage: /patch list|show ID|apply ID|discard ID|explain ID [QUESTION]|revise ID TEXT"


def _parse_patch(rest: str) -> SlashCommand:
    """`/patch SUB [ID] [TEXT]`: the text after the ID is kept raw (quotes and all)."""
    sub, _, tail = rest.strip().partition(" ")
    sub = sub.lower()
    if sub not in PATCH_SUBCOMMANDS:
        raise SlashError(PATCH_USAGE)
    if sub == "list":
        return SlashCommand("patch", (sub,))
    finding, _, text = tail.strip().partition(" ")
    if not finding:
        raise SlashError(f"usage: /patch {sub} ID" + (" TEXT" if sub == "revise" else ""))
    if sub == "revise" and not text.strip():
        raise SlashError("usage: /patch revise ID TEXT (say how the patch should change)")
    return SlashCommand("patch", (sub, finding.upper()), text.strip())


def is_slash(text: str) -> bool:
    return text.lstrip().startswith("/")


def parse(text: str) -> SlashCommand:
    line = text.strip()
    head, _, rest = line.partition(" ")
    name = head[1:].lower()
    if name in ("explain", "chat"):
        if not rest.strip():
            raise SlashError(f"usage: /{name} TEXT")
        return SlashCommand(name, (), rest.strip())
    if name == "audit":
        if rest.strip().lower() == "next":
            return SlashCommand(name, ("next",))
        return SlashCommand(name, (), rest.strip())
    if name == "patch":
        return _parse_patch(rest)
    try:
        args = tuple(shlex.split(rest))
    except ValueError:
        raise SlashError("unbalanced quotes in the command") from None
    if name == "memory":
        if not args or args[0] not in ("status", "list", "show", "forget", "clear", "export"):
            raise SlashError("usage: /memory status|list|show ID|forget ID|clear --confirm|export")
        if args[0] in ("show", "forget") and len(args) != 2:
            raise SlashError(f"usage: /memory {args[0]} ID")
        return SlashCommand(name, args)
    if name == "context":
        if args:
            raise SlashError(f"/context takes no arguments (got: {' '.join(args)})")
        return SlashCommand(name)
    if f"/{name}" in COMMANDS or name in ("new", "reset", "help", "quit", "history", "browse", "jobs", "stores"):
        return SlashCommand(name, args)
    raise SlashError(f"unknown command /{name}; /help lists the commands")


def completions(prefix: str) -> list[str]:
    """Commands that start with what was typed (case-insensitive)."""
    p = prefix.lower()
    return [c for c in COMMANDS if c.startswith(p)]


def help_text() -> str:
    width = max(len(c) for c in COMMANDS)
    lines = [f"{c.ljust(width)}  {d}" for c, d in COMMANDS.items()]
    lines.append("@path mentions a file or folder: it becomes the turn's scope. Enter sends, ctrl+j adds a line.")
    lines.append("Tab accepts the highlighted completion; Up/Down walk your earlier prompts; PageUp/PageDown scroll "
                 "the chat; Escape cancels a running request; F1 lists every key.")
    return "\n".join(lines)
