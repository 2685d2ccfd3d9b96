"""Fixtures and helpers for Memory and CLI tests (registered as a pytest plugin by tests/conftest.py).

Fixtures:
* `repo`     – a temporary git repository (`git init`, an `origin` remote), resolved path;
* `settings` – `load_settings()` with a short turn lease (`AUTOPATCH_MEMORY_LEASE_SECONDS=2`);
* `manager`  – `MemoryManager.open(repo, settings)`, closed after the test;
* `run_cli`  – `run_cli(*args, json=False, cwd=None, env=None)` runs `python -m autopatch_tui …` in a
  subprocess with the isolated environment and returns `(returncode, stdout, stderr)`; with
  `json=True` it adds `--json` and returns stdout parsed (exactly one JSON document, or None when
  stdout is empty, e.g. on an error exit);
* `invoke_cli` – the same call shape, but runs `autopatch_tui.cli.main.run(argv)` in this process (no
  interpreter start-up: ~1 s saved per call). Use `run_cli` where the process boundary matters
  (exit status of a real process, output of a crash, environment read at start-up).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json as jsonlib
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import Settings, load_settings

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_REMOTE = "https://github.com/example-org/example-project.git"
GIT = shutil.which("git")


class FakeClock:
    """A settable clock for the manager (`now` drives leases, export stamps and timestamps)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = float(start)
        self._mono = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            self._mono += seconds

    def set(self, now: float) -> None:
        with self._lock:
            self._now = float(now)


def git_env(home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    if home is not None:
        env["HOME"] = str(home)
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    return env


def make_git_repo(path: Path, remote: str | None = DEFAULT_REMOTE) -> Path:
    """`git init` in `path` (created when missing) and add an `origin` remote. Returns the resolved path."""
    path.mkdir(parents=True, exist_ok=True)
    if GIT is not None:
        env = git_env(path.parent)
        subprocess.run([GIT, "init", "-q", str(path)], check=True, env=env, capture_output=True)
        if remote:
            subprocess.run([GIT, "-C", str(path), "remote", "add", "origin", remote], check=True, env=env,
                           capture_output=True)
    else:
        write_git_layout(path, remote)
    return path.resolve()


def write_git_layout(path: Path, remote: str | None) -> Path:
    """The on-disk layout `git init` + `git remote add origin` leave: enough for the app's
    filesystem-only repository resolution, without starting a `git` process."""
    (path / ".git" / "objects").mkdir(parents=True, exist_ok=True)
    (path / ".git" / "refs").mkdir(exist_ok=True)
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    cfg = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
    if remote:
        cfg += f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    (path / ".git" / "config").write_text(cfg)
    return path.resolve()


# --------------------------------------------------------------------------- file helpers


def state_dir(repo: Path) -> Path:
    return repo / ".autopatch-j"


def db_path(repo: Path) -> Path:
    return state_dir(repo) / "memory.db"


def write_old_store(repo: Path, *statements: str | tuple[str, Sequence[object]], user_version: int = 3) -> Path:
    """A store file an older release could have left at `repo`: `statements` (SQL, or SQL with its
    parameters) run in a fresh private `.autopatch-j/memory.db`, then `PRAGMA user_version` is set.
    Returns the file's path."""
    db = db_path(repo)
    db.parent.mkdir(mode=0o700, exist_ok=True)
    conn = raw_connect(db)
    try:
        for statement in statements:
            sql, params = (statement, ()) if isinstance(statement, str) else statement
            conn.execute(sql, params)
        conn.execute(f"PRAGMA user_version = {int(user_version)}")
    finally:
        conn.close()
    return db


def file_fingerprint(path: Path) -> tuple[str, bytes]:
    """(sha256 of the whole file, header bytes 18-19: the file-format write/read versions, 2/2 = WAL)."""
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), data[18:20]


def raw_connect(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection for arranging or inspecting a test database (autocommit)."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def query(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    """Run one read query through a separate read-only connection."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def scalar(path: Path, sql: str, args: tuple[Any, ...] = ()) -> Any:
    return query(path, sql, args)[0][0]


def bootstrap_healthy(repo: Path, settings: Settings) -> Path:
    """Create a healthy v4 store for `repo` and close every connection (the WAL is checkpointed away)."""
    MemoryManager.open(repo, settings).close()
    return db_path(repo)


def parse_single_json(text: str) -> Any:
    """Parse `text` as exactly one JSON document (surrounding whitespace allowed)."""
    stripped = text.strip()
    assert stripped, "expected one JSON document on stdout, got nothing"
    value, end = jsonlib.JSONDecoder().raw_decode(stripped)
    assert end == len(stripped), f"more than one JSON document / trailing text on stdout: {stripped[end:end + 80]!r}"
    return value


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "project")


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("AUTOPATCH_MEMORY_LEASE_SECONDS", "2")
    s = load_settings()
    assert s.lease_seconds == 2
    return s


@pytest.fixture
def manager(repo: Path, settings: Settings) -> Iterator[MemoryManager]:
    mgr = MemoryManager.open(repo, settings)
    try:
        yield mgr
    finally:
        mgr.close()


CliResult = tuple[int, Any, str]


@pytest.fixture
def run_cli(repo: Path) -> Callable[..., CliResult]:
    """Run the CLI in a subprocess. `cwd` defaults to the `repo` fixture's folder."""

    def run(*args: str, json: bool = False, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 60) -> CliResult:
        argv = [str(a) for a in args]
        if json and "--json" not in argv:
            argv.append("--json")
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = str(PROJECT_ROOT) + (os.pathsep + full_env["PYTHONPATH"]
                                                      if full_env.get("PYTHONPATH") else "")
        full_env.setdefault("PYTHONIOENCODING", "utf-8")
        if env:
            full_env.update(env)
        proc = subprocess.run(
            [sys.executable, "-m", "autopatch_tui", *argv], cwd=str(cwd or repo), env=full_env,
            capture_output=True, text=True, encoding="utf-8", timeout=timeout,
        )
        out: Any = proc.stdout
        if json:
            out = parse_single_json(proc.stdout) if proc.stdout.strip() else None
        return proc.returncode, out, proc.stderr

    return run


@pytest.fixture
def invoke_cli(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run the CLI entry point in-process with the isolated environment; same results as `run_cli`."""
    from autopatch_tui.cli.main import run as cli_run

    def invoke(*args: str, json: bool = False, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> CliResult:
        argv = [str(a) for a in args]
        if json and "--json" not in argv:
            argv.append("--json")
        out, err = io.StringIO(), io.StringIO()
        with monkeypatch.context() as mp:
            mp.chdir(cwd or repo)
            for key, value in (env or {}).items():
                mp.setenv(key, value)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = cli_run(argv)
                except SystemExit as exc:  # argparse usage errors
                    rc = exc.code if isinstance(exc.code, int) else 1
        stdout: Any = out.getvalue()
        if json:
            stdout = parse_single_json(stdout) if stdout.strip() else None
        return rc, stdout, err.getvalue()

    return invoke


def is_error_doc(out: Any, code: int) -> bool:
    """Whether `out` is the one JSON document a failed `--json` command prints (contracts §4, added
    2026-12-01): exactly `{"error": {"code": EXIT_CODE, "message": non-blank str}}`."""
    if not isinstance(out, dict) or set(out) != {"error"} or not isinstance(out["error"], dict):
        return False
    err = out["error"]
    return (set(err) == {"code", "message"} and err["code"] == code and isinstance(err["message"], str)
            and bool(err["message"].strip()))
