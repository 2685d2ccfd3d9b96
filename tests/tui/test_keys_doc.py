"""Every binding of the app has an id, ids are unique per screen, and docs/keys.md lists each one
with its key — so the documentation and user keymaps cannot drift from the code."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from textual.binding import Binding

MODULES = ["app", "screens.chat", "screens.history", "screens.memory_browser", "screens.memory_inbox",
           "screens.memory_audit", "screens.memory_refused", "widgets.steer_notes", "screens.diagnostics",
           "screens.stores", "screens.merge_dialog", "screens.confirm", "screens.exit_flush", "screens.help",
           "screens.text_prompt", "screens.promote_dialog", "widgets.search_box"]
DOC = Path(__file__).resolve().parents[2] / "docs" / "keys.md"


def all_bindings() -> list[tuple[str, Binding]]:
    found = []
    for name in MODULES:
        mod = importlib.import_module(f"autopatch_tui.tui.{name}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ != mod.__name__:
                continue
            for b in cls.__dict__.get("BINDINGS", []):
                assert isinstance(b, Binding), f"{cls.__name__} declares a binding without an id: {b!r}"
                found.append((cls.__name__, b))
    return found


def test_every_binding_has_a_unique_id():
    seen: dict[str, str] = {}
    for owner, b in all_bindings():
        assert b.id, f"{owner} binding {b.key} has no id"
        assert b.id not in seen, f"binding id {b.id} is used by {seen[b.id]} and {owner}"
        seen[b.id] = owner
    assert len(seen) >= 20


def test_keys_doc_lists_every_binding_with_its_key():
    doc = DOC.read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines() if line.startswith("| `")}
    for _, b in all_bindings():
        row = next((line for ids, line in rows.items() if f"`{b.id}`" in ids), None)
        assert row is not None, f"docs/keys.md does not list {b.id}"
        key = {"slash": "/", "question_mark": "?"}.get(b.key, b.key)
        assert all(k.strip() in row for k in key.split(",")), f"docs/keys.md gives another key for {b.id}"


def test_keys_doc_is_exactly_what_the_bindings_generate():
    from autopatch_tui.tui.keys_doc import render_markdown

    assert DOC.read_text(encoding="utf-8") == render_markdown(), (
        "docs/keys.md is stale: run `python -m autopatch_tui.tui.keys_doc --write`")


def test_every_binding_says_what_it_does_and_the_doc_covers_every_class():
    from autopatch_tui.tui.keys_doc import SECTIONS, does

    documented = {(m, c) for _, _, classes in SECTIONS for m, c in classes}
    for name in MODULES:
        mod = importlib.import_module(f"autopatch_tui.tui.{name}")
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ == mod.__name__ and cls.__dict__.get("BINDINGS"):
                assert (name, cls.__name__) in documented, f"{cls.__name__}'s keys are not in docs/keys.md"
    for _, b in all_bindings():
        assert does(b).strip(), f"{b.id} does not say what it does"


def test_escape_has_one_meaning_per_kind_of_screen():
    """Escape is Back on every screen and Close in every dialog (chat: cancel the running request)."""
    from textual.screen import ModalScreen

    for owner, b in all_bindings():
        if b.key != "escape" or owner in ("ChatScreen", "SearchBox"):
            continue
        cls = next(getattr(importlib.import_module(f"autopatch_tui.tui.{m}"), owner) for m in MODULES
                   if hasattr(importlib.import_module(f"autopatch_tui.tui.{m}"), owner))
        expected = "Close" if issubclass(cls, ModalScreen) else "Back"
        assert b.description == expected, f"{owner}: escape is {b.description!r}, not {expected!r}"
