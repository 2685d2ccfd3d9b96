"""Every command answers in its own format (issue 20, deliverable 6; contracts §4 as of 2026-12-01):

* an empty or blank `ask` is a usage error (2) and nothing reaches the model or the store;
* with `--json` every failure prints exactly one JSON document, `{"error": {"code", "message"}}`,
  on stdout, and its line on stderr — argparse's usage errors included;
* an over-long ID or label, or one with control characters, is a usage error that never echoes it;
* text from the store, a label or a model is printed with its control characters escaped;
* file errors read in plain words; `export --to ""` is refused instead of writing elsewhere;
* `--version`; `--help` says what starts the app and lists the exit codes;
* a store that holds nothing is not registered, listed or proposed until it holds something."""

from __future__ import annotations

import sqlite3

import pytest

from autopatch_tui import __version__
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.stores.registry import Registry
from tests.support.fixtures import (
    DEFAULT_REMOTE,
    db_path,
    is_error_doc,
    make_git_repo,
    parse_single_json,
)
from tests.support.store_helpers import add_item, add_turns, name_of

ESC_TEXT = "Use \x1b]0;owned\x07tabs\x1b[2J and \x9b31m\u202eright-to-left"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def _raw_controls(text: str) -> list[str]:
    return [c for c in RAW if c in text]


# --------------------------------------------------------------------------- ask


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
def test_an_empty_ask_is_a_usage_error_and_sends_nothing(repo, invoke_cli, llm_stub, monkeypatch, text) -> None:
    monkeypatch.setenv("AUTOPATCH_LLM_BASE_URL", llm_stub.base_url)
    monkeypatch.setenv("AUTOPATCH_LLM_MODEL", "gpt-4o")
    rc, out, err = invoke_cli("ask", text, json=True)
    assert rc == 2 and is_error_doc(out, 2), (rc, out, err)
    assert "empty" in out["error"]["message"] and "empty" in err
    assert llm_stub.requests == []
    assert not db_path(repo).exists()  # refused before a store was opened


# --------------------------------------------------------------------------- --json errors


def test_every_json_failure_is_one_error_document_and_a_stderr_line(repo, settings, run_cli, invoke_cli,
                                                                    tmp_path) -> None:
    MemoryManager.open(repo, settings).close()
    cases = [
        (("memory", "bogus"), 2),  # argparse: an unknown subcommand
        (("memory", "list", "--kind", "nonsense"), 2),  # argparse: a bad choice
        (("memory", "show"), 2),  # argparse: a missing argument
        (("memory", "show", "mem-01NOSUCHITEM"), 1),
        (("memory", "retry", "job-01NOSUCHJOB"), 1),
        (("memory", "status", "--repo", str(tmp_path / "missing")), 2),
        (("memory", "export", "--to", str(tmp_path / "no" / "such" / "folder" / "x.json")), 1),
    ]
    for args, code in cases:
        rc, out, err = invoke_cli(*args, json=True)
        assert rc == code and is_error_doc(out, code), (args, rc, out, err)
        assert f"error: {out['error']['message']}" in err, (args, err)
    # the real process: one document on stdout, nothing else there
    rc, out, err = run_cli("memory", "bogus", "--json")
    assert rc == 2 and is_error_doc(parse_single_json(out), 2) and out.count("\n") == 1
    assert "usage:" in err and "Traceback" not in err


def test_without_json_an_error_prints_nothing_on_stdout(repo, invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "show", "mem-01NOSUCHITEM")
    assert (rc, out) == (1, "") and "mem-01NOSUCHITEM" in err


def test_json_after_a_double_dash_is_text_not_the_option(repo, invoke_cli) -> None:
    rc, out, err = invoke_cli("memory", "search", "--", "--json")
    assert rc == 0 and not out.lstrip().startswith("{"), (out, err)


# --------------------------------------------------------------------------- over-long and control input


def test_over_long_ids_are_usage_errors_that_do_not_echo_them(repo, settings, invoke_cli) -> None:
    MemoryManager.open(repo, settings).close()
    long_id = "mem-" + "x" * 100_000
    for args in (("memory", "show", long_id), ("memory", "forget", long_id), ("memory", "retry", long_id),
                 ("memory", "stores", "label", "project-" + "Z" * 200, "label"),
                 ("memory", "merge", "project-" + "Z" * 200, "project-X")):
        rc, out, err = invoke_cli(*args, json=True)
        assert rc == 2 and is_error_doc(out, 2), (args[:2], rc, err[:300])
        assert "at most 64 characters" in err and len(err) < 2000, err[:300]


def test_the_app_refuses_an_over_long_id_too(manager) -> None:
    from autopatch_tui.core.errors import UsageError

    with pytest.raises(UsageError, match="at most 64"):
        manager.show_item("mem-" + "x" * 100_000)


@pytest.mark.parametrize("label", ["two\nlines", "bell\x07", "title \x1b]0;owned\x07", "x" * 81, "   "])
def test_a_label_with_control_characters_or_too_long_is_a_usage_error(repo, settings, invoke_cli, label) -> None:
    mgr = MemoryManager.open(repo, settings)
    add_turns(mgr, 1)
    mgr.close()
    rc, out, err = invoke_cli("memory", "stores", "label", name_of(repo), label, json=True)
    assert rc == 2 and is_error_doc(out, 2), (rc, err)
    with Registry(settings.home) as reg:
        assert reg.require(name_of(repo)).label is None


def test_store_model_and_label_text_is_printed_escaped(repo, settings, invoke_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    add_turns(mgr, 1)
    item = add_item(mgr, "indentation", ESC_TEXT, quote=ESC_TEXT)
    mgr.close()
    # a label an older release let in, straight into the store and the registry
    with sqlite3.connect(db_path(repo)) as conn:
        conn.execute("UPDATE memory_meta SET label = ?", ("Alpha\n\x1b[31mred",))
    with Registry(settings.home) as reg:
        reg.set_label(name_of(repo), "Alpha\n\x1b[31mred")
    for args in (("memory", "list"), ("memory", "show", item.logical_id), ("memory", "stores")):
        rc, out, err = invoke_cli(*args)
        assert rc == 0, (args, err)
        assert _raw_controls(out) == [], (args, out)
        assert "\\x1b" in out, (args, out)
    rc, out, _ = invoke_cli("memory", "stores")
    line = next(x for x in out.splitlines() if name_of(repo) in x)
    assert "Alpha\\x0a\\x1b[31mred" in line  # one store, one line
    rc, out, _ = invoke_cli("memory", "show", item.logical_id, json=True)  # JSON: the same value, escaped
    assert out["statement"] == ESC_TEXT
    rc, raw, _ = invoke_cli("memory", "show", item.logical_id, "--json")
    assert _raw_controls(raw) == [] and "\\u009b" in raw and "\\u202e" in raw


# --------------------------------------------------------------------------- files


def test_file_errors_read_in_plain_words(repo, settings, invoke_cli, tmp_path) -> None:
    MemoryManager.open(repo, settings).close()
    rc, _out, err = invoke_cli("memory", "export", "--to", str(tmp_path / "nowhere" / "x.json"))
    assert rc == 1 and "no such file or folder" in err
    assert "Error)" not in err and "FileNotFound" not in err


@pytest.mark.parametrize("target", ["", "   "])
def test_an_empty_export_target_is_a_usage_error_and_writes_nothing(repo, settings, invoke_cli, target) -> None:
    MemoryManager.open(repo, settings).close()
    exports = db_path(repo).parent / "memory-exports"
    rc, out, err = invoke_cli("memory", "export", "--to", target, json=True)
    assert rc == 2 and is_error_doc(out, 2), err
    assert not exports.exists() or list(exports.iterdir()) == []


# --------------------------------------------------------------------------- version and help


def test_version_and_help(run_cli) -> None:
    rc, out, err = run_cli("--version")
    assert (rc, out.strip()) == (0, f"autopatch-tui {__version__}"), err
    rc, out, err = run_cli("--help")
    assert rc == 0, err
    flat = " ".join(out.split())
    assert "With no COMMAND, autopatch-tui starts the full-screen app" in flat
    assert "No COMMAND starts the app" in flat
    for code, words in (("0", "success"), ("1", "the operation failed"), ("2", "usage error"),
                        ("3", "Memory is degraded")):
        assert f"{code} {words}" in flat, (code, flat)


# --------------------------------------------------------------------------- empty stores


def test_a_store_that_holds_nothing_is_not_listed_nor_proposed_until_it_holds_something(
        tmp_path, settings, invoke_cli) -> None:
    used = make_git_repo(tmp_path / "one" / "proj", DEFAULT_REMOTE)
    mgr = MemoryManager.open(used, settings)
    add_turns(mgr, 1)
    mgr.close()
    stray = make_git_repo(tmp_path / "two" / "proj", DEFAULT_REMOTE)  # a clone of the same project
    rc, status, err = invoke_cli("memory", "status", json=True, cwd=stray)
    assert rc == 0 and status["state"] == "healthy", err
    assert not db_path(stray).exists()  # a read never creates a store (issue 30 item 12)
    with Registry(settings.home) as reg:
        assert [e.name for e in reg.entries()] == [name_of(used)]  # nothing registered for the stray
    MemoryManager.open(stray, settings).close()  # an empty store (as a first start makes)
    with Registry(settings.home) as reg:
        assert reg.get(name_of(stray)) is None  # not registered
    rc, listed, _ = invoke_cli("memory", "stores", json=True, cwd=tmp_path)
    assert [s["store"] for s in listed["stores"]] == [name_of(used)]
    rc, scan, _ = invoke_cli("memory", "merge-scan", json=True, cwd=tmp_path)
    assert scan["proposals"] == []  # the same remote, but nothing to merge

    mgr = MemoryManager.open(stray, settings)  # it is used: its first turn registers it
    add_turns(mgr, 1)
    with Registry(settings.home) as reg:
        assert reg.get(name_of(stray)) is not None
    mgr.close()
    rc, listed, _ = invoke_cli("memory", "stores", json=True, cwd=tmp_path)
    assert {s["store"] for s in listed["stores"]} == {name_of(used), name_of(stray)}
    rc, scan, _ = invoke_cli("memory", "merge-scan", json=True, cwd=tmp_path)
    assert [{p["source"], p["target"]} for p in scan["proposals"]] == [{name_of(used), name_of(stray)}]


def test_a_cleared_store_leaves_the_list(repo, settings, invoke_cli) -> None:
    mgr = MemoryManager.open(repo, settings)
    add_turns(mgr, 2)
    mgr.close()
    rc, listed, _ = invoke_cli("memory", "stores", json=True)
    assert [s["store"] for s in listed["stores"]] == [name_of(repo)]
    rc, _, err = invoke_cli("memory", "clear", "--confirm")
    assert rc == 0, err
    rc, listed, _ = invoke_cli("memory", "stores", json=True)
    assert listed["stores"] == []


def test_adding_an_empty_checkout_says_it_is_listed_once_used(tmp_path, settings, invoke_cli) -> None:
    empty = make_git_repo(tmp_path / "fresh")
    MemoryManager(empty, settings, register=False).close()
    rc, out, err = invoke_cli("memory", "stores", "add", str(empty), cwd=tmp_path)
    assert rc == 0, err
    assert "holds nothing yet" in out
