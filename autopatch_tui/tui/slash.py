"""Slash commands of the chat prompt: parsing, help and completion. No UI here.

A command answers in its own format: an argument it does not take, or an option it does not know,
is an error that names it (`/memory status bogus` once ran `status`, `/memory export --to PATH`
once wrote to the default folder)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from autopatch_tui.core.constants import ITEM_KINDS

COMMANDS: dict[str, str] = {
    "/new": "start a new thread (the old thread's Memory jobs are flushed first)",
    "/reset": "clear the project working state and caches; Memory is kept",
    "/memory status": "Memory health, counts and job failures",
    "/memory list": "active Memory items (optionally: a kind, e.g. /memory list user_preference)",
    "/memory show": "one item with its revisions and provenance: /memory show ID",
    "/memory forget": "forget one item (raw turns are kept): /memory forget ID",
    "/memory clear --confirm": "delete all Memory data",
    "/memory export": "write a JSON snapshot (--to PATH: a new file, or a folder, elsewhere)",
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
    "/remember": "remember TEXT now, as your explicit request; answers with a receipt: /remember TEXT",
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
        if tail.strip():
            raise SlashError(f"/patch list takes no arguments: {tail.strip()}")
        return SlashCommand("patch", (sub,))
    finding, _, text = tail.strip().partition(" ")
    if not finding:
        raise SlashError(f"usage: /patch {sub} ID" + (" TEXT" if sub == "revise" else ""))
    if sub == "revise" and not text.strip():
        raise SlashError("usage: /patch revise ID TEXT (say how the patch should change)")
    if sub in ("show", "apply", "discard") and text.strip():  # never act on a line that says more
        raise SlashError(f"/patch {sub} takes one ID and nothing after it: {text.strip()}")
    return SlashCommand("patch", (sub, finding.upper()), text.strip())


def is_slash(text: str) -> bool:
    return text.lstrip().startswith("/")


def parse(text: str) -> SlashCommand:
    line = text.strip()
    head, _, rest = line.partition(" ")
    name = head[1:].lower()
    if name in ("explain", "chat", "remember"):
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
        return SlashCommand(name, _memory_args(args))
    if name in NO_ARGUMENTS:
        if args:
            raise SlashError(f"/{name} takes no arguments: {' '.join(args)}")
        return SlashCommand(name, ())
    raise SlashError(f"unknown command /{name}; /help lists the commands")


NO_ARGUMENTS = ("new", "reset", "help", "quit", "history", "browse", "jobs", "stores", "retry", "context")
MEMORY_USAGE = "usage: /memory status|list [KIND]|show ID|forget ID|clear --confirm|export [--to PATH]"


def _memory_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """`/memory SUB …` checked word by word; what is left over is named in the error."""
    if not args or args[0] not in ("status", "list", "show", "forget", "clear", "export"):
        raise SlashError(MEMORY_USAGE if not args else f"unknown /memory command {args[0]}; {MEMORY_USAGE}")
    sub, rest = args[0], args[1:]
    if sub == "status" and rest:
        raise SlashError(f"/memory status takes no arguments: {' '.join(rest)}")
    if sub == "list" and (len(rest) > 1 or (rest and rest[0] not in ITEM_KINDS)):
        raise SlashError(f"/memory list takes one kind ({', '.join(ITEM_KINDS)}), not: {' '.join(rest)}")
    if sub in ("show", "forget") and len(rest) != 1:
        raise SlashError(f"usage: /memory {sub} ID" + (f" (not: {' '.join(rest[1:])})" if len(rest) > 1 else ""))
    if sub == "clear" and rest not in ((), ("--confirm",)):
        extra = [a for a in rest if a != "--confirm"] or list(rest[1:])
        raise SlashError(f"/memory clear takes only --confirm, not: {' '.join(extra)}")
    if sub == "export" and rest:
        if rest[0] != "--to":
            raise SlashError(f"unknown option for /memory export: {rest[0]} (it takes --to PATH)")
        if len(rest) != 2 or not rest[1].strip():
            raise SlashError("usage: /memory export --to PATH" + (f" (not: {' '.join(rest[2:])})"
                                                                  if len(rest) > 2 else ""))
    return args


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
