"""Every key of the app, generated from the bindings themselves: the help screen (F1) lists the
current screen's, and `docs/keys.md` is this module's output (`python -m autopatch_tui.tui.keys_doc
--write`; a test fails when the file and the bindings drift apart).

A binding's short name is its footer description; what it does is its `tooltip` or, for bindings
declared without one, `DOES[id]`. Every binding has an id (user keymaps remap ids)."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from textual.binding import Binding

DOES: dict[str, str] = {
    "screen.chat": "chat (home); on the chat screen: focus the prompt",
    "screen.history": "thread history (again: focus its search)",
    "screen.memory": "Memory browser (again: focus its search)",
    "screen.jobs": "job diagnostics",
    "screen.stores": "known stores and duplicate-store merge",
    "app.quit": "flush Memory (bounded, with progress) and quit",
    "app.help": "this help: the current screen's keys",
    "app.help_question": "this help (where no text field has focus; in chat `?` is typed into the prompt)",
    "history.back": "clear the search, then back to chat",
    "history.search": "type-to-filter search across turns",
    "history.more": "load the next page of turns",
    "history.earlier": "load earlier turns (after a jump)",
    "history.export": "export the thread as Markdown (says where it wrote)",
    "memory.back": "clear the search, then back to chat",
    "memory.search": "deterministic recall search (same as `memory search`)",
    "memory.kind": "cycle the kind filter",
    "memory.status": "cycle the status filter (active, superseded, forgotten)",
    "memory.forget": "forget the selected item (asks first)",
    "memory.jump": "open the selected provenance quote's turn in history",
    "memory.export": "write a JSON export (says where it wrote)",
    "memory.clear": "clear a degraded store (asks first; shown only when degraded)",
    "memory.reload": "reload the list and the selected item",
    "memory.duplicates": "find duplicate project stores (merge dialog)",
    "jobs.process": "give every pending job one processing chance now (asks first)",
    "memory.mark": "mark or unmark the highlighted active item for promotion (● before its subject)",
    "memory.promote": "promote the marked items (else the highlighted one) into AGENTS.md: shows the diff, "
                      "writes only on Write",
    "jobs.back": "back to chat",
    "jobs.refresh": "reload the counts and the job table",
    "stores.back": "back to chat",
    "stores.scan": "find duplicate stores",
    "stores.reload": "reload the store list",
    "stores.add": "add a store: register a checkout folder (as `memory stores add PATH`)",
    "stores.label": "set or clear the highlighted store's label",
    "merge.cancel": "cancel the scan, or close",
    "merge.swap": "swap the highlighted proposal's direction",
    "merge.merge": "merge the highlighted proposal (asks first)",
    "merge.rescan": "scan again",
    "merge.next": "next proposal",
    "merge.previous": "previous proposal",
    "confirm.yes": "confirm",
    "confirm.no": "decline",
    "confirm.cancel": "decline",
    "search.results": "from a search field to its results",
    "help.close": "close this help",
    "ask.close": "clear the field, then close without an answer (Enter answers)",
    "promote.write": "write the file as the diff shows (so does the Write button); offered once the whole diff "
                     "has been shown (it fits, or was scrolled to its end)",
    "promote.cancel": "close; nothing is written (the diff has the focus first: arrows, PgUp/PgDn, End scroll it)",
}

# (section title, intro, [(module, class)]) in the order docs/keys.md shows them
SECTIONS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("Everywhere", "", (("app", "AutopatchApp"),)),
    ("Chat", "", (("screens.chat", "ChatScreen"), ("widgets.chat_log", "FailedTurnNote"),
                  ("widgets.steer_notes", "RefusedNote"), ("widgets.steer_notes", "MemoryUsedNote"))),
    ("Thread history", "", (("screens.history", "HistoryScreen"),)),
    ("Memory browser", "Four views: To review (where it opens while items await review), Items, Audit and Not "
     "remembered; F4 on the browser shows the next view. The review inbox's, the audit's and the refused list's "
     "keys act on their list or cards.",
     (("screens.memory_browser", "MemoryBrowserScreen"), ("screens.memory_inbox", "InboxView"),
      ("screens.memory_audit", "AuditView"), ("screens.memory_audit", "ItemCard"),
      ("screens.memory_refused", "RefusedView"))),
    ("Job diagnostics", "", (("screens.diagnostics", "DiagnosticsScreen"),)),
    ("Stores and the merge dialog", "", (("screens.stores", "StoresScreen"), ("screens.merge_dialog", "MergeDialog"))),
    ("Search fields", "In the search fields of the history and the Memory browser. A screen opens with focus "
     "in its field and keeps it after Enter and Escape, so typing on never fires a screen's letter keys; "
     "those act on the list once it has focus.", (("widgets.search_box", "SearchBox"),)),
    ("Dialogs", "", (("screens.confirm", "ConfirmScreen"), ("screens.text_prompt", "TextPromptScreen"),
                     ("screens.promote_dialog", "PromoteDialog"), ("screens.help", "HelpScreen"))),
)

PROMPT_KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "send the message (or run the `/command`); while a request runs the text stays in the prompt"),
    ("ctrl+j", "insert a newline"),
    ("tab", ("accept the highlighted `/command` or `@path` completion (otherwise: offer one for the word "
             "being typed; focus stays in the prompt)")),
    ("escape", "close the completion list (while a request runs: cancel it)"),
    ("up / down", "move the completion highlight; without one, walk this repository's earlier prompts "
                  "(kept in `$AUTOPATCH_HOME/prompt-history/`, private, never in Memory)"),
    ("pageup / pagedown", "scroll the chat (scrolling back to the bottom follows new output again)"),
    ("ctrl+end", "follow the chat again: jump to the newest output"),
    ("shift+tab", "focus the chat log (a failed turn's note: Enter resends it); letters still go to the prompt"),
    ("`/` at the start", "slash-command completion; `@` anywhere starts a path mention with completion"),
)

KEY_NAMES = {"slash": "/", "question_mark": "?"}


@dataclass(frozen=True)
class KeyRow:
    id: str
    key: str
    name: str
    does: str


def key_label(key: str) -> str:
    return ", ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


def does(binding: Binding) -> str:
    """The binding's tooltip, else its DOES entry, else its footer name (a binding added without
    either is still listed; regenerate docs/keys.md after adding one)."""
    return binding.tooltip or DOES.get(binding.id or "", binding.description.lower())


def row(binding: Binding, key: str | None = None) -> KeyRow:
    return KeyRow(binding.id or "", key_label(key or binding.key), binding.description, does(binding))


def class_bindings(module: str, name: str) -> list[Binding]:
    cls = getattr(importlib.import_module(f"autopatch_tui.tui.{module}"), name)
    return [b for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding)]


def section_rows() -> list[tuple[str, str, list[KeyRow]]]:
    return [(title, intro, [row(b) for module, name in classes for b in class_bindings(module, name)])
            for title, intro, classes in SECTIONS]


def render_markdown() -> str:
    out = ["# Keys", "",
           "<!-- generated by `python -m autopatch_tui.tui.keys_doc --write` from the bindings; do not edit -->", "",
           "Every binding has an id. Remap any of them in `config.toml` (in `$AUTOPATCH_HOME`, or the",
           "platformdirs config folder) with a `[keymap]` table, binding id → key(s):", "",
           "```toml", "[keymap]", '"screen.history" = "f7"', '"memory.forget" = "delete"', "```", "",
           "F1 (or `?` where no text field has focus) shows the current screen's keys in the app. Escape",
           "means the same everywhere: it first clears the screen's field, then goes *Back* (to chat) or",
           "*Close*s the dialog; in chat it cancels a running request. Pressing a screen's own F-key again",
           "puts focus back in its field (F2: the prompt). A letter key never fires while a text field has",
           "focus; on the chat screen every printable key goes to the prompt. Keys that write, delete,",
           "send or merge are not letters, or they ask first.", ""]
    for title, intro, rows in section_rows():
        out += [f"## {title}", ""]
        if intro:
            out += [intro, ""]
        out += ["| id | key | name | does |", "|---|---|---|---|"]
        out += [f"| `{r.id}` | {r.key} | {r.name} | {r.does} |" for r in rows]
        if title == "Everywhere":
            out.append("| — | ctrl+p | | command palette (screens, \"Find duplicate stores\", theme, …) |")
        out.append("")
        if title == "Chat":
            out += ["### The chat prompt", "", "These are keys of the prompt itself, not remappable bindings.", "",
                    "| key | does |", "|---|---|"]
            out += [f"| {k} | {d} |" for k, d in PROMPT_KEYS]
            out += ["", "ctrl+c (`chat.clear_prompt`) clears a non-empty prompt, multi-line too, into the prompt",
                    "history (Up brings it back); on an empty prompt ctrl+c does what it always did. A paste keeps",
                    "its line breaks, also one a terminal types as keystrokes (tmux `paste-buffer` without `-p`):",
                    "an Enter within 20 ms of other keys is a line break, and only Enter on a quiet prompt sends.",
                    "A paste over 256,000 characters is refused whole and saved under",
                    "`$AUTOPATCH_HOME/refused-pastes/`; the note under the prompt names the file.", ""]
    return "\n".join(out)


DOC = Path(__file__).resolve().parents[2] / "docs" / "keys.md"

if __name__ == "__main__":  # pragma: no cover - a developer's tool
    if "--write" in sys.argv:
        DOC.write_text(render_markdown(), encoding="utf-8")
    else:
        sys.stdout.write(render_markdown())
