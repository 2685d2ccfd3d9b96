"""Hostile-repository torture runs (issue 28): files, git configuration and modules a repository can
ship, against the real CLI in fresh processes.

    .venv/bin/python bench/hostile.py [--rounds 3]

Each round, in a temporary repository with a small store (two items, one kept):

- **JSON files**: `.autopatch-j/review_marks.json` planted nested (200k levels), nested inside the
  right shape, as a FIFO, a folder and a link, each followed by `memory review`, `memory review
  keep`, `memory list --json`, `memory status --json` and `memory search` in review mode;
  `review_marks.lock` as a folder, a FIFO and a link under `memory review keep`;
  `$AUTOPATCH_HOME/store-checks.json` in the five variants under `memory status` and `memory list`.
  A run fails when it takes over 30 s (a hang), prints a traceback, exits with a code other than
  the one for its case (1 for a refused marks file, 3 for a link under `.autopatch-j/`, 0 where the
  file may be lost), or — approval mode — recalls anything.
- **git configuration**: `memory audit --json` with a glob scope in a repository whose
  `.git/config` names a command for each of 12 keys (`core.fsmonitor`, `core.hooksPath`,
  `diff.external`, textconv/filter/merge drivers, pagers, editor); fails when the command ran.
- **modules**: the detached deep check started from inside a repository holding `autopatch_tui/`,
  `json.py` and `sqlite3/` that touch a marker on import; fails when the marker appears.

Baseline: the same commands on the same store with intact files, in the same run; wall and CPU
(children) per run. Figures are printed, never asserted; on a shared machine they are direction
only."""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.settings import load_settings  # noqa: E402
from tests.support.memory_factory import add_item  # noqa: E402

VARIANTS = ("nested", "nested_in_object", "fifo", "folder", "symlink")
GIT_KEYS = ("core.fsmonitor", "core.hooksPath", "diff.external", "diff.evil.textconv", "diff.evil.command",
            "filter.evil.clean", "filter.evil.smudge", "filter.evil.process", "merge.evil.driver", "core.pager",
            "pager.ls-files", "core.editor")
TIMEOUT = 30.0


class Tally:
    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}  # name -> [runs, failures, wall, cpu]
        self.notes: list[str] = []

    def add(self, name: str, ok: bool, wall: float, cpu: float, why: str = "") -> None:
        row = self.rows.setdefault(name, [0, 0, 0.0, 0.0])
        row[0] += 1
        row[1] += 0 if ok else 1
        row[2] += wall
        row[3] += cpu
        if not ok and len(self.notes) < 20:
            self.notes.append(f"{name}: {why}")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return env


def cli(repo: Path, home: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int | None, str, str, float, float]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("AUTOPATCH_")}
    full.update(AUTOPATCH_HOME=str(home), PYTHONPATH=str(ROOT), **(env or {}))
    t0, c0 = time.perf_counter(), children_cpu()
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.append(sys.argv.pop(1)); "
                               "from autopatch_tui.cli.main import run; raise SystemExit(run(sys.argv[1:]))",
                               str(ROOT), "--repo", str(repo), *args], capture_output=True, text=True, env=full,
                              cwd=repo, timeout=TIMEOUT, check=False)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        code, out, err = None, "", "timed out"
    return code, out, err, time.perf_counter() - t0, children_cpu() - c0


def plant(path: Path, variant: str | None, outside: Path, good: bytes | None = None) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    if variant is None:
        if good is not None:
            path.write_bytes(good)
            path.chmod(0o600)
        return
    if variant == "nested":
        path.write_bytes(b"[" * 200_000 + b"]" * 200_000)
    elif variant == "nested_in_object":
        path.write_bytes(b'{"format": "x", "kept": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    elif variant == "fifo":
        os.mkfifo(path)
    elif variant == "folder":
        path.mkdir()
    elif variant == "symlink":
        outside.write_text("{}")
        path.symlink_to(outside)


def make_store(repo: Path, home: Path) -> tuple[str, str]:
    os.environ["AUTOPATCH_HOME"] = str(home)
    mgr = MemoryManager.open(repo, load_settings())
    try:
        conn = mgr.store.conn()
        kept = add_item(conn, subject="tabs", statement="Never use tabs", keywords=["indentation"]).logical_id
        new = add_item(conn, subject="makefile", statement="Use tabs in Makefiles", keywords=["indentation"],
                       applies_to_paths=["src/**/*.py"]).logical_id
    finally:
        mgr.close()
    return kept, new


def json_files(tally: Tally, repo: Path, home: Path, tmp: Path, kept: str, new: str) -> None:
    marks = repo / ".autopatch-j" / "review_marks.json"
    lock = repo / ".autopatch-j" / "review_marks.lock"
    memo = home / "store-checks.json"
    good_marks = marks.read_bytes()
    review = {"AUTOPATCH_MEMORY_APPROVAL": "review"}
    for variant in (None, *VARIANTS):
        label = variant or "baseline"
        plant(marks, variant, tmp / "outside.json", good_marks)
        refused = 0 if variant is None else (3 if variant == "symlink" else 1)
        cases = [(("memory", "review"), refused), (("memory", "list", "--json"), 3 if variant == "symlink" else 0),
                 (("memory", "status", "--json"), 3 if variant == "symlink" else 0)]
        for args, expected in cases:
            code, out, err, wall, cpu = cli(repo, home, *args)
            ok = code == expected and "Traceback" not in err and "unexpected error" not in err
            tally.add(f"marks {label}", ok, wall, cpu, f"{' '.join(args)} -> {code} {err.strip()[:80]}")
        code, out, err, wall, cpu = cli(repo, home, "memory", "search", "indentation", "--json", env=review)
        hidden = variant is None or code == 3 or '"results": []' in out
        ok = code in (0, 3) and "Traceback" not in err and "unexpected error" not in err and hidden and (variant is not None or kept in out)
        tally.add(f"marks {label}", ok, wall, cpu, f"search -> {code} {out[:80]}")
        if variant is not None:
            code, out, err, wall, cpu = cli(repo, home, "memory", "review", "keep", new)
            ok = code == refused and "Traceback" not in err and "unexpected error" not in err
            tally.add(f"marks {label}", ok, wall, cpu, f"keep -> {code} {err.strip()[:80]}")
    plant(marks, None, tmp / "outside.json", good_marks)
    for variant in ("folder", "fifo", "symlink"):
        plant(lock, variant, tmp / "outside.lock")
        code, out, err, wall, cpu = cli(repo, home, "memory", "review", "keep", new)
        ok = code == (3 if variant == "symlink" else 1) and "Traceback" not in err and "unexpected error" not in err and marks.read_bytes() == good_marks
        tally.add(f"lock {variant}", ok, wall, cpu, f"keep -> {code} {err.strip()[:80]}")
        plant(lock, None, tmp / "outside.lock")
    for variant in (None, *VARIANTS):
        plant(memo, variant, tmp / "outside-memo.json")
        for args in (("memory", "status", "--json"), ("memory", "list", "--json")):
            code, out, err, wall, cpu = cli(repo, home, *args)
            ok = code == 0 and "Traceback" not in err and "unexpected error" not in err
            tally.add(f"store-checks {variant or 'baseline'}", ok, wall, cpu, f"{' '.join(args)} -> {code}")
    plant(memo, None, tmp / "outside-memo.json")


def hostile_git(tally: Tally, repo: Path, home: Path, tmp: Path) -> None:
    marker = tmp / "git-ran"
    script = tmp / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    hooks = tmp / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("pre-commit", "post-index-change", "fsmonitor-watchman"):
        shutil.copy(script, hooks / hook)
    for key in (None, *GIT_KEYS):
        if key is not None:
            value = str(hooks) if key == "core.hooksPath" else str(script)
            subprocess.run(["git", "-C", str(repo), "config", key, value], check=True, env=git_env(tmp))
        code, out, err, wall, cpu = cli(repo, home, "memory", "audit", "--json")
        ok = code == 0 and not marker.exists() and "Traceback" not in err and "unexpected error" not in err
        tally.add("git " + ("baseline" if key is None else "hostile keys"), ok, wall, cpu, f"{key} -> {code}")
        if key is not None:
            subprocess.run(["git", "-C", str(repo), "config", "--unset-all", key], check=True, env=git_env(tmp))
        marker.unlink(missing_ok=True)


def hostile_modules(tally: Tally, repo: Path, home: Path, tmp: Path) -> None:
    from autopatch_tui.cli.check_later import continue_later

    marker = tmp / "module-ran"
    body = f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
    for package in ("autopatch_tui", "autopatch_tui/cli", "sqlite3"):
        (repo / package).mkdir(parents=True, exist_ok=True)
        (repo / package / "__init__.py").write_text(body)
    (repo / "autopatch_tui" / "cli" / "check_later.py").write_text(body + "def main(a):\n    return 0\n")
    (repo / "json.py").write_text(body)
    here = os.getcwd()
    os.chdir(repo)
    try:
        t0, c0 = time.perf_counter(), children_cpu()
        pid = continue_later(Path(".autopatch-j/memory.db"), home)
        _, status = os.waitpid(pid, 0) if pid else (0, 1 << 8)
        ok = pid is not None and os.waitstatus_to_exitcode(status) == 0 and not marker.exists()
        tally.add("modules (detached check)", ok, time.perf_counter() - t0, children_cpu() - c0, f"exit {status}")
    finally:
        os.chdir(here)
        for name in ("autopatch_tui", "sqlite3"):
            shutil.rmtree(repo / name)
        (repo / "json.py").unlink()
        marker.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tally = Tally()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hostile-") as name:
        tmp = Path(name)
        repo, home = tmp / "project", tmp / "home"
        repo.mkdir()
        home.mkdir(mode=0o700)
        subprocess.run(["git", "init", "-q", str(repo)], check=True, env=git_env(tmp))
        (repo / "src" / "pkg").mkdir(parents=True)
        (repo / "src" / "pkg" / "a.py").write_text("x = 1\n")
        (repo / ".gitattributes").write_text("*.py filter=evil diff=evil merge=evil\n")
        kept, new = make_store(repo, home)
        code, _, err, _, _ = cli(repo, home, "memory", "review", "keep", kept)
        assert code == 0, err
        for _ in range(args.rounds):
            json_files(tally, repo, home, tmp, kept, new)
            hostile_git(tally, repo, home, tmp)
            hostile_modules(tally, repo, home, tmp)
    rows = []
    for name, (runs, failures, wall, cpu) in tally.rows.items():
        rows.append((name, int(runs), int(failures), f"{wall / runs * 1000:.0f} ms", f"{cpu / runs * 1000:.0f} ms"))
    from _common import table  # noqa: E402 (bench/_common.py)

    table(("case", "runs", "failures", "wall/run", "cpu/run"), rows)
    total = sum(int(r[1]) for r in rows)
    failed = sum(int(r[2]) for r in rows)
    print(f"\n{total} runs, {failed} failures, {time.perf_counter() - started:.0f} s in all")
    for note in tally.notes:
        print("  FAILED", note)


if __name__ == "__main__":
    main()
