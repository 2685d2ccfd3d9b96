"""Every command answers in its format (issue 30 item 10): a command whose `--help` lists `--json`
prints exactly one JSON document on success (never human text); one whose `--help` does not list
it refuses `--json` (exit 2, one JSON error document). The commands are found by walking `--help`,
not from a fixed list, so a command added later is checked too."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import refused_store
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores.service import StoreService
from tests.support.fixtures import is_error_doc, make_git_repo, raw_connect
from tests.support.memory_factory import add_item
from tests.support.pipeline_helpers import create_all

SECTION = re.compile(r"^  (COMMAND|ACTION)$")
ENTRY = re.compile(r"^    ([a-z][a-z0-9-]*)(?:\s{2,}|$)")


def _subcommands(help_text: str) -> list[str]:
    """The names listed under the COMMAND/ACTION heading of a `--help` text."""
    names, inside = [], False
    for line in help_text.splitlines():
        if SECTION.match(line):
            inside = True
            continue
        if inside:
            m = ENTRY.match(line)
            if m:
                names.append(m.group(1))
            elif line.strip() and not line.startswith(" " * 8):  # a help line wrapped under an entry
                inside = False
    return names


def _usage(help_text: str) -> str:
    lines = []
    for line in help_text.splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return " ".join(lines)


def _positionals(usage: str, words: list[str]) -> list[str]:
    """The required positional arguments of a usage line (bracketed ones are optional)."""
    rest = usage.split(" ".join(["autopatch-tui", *words]), 1)[1]
    while True:
        stripped = re.sub(r"\[[^\[\]]*\]", "", rest)
        if stripped == rest:
            break
        rest = stripped
    return [t for t in rest.split() if t not in ("...", "COMMAND", "ACTION") and not t.startswith("{")]


def _walk(invoke_cli) -> dict[tuple[str, ...], str]:
    """Every parser reachable from the top-level `--help`: words → its help text."""
    found: dict[tuple[str, ...], str] = {}
    todo: list[tuple[str, ...]] = [()]
    while todo:
        words = todo.pop()
        rc, out, err = invoke_cli(*words, "--help")
        assert rc == 0, (words, err)
        found[words] = out
        todo.extend((*words, name) for name in _subcommands(out))
    return found


@dataclass
class World:
    repo: Path
    other: Path
    item: str
    job: str
    store: str
    other_store: str


def _world(base: Path, settings: Settings) -> World:
    """A repository whose store holds an item awaiting review and a failed job, and a second
    registered checkout with a store of its own: enough for every command to succeed."""
    repo = make_git_repo(base / "project")
    other = make_git_repo(base / "other", remote="https://example.org/other/elsewhere.git")
    for path in (other, repo):
        mgr = MemoryManager.open(path, settings)
        try:
            h = mgr.begin_turn("We indent with tabs in this project.")
            mgr.complete_turn(h, "Noted: tabs.")
            item = add_item(mgr.store.conn(), subject="indentation", statement="Indent with tabs.",
                            keywords=["tabs"], sources=[(h.turn_id, "user", "We indent with tabs")]).logical_id
            refused_store.add(mgr.paths, mgr.store.conn(), [refused_store.for_file(  # for `memory refused keep N`
                "one_off_scope", h.turn_id, {
                    "kind": "project_decision", "subject": "tabs here", "statement": "Indent with tabs here.",
                    "content": "Indent with tabs here.", "strength": "hard", "origin": "explicit",
                    "recall_mode": "always", "applies_to_paths": [], "aliases": [], "keywords": [],
                    "sources": [{"turn_id": h.turn_id, "role": "user", "quote": "We indent with tabs"}]},
                key="k1", at=1.0)])
        finally:
            mgr.close()
    conn = raw_connect(repo / ".autopatch-j" / "memory.db")
    job = conn.execute("SELECT id FROM memory_jobs ORDER BY created_at LIMIT 1").fetchone()[0]
    conn.execute("UPDATE memory_jobs SET status = 'failed', attempts = 2, completed_at = 9.0, failure_category = 'auth',"
                 " failure_phase = 'provider', failure_stage = 'primary' WHERE id = ?", (job,))
    conn.commit()
    conn.close()
    svc = StoreService(settings)
    names = {Path(s["root"]).name: s["store"] for s in svc.stores() if s["root"]}
    return World(repo, other, item, job, names["project"], names["other"])


# a value for each positional argument, by its name in the usage line
VALUES: dict[str, Callable[[World], str]] = {
    "id": lambda w: w.item, "ID": lambda w: w.item,
    "job_id": lambda w: w.job, "JOB_ID": lambda w: w.job,
    "source": lambda w: w.other_store, "target": lambda w: w.store,
    "store": lambda w: w.store, "label": lambda w: "Team label",
    "path": lambda w: str(w.other), "PATH": lambda w: str(w.other),
    "TEXT": lambda w: "We indent with tabs here.",
    "query": lambda w: "tabs", "QUERY": lambda w: "tabs",
    "N": lambda w: "1",  # `memory refused keep N`: the world's one refused candidate
}
# options without which a command refuses to do its work
EXTRA: dict[tuple[str, ...], Callable[[World], list[str]]] = {
    ("memory", "clear"): lambda w: ["--confirm"],
    ("memory", "review", "keep"): lambda w: ["--all"],
    ("memory", "promote"): lambda w: [w.item],  # IDs are optional (--prune alone)
    ("ask",): lambda w: ["Which indentation do we use?"],  # TEXT is optional (stdin); the test's stdin is no message
}
NEEDS_MODEL = {("ask",), ("memory", "remember"), ("memory", "refused", "keep")}


def test_every_command_answers_json_or_refuses_it(tmp_path: Path, settings: Settings, invoke_cli,
                                                  llm_stub, monkeypatch: pytest.MonkeyPatch) -> None:
    llm_stub.default("chat", "We use tabs.")
    llm_stub.default("consolidation", create_all)  # `memory refused keep N` consolidates the kept candidate
    parsers = _walk(invoke_cli)
    # the walk reaches the commands this test was written against (and any added since)
    for words in (("memory", "forget"), ("memory", "clear"), ("memory", "stores", "add"),
                  ("memory", "stores", "label"), ("ask",), ("new",), ("memory", "review", "keep")):
        assert words in parsers, words
    with_json = [w for w, h in parsers.items() if re.search(r"\[--json\]", _usage(h))]
    without = [w for w in parsers if w not in with_json]
    assert () in without and ("memory",) in without  # the app and the `memory` group have no JSON form

    for n, words in enumerate(sorted(parsers)):
        # the whole command line it needs to succeed, so that `--json` is the only thing that can refuse it
        world = _world(tmp_path / f"w{n}", settings)
        usage = _usage(parsers[words])
        extra = EXTRA.get(words, lambda w: [])(world)
        args = [*words, *(VALUES[p](world) for p in _positionals(usage, list(words))), *extra]
        env = {"AUTOPATCH_LLM_BASE_URL": llm_stub.base_url, "AUTOPATCH_LLM_MODEL": "gpt-4o"} \
            if words in NEEDS_MODEL else {}
        rc, out, err = invoke_cli(*args, "--repo", world.repo, json=True, cwd=world.repo, env=env)
        if words in with_json:
            assert rc == 0, (words, out, err)
            assert isinstance(out, dict) and "error" not in out, (words, out)
        else:
            assert rc == 2 and is_error_doc(out, 2), (words, rc, out, err)
            assert "Traceback" not in err, words
            if not (words and "  COMMAND\n" in parsers[words]):  # a group without its command is refused anyway
                assert "--json" in out["error"]["message"], (words, out)
    rc, out, err = invoke_cli(json=True, cwd=tmp_path)  # the app: its own words, not argparse's
    assert out["error"]["message"] == "the full-screen app has no --json form; run a command with --json"


def test_version_json_is_a_document_and_plain_version_stays_text(invoke_cli) -> None:
    from autopatch_tui import __version__

    rc, out, err = invoke_cli("--version", json=True)
    assert rc == 0 and out == {"version": __version__}, (out, err)
    rc, out, err = invoke_cli("--json", "--version")
    assert rc == 0 and out.strip() == f'{{"version": "{__version__}"}}'
    rc, out, err = invoke_cli("--version")
    assert rc == 0 and out == f"autopatch-tui {__version__}\n"


def test_forget_clear_and_store_actions_print_their_documents(tmp_path: Path, settings: Settings,
                                                              invoke_cli) -> None:
    w = _world(tmp_path / "w", settings)
    rc, out, err = invoke_cli("memory", "forget", w.item, "--repo", w.repo, json=True)
    assert rc == 0 and out == {"forgotten": w.item}, (out, err)
    rc, out, err = invoke_cli("memory", "clear", "--confirm", "--repo", w.repo, json=True)
    assert rc == 0 and set(out) == {"cleared", "thread_id"} and out["cleared"] is True, (out, err)
    assert out["thread_id"].startswith("thr")
    rc, out, err = invoke_cli("memory", "stores", "label", w.other_store, "Other team", json=True)
    assert rc == 0, err
    rc, listed, err = invoke_cli("memory", "stores", json=True)
    row = next(s for s in listed["stores"] if s["store"] == w.other_store)
    assert out == row and row["label"] == "Other team"
    rc, out, err = invoke_cli("memory", "stores", "--json", "add", w.other, json=True)  # --json before the action
    assert rc == 0 and out == row, (out, err)
