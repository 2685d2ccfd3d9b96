"""Issue 28 item 4: a JSON file a repository ships (or another process replaces) never crashes or
hangs a command. Each file the product reads — `.autopatch-j/review_marks.json` (and its `.lock`),
`$AUTOPATCH_HOME/store-checks.json`, `.autopatch-j/audit.json`, the prompt history — is planted
deeply nested, as a FIFO, as a folder and as a link, and the real commands run: one sentence and the
right exit code, approval mode hiding everything (fails closed), a lost verdict memo only costing a
repeated check. A FIFO that blocked is released by a watchdog and fails the test (no hang)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from autopatch_tui.core import bounded_json
from autopatch_tui.core.bounded_json import JsonFileError, read_json
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.verdicts import MEMO_FILE
from autopatch_tui.core.repair.workspace import ReviewState
from autopatch_tui.core.settings import Settings
from autopatch_tui.tui.prompt_history import PromptHistory
from tests.support.memory_factory import add_item

VARIANTS = ["nested", "fifo", "folder", "symlink", "nested_in_object"]
REVIEW = {"AUTOPATCH_MEMORY_APPROVAL": "review"}


class Unblocker:
    """Watches the FIFOs a test plants: a reader still blocked on one after `AFTER` seconds is
    released (a writer opens it and writes a byte) and the test fails at its end, instead of the
    suite hanging on a regression."""

    AFTER = 8.0

    def __init__(self) -> None:
        self.fifos: list[Path] = []
        self.blocked: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        if self._stop.wait(self.AFTER):
            return
        while not self._stop.wait(0.1):
            for fifo in list(self.fifos):
                try:
                    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only while a reader waits
                except OSError:
                    continue
                self.blocked.append(fifo.name)
                os.write(fd, b"[")
                os.close(fd)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


_WATCH: list[Unblocker] = []


@pytest.fixture(autouse=True)
def unblocker():
    watch = Unblocker()
    _WATCH.append(watch)
    yield watch
    _WATCH.remove(watch)
    watch.stop()
    assert watch.blocked == [], f"a command blocked on a FIFO: {watch.blocked}"


def plant(path: Path, variant: str, outside: Path) -> None:
    """Replace `path` with the hostile variant."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if variant == "nested":
        path.write_bytes(b"[" * 200_000 + b"]" * 200_000)
    elif variant == "nested_in_object":  # the right shape at the top, deep inside
        path.write_bytes(b'{"format": "x", "kept": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    elif variant == "fifo":
        os.mkfifo(path)
        _WATCH[-1].fifos.append(path)
    elif variant == "folder":
        path.mkdir()
        (path / "x").write_text("{}")
    elif variant == "symlink":
        outside.write_text("{}")
        path.symlink_to(outside)
    else:
        raise AssertionError(variant)


def one_sentence(err: str, rc: int, variant: str) -> None:
    """Exit 1 and one line; a link under `.autopatch-j/` makes the store degraded (contracts §1):
    exit 3 and the degraded store's two lines (what, then where to look)."""
    assert "Traceback" not in err and "RecursionError" not in err and "IsADirectoryError" not in err
    lines = err.strip().splitlines()
    if variant == "symlink":
        assert rc == 3 and "symbolic link" in lines[0] and len(lines) == 2, err
    else:
        assert rc == 1 and len(lines) == 1, err


@pytest.fixture
def kept_store(repo: Path, settings: Settings, invoke_cli) -> tuple[str, str]:
    """Two items about indentation; the first is kept (its marks file is valid)."""
    mgr = MemoryManager.open(repo, settings)
    try:
        conn = mgr.store.conn()
        kept = add_item(conn, subject="tabs", statement="Never use tabs", keywords=["indentation"]).logical_id
        new = add_item(conn, subject="makefile", statement="Use tabs in Makefiles", keywords=["indentation"],
                       applies_to_paths=["Makefile"]).logical_id
    finally:
        mgr.close()
    rc, _, err = invoke_cli("memory", "review", "keep", kept)
    assert rc == 0, err
    rc, found, _ = invoke_cli("memory", "search", "indentation", json=True, env=REVIEW)
    assert [r["id"] for r in found["results"]] == [kept]  # the kept item is recalled while the file is good
    return kept, new


# --------------------------------------------------------------------------- review_marks.json

@pytest.mark.parametrize("variant", VARIANTS)
def test_a_hostile_marks_file_is_a_sentence_in_every_command(variant, kept_store, repo: Path, tmp_path: Path,
                                                             invoke_cli) -> None:
    kept, new = kept_store
    plant(repo / ".autopatch-j" / "review_marks.json", variant, tmp_path / "outside.json")
    rc, _, err = invoke_cli("memory", "review")
    one_sentence(err, rc, variant)
    assert "review_marks.json" in err
    rc, _, err = invoke_cli("memory", "review", "keep", new)
    one_sentence(err, rc, variant)
    if variant == "symlink":
        return  # a degraded store: every command refuses it alike (tests/memory/test_review_marks.py)
    rc, out, err = invoke_cli("memory", "list", json=True)  # the listing works; everything awaits review
    assert rc == 0 and {i["review"] for i in out["items"]} == {"new"}
    rc, out, err = invoke_cli("memory", "status", json=True)
    assert rc == 0 and out["review"]["new"] == 2, err
    rc, found, err = invoke_cli("memory", "search", "indentation", json=True, env=REVIEW)
    assert rc == 0 and found["results"] == [], err  # fails closed: not even the kept item is recalled
    rc, found, err = invoke_cli("memory", "search", "indentation", json=True)  # auto mode: marks not needed
    assert rc == 0 and {r["id"] for r in found["results"]} == {kept, new}, err


def test_a_nested_marks_file_keeps_every_item_out_of_an_ask_in_review_mode(kept_store, repo: Path,
                                                                          settings: Settings) -> None:
    """The request's recall policy (what `ask` uses) allows nothing when the marks cannot be read."""
    plant(repo / ".autopatch-j" / "review_marks.json", "nested", repo / "unused")
    mgr = MemoryManager.open(repo, Settings(**{**settings.model_dump(), "memory_approval": "review"}))
    try:
        policy = mgr.review.policy("general_chat", None)
        assert policy.kept == frozenset()
    finally:
        mgr.close()


@pytest.mark.parametrize("variant", ["folder", "fifo", "symlink"])
def test_a_hostile_lock_is_a_sentence_and_marks_nothing(variant, kept_store, repo: Path, tmp_path: Path,
                                                        invoke_cli) -> None:
    _, new = kept_store
    marks = (repo / ".autopatch-j" / "review_marks.json").read_bytes()
    plant(repo / ".autopatch-j" / "review_marks.lock", variant, tmp_path / "outside.lock")
    rc, _, err = invoke_cli("memory", "review", "keep", new)
    one_sentence(err, rc, variant)
    assert "review_marks.lock" in err
    assert (repo / ".autopatch-j" / "review_marks.json").read_bytes() == marks


# --------------------------------------------------------------------------- store-checks.json

@pytest.mark.parametrize("variant", VARIANTS)
def test_a_hostile_verdict_memo_only_costs_a_repeated_check(variant, repo: Path, settings: Settings,
                                                            invoke_cli, tmp_path: Path) -> None:
    mgr = MemoryManager.open(repo, settings)
    try:
        add_item(mgr.store.conn(), subject="tabs", statement="Never use tabs")
    finally:
        mgr.close()
    time.sleep(0.1)
    plant(settings.home / MEMO_FILE, variant, tmp_path / "outside.json")
    for command in (("memory", "status"), ("memory", "list"), ("memory", "search", "tabs"), ("memory", "review")):
        rc, out, err = invoke_cli(*command, json=True)
        assert rc == 0, (command, err)
        assert "Traceback" not in err
    rc, out, _ = invoke_cli("memory", "status", json=True)
    assert (rc, out["state"]) == (0, "healthy")


# --------------------------------------------------------------------------- audit.json

@pytest.mark.parametrize("variant", VARIANTS + ["huge"])
def test_a_hostile_saved_audit_is_a_sentence_at_start(variant, repo: Path, tmp_path: Path, monkeypatch) -> None:
    path = repo / ".autopatch-j" / "audit.json"
    if variant == "huge":
        monkeypatch.setattr("autopatch_tui.core.repair.drafts_file.MAX_BYTES", 1000)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[" + "0," * 1000 + "0]")
    else:
        plant(path, variant, tmp_path / "outside.json")
    review = ReviewState()
    review.persist_to(repo)
    said = review.restore("thr-1")
    assert said.startswith("The saved audit was not read") and said.count("\n") == 0, said
    assert review.workspace is None


# --------------------------------------------------------------------------- the prompt history

@pytest.mark.parametrize("variant", VARIANTS)
def test_a_hostile_prompt_history_costs_the_history_only(variant, tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    plant(path, variant, tmp_path / "outside.jsonl")
    assert PromptHistory(path).entries == []


def test_a_nested_line_in_the_prompt_history_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b'"first"\n' + b"[" * 100_000 + b"]" * 100_000 + b'\n"second"\n')
    assert PromptHistory(path).entries == ["first", "second"]


# --------------------------------------------------------------------------- the reader itself

def test_the_depth_bound_counts_only_brackets_outside_strings(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{"a": "[[[[[[[[[[[[[[[[[[[[", "b": [[["\\"]]]]]]]"]]]}')
    assert read_json(path, max_bytes=1000, max_depth=4) == {"a": "[" * 20, "b": [[['"]]]]]]]']]]}
    with pytest.raises(JsonFileError) as caught:
        read_json(path, max_bytes=1000, max_depth=3)
    assert caught.value.reason == bounded_json.TOO_DEEP


def test_a_file_over_the_size_bound_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text("[" + "1," * 600 + "1]")
    with pytest.raises(JsonFileError) as caught:
        read_json(path, max_bytes=1000)
    assert caught.value.reason == bounded_json.TOO_LARGE
    assert read_json(tmp_path / "missing.json", max_bytes=1000) is None


# --------------------------------------------------------------------------- the settings file

@pytest.mark.parametrize("variant", ["fifo", "folder", "nested_toml"])
def test_a_hostile_settings_file_is_a_sentence(variant, tmp_path: Path, invoke_cli) -> None:
    home = tmp_path / "home"
    path = home / "config.toml"
    home.mkdir()
    if variant == "nested_toml":
        path.write_text("llm_model = " + "[" * 50_000 + "]" * 50_000 + "\n")
    else:
        plant(path, variant, tmp_path / "unused")
    rc, _, err = invoke_cli("memory", "list", env={"AUTOPATCH_HOME": str(home)})
    assert rc != 0 and "Traceback" not in err and "unexpected error" not in err, err
    assert f"cannot read settings file {path}" in err and len(err.strip().splitlines()) == 1, err


# --------------------------------------------------------------------------- a repository's manifests

def test_a_deeply_nested_pyproject_does_not_crash_the_audits_claim_check(repo: Path, settings: Settings,
                                                                          invoke_cli) -> None:
    """`memory audit` reads the root pyproject.toml for still-true claims; tomllib recurses per level."""
    (repo / "pyproject.toml").write_text("[tool.x]\nv = " + "[" * 50_000 + "]" * 50_000 + "\n")
    mgr = MemoryManager.open(repo, settings)
    try:
        add_item(mgr.store.conn(), subject="test runner", statement="Use pytest for the tests.", keywords=["pytest"])
    finally:
        mgr.close()
    rc, out, err = invoke_cli("memory", "audit", json=True)
    assert rc == 0, err
    assert out["stale_claims"] == []


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_side_file_lock_that_cannot_be_one_is_a_sentence_not_an_os_error(repo: Path, settings: Settings,
                                                                           kind: str) -> None:
    """The refused-candidates file's lock goes through the side files' one lock helper, which the
    review marks use too: a folder or a FIFO in its place is a `SideFileError`, not IsADirectoryError."""
    from autopatch_tui.core.memory import side_json

    mgr = MemoryManager.open(repo, settings)
    try:
        lock = mgr.paths.state_dir / "refused.lock"
        lock.mkdir() if kind == "folder" else os.mkfifo(lock)
        with pytest.raises(side_json.SideFileError, match="lock file|regular file"):
            with side_json.locked(mgr.paths, lock):
                pass
    finally:
        mgr.close()
