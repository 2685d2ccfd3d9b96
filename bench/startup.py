"""Startup and screen-open times of the app, plus typing latency while the background worker
processes jobs.

Prints (issue 23: every figure beside its floor, measured in the same run, interleaved):
- (issue 33) the CLI against the standard library it cannot avoid, `python -c "import argparse,
  json, sqlite3, pathlib"`: `memory status --json` and `memory list --json` on an empty store
  (target <= 2x) and `--help`, `--version` (target <= 1.5x), wall and CPU ratios, then the top 10
  cumulative import costs (`-X importtime`, least of 3 runs) of the floor and of each command
  (`--only-cli-floor`: only this);
- the floors: `python -c pass`, `python -c "import sqlite3"` (whole process, wall and CPU);
- `memory status --json` and `memory list --json`, whole process, on an empty store, 10k turns /
  1k items, and 100k items (the recall benchmark's store, built through the Store's writer and
  cached by bench/recall.py), interleaved round by round with the floors; ratios: the small stores
  against `import sqlite3` (target <= 3x), 100k against the empty store (target <= 1.5x);
- the first frame from process start in a real pseudo-terminal (`pty_start.py`) of a minimal
  Textual app (Header, Footer, Static: `minimal_textual.py`) and of the app on the same three
  stores, interleaved; ratios: the app against the minimal app (target <= 1.5x), 100k against the
  empty store (target <= 1.5x);
- (unless `--only-startup`) with a model configured and 120 extraction jobs pending, the first
  frame and a typed key's echo, as a user who comes back to the app finds it;
- headless (Textual's test driver, imports already done): first frame and interactive, the first
  and second open of every screen on the 10k-turn store (target: first open <= 300 ms), wall and CPU;
  a screen is open when it is current, its workers are done and the app is idle (its first frame
  with the data); the app gets the launched process's GC set-up (`freeze_gc_after_start`, as
  `launch_app` sets it);
- typing in a real pseudo-terminal (`pty_typing.py`): key written -> key drawn while the worker
  processes jobs against a model server in another process, beside the same app with nothing to
  process (target: within 16 ms).
`--tree PATH` runs the CLI and the app from another source tree (an older commit: "before" figures
in the same method). Times on a shared machine are noisy: compare ratios measured in one run.
Run: .venv/bin/python bench/startup.py [--runs 10] [--frame-runs 5] [--typing-runs 3] [--tree PATH]
     [--only-startup] [--only-cli-floor]"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pty_start  # noqa: E402

from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.memory.item_writes import insert_revision  # noqa: E402
from autopatch_tui.core.memory.items import ItemFields  # noqa: E402
from autopatch_tui.core.memory.sqlite import write_txn  # noqa: E402
from autopatch_tui.core.settings import load_settings  # noqa: E402
from autopatch_tui.tui.app import AutopatchApp  # noqa: E402
from autopatch_tui.tui.services import Services  # noqa: E402
from tests.support.llm_stub import StubLLMServer  # noqa: E402

SIZE = (120, 40)
WORDS = ("cache", "schema", "retry", "lease", "parser", "config", "logging", "tests", "build", "deploy", "index",
         "query", "thread", "worker", "export", "layout", "theme", "history", "memory", "budget")


def make_repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def seed(mgr: MemoryManager, turns: int, items: int) -> None:
    conn = mgr.store.conn()
    thread = mgr.active_thread_id()
    now = time.time()
    with write_txn(conn):
        conn.executemany(
            "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, assistant_text, created_at, ended_at)"
            " VALUES (?, ?, ?, 'general_chat', 'completed', ?, ?, ?, ?)",
            [(f"turn-{n:026d}", thread, n, f"question {n} about {WORDS[n % 20]}",
              f"answer {n}: use the {WORDS[(n * 7) % 20]}", now + n, now + n) for n in range(1, turns + 1)])
        for n in range(items):
            w = WORDS[n % 20]
            insert_revision(conn, ItemFields("project_decision", f"{w} decision {n}", f"We decided {n} on {w}.",
                                             "", "soft", "explicit", "on_match", (), (w,), (w,)),
                            logical_id=None, revision=1, now=now)


async def wait_workers(app: AutopatchApp) -> None:
    for _ in range(400):
        await asyncio.sleep(0.005)
        if not any(w.is_running for w in app.workers):
            return


SCREENS = (("history", "f3"), ("memory", "f4"), ("jobs", "f5"), ("stores", "f6"))


async def startup(repo: Path, settings) -> dict[str, float]:
    t0 = time.perf_counter()
    c0 = time.process_time()
    app = AutopatchApp(Services(MemoryManager.open(repo, settings), settings))
    app.freeze_gc_after_start = True  # as `launch_app` sets it for the real process (tui/gc_tuning.py)
    out: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        out["first_frame_ms"] = (time.perf_counter() - t0) * 1000
        out["first_frame_cpu_ms"] = (time.process_time() - c0) * 1000
        await wait_workers(app)
        await pilot.pause()
        out["interactive_ms"] = (time.perf_counter() - t0) * 1000
        for name, key in (*SCREENS, *((f"{n}_again", k) for n, k in SCREENS)):
            await pilot.press("f2")
            await pilot.pause()
            t = time.perf_counter()
            c = time.process_time()
            await pilot.press(key)
            while app.screen.name != name.removesuffix("_again"):
                await asyncio.sleep(0.002)
            await wait_workers(app)
            await pilot.pause()
            out[f"open_{name}_ms"] = (time.perf_counter() - t) * 1000
            out[f"open_{name}_cpu_ms"] = (time.process_time() - c) * 1000
    return out


PENDING_TURNS = 120


def seed_pending(repo: Path, settings, *, processed: bool = False, turns: int = PENDING_TURNS, items: int = 0) -> Path:
    """`turns` turns in the active thread (on a store of `items` Memory items), their extraction
    jobs pending — or, `processed`, already run (against a quick stub in this process), so the app
    opens on the same chat log with nothing for its worker to do."""
    mgr = MemoryManager.open(repo, settings)
    if items:
        seed(mgr, 0, items)
    for n in range(turns):
        h = mgr.begin_turn(f"note {n}: we always use tabs in module {n}")
        mgr.complete_turn(h, "ok")
    mgr.close()
    if processed:
        stub = StubLLMServer()
        stub.default("extraction", {"thread_checkpoint": "notes", "candidates": []})
        try:
            quick = MemoryManager.open(repo, settings.with_overrides(llm_base_url=stub.base_url))
            while quick.runner.step() is not None:
                pass
            quick.close()
        finally:
            stub.close()
    return repo


def _slow_extraction(req):  # a model that takes a while: the worker is busy in the background
    time.sleep(0.05)
    body = json.loads(req.body["messages"][-1]["content"])
    return {"thread_checkpoint": f"{len(body['turns'])} turns", "candidates": []}


def _slow_extraction_with_candidates(req):  # one preference per turn, quoting it: consolidation follows
    time.sleep(0.05)
    body = json.loads(req.body["messages"][-1]["content"])
    cands = []
    for t in body["turns"]:
        n = t["user"].split()[1].rstrip(":")
        statement = f"Always use tabs in module {n}."
        cands.append({"kind": "user_preference", "subject": f"indentation in module {n}", "statement": statement,
                      "content": statement, "strength": "soft", "origin": "explicit", "recall_mode": "on_match",
                      "applies_to_paths": [], "aliases": [], "keywords": ["tabs"],
                      "sources": [{"turn_id": t["turn_id"], "role": "user", "quote": t["user"]}]})
    return {"thread_checkpoint": f"{len(body['turns'])} turns", "candidates": cands}


def _slow_consolidation(req):  # creates one item per candidate
    from tests.support.pipeline_helpers import create_all

    time.sleep(0.05)
    return create_all(req)


STUB_PROCESS = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import startup
from tests.support.llm_stub import StubLLMServer
stub = StubLLMServer()
if sys.argv[1:] == ["candidates"]:
    stub.default("extraction", startup._slow_extraction_with_candidates)
    stub.default("consolidation", startup._slow_consolidation)
else:
    stub.default("extraction", startup._slow_extraction)
print(stub.base_url, flush=True)
sys.stdin.read()  # until the benchmark closes our stdin
stub.close()
"""


def model_server(*args: str) -> tuple[subprocess.Popen, str]:
    """The model server in another process, as a real endpoint is; each reply takes 50 ms."""
    server = subprocess.Popen([sys.executable, "-c", STUB_PROCESS, *args], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    return server, (server.stdout.readline().strip() if server.stdout else "")


def stop_server(server: subprocess.Popen) -> None:
    if server.stdin:
        server.stdin.close()
    server.wait(10)


def model_env(url: str) -> dict[str, str]:
    return {"AUTOPATCH_LLM_BASE_URL": url, "AUTOPATCH_LLM_MODEL": "gpt-4o", "AUTOPATCH_LLM_API_KEY": "sk-bench",
            "AUTOPATCH_MEMORY_EXTRACTION_MAX_WAIT_SECONDS": "0"}


def print_typing(title: str, t: dict, runs: int) -> None:
    busy, idle = t["busy"], t["idle"]
    print(f"typing in a pseudo-terminal, key written -> key drawn, {busy['n']} keys per case over {runs} fresh"
          f" processes each, one key per 50 ms; {title} ({t['jobs_done'][0]}-{t['jobs_done'][1]} extraction jobs"
          " done when a busy run's app had exited):")
    print(f"  worker idle (jobs already processed): p50 {idle['p50']:5.1f} ms, p95 {idle['p95']:5.1f} ms,"
          f" max {idle['max']:5.1f} ms")
    print(f"  worker busy (jobs pending, 50 ms model): p50 {busy['p50']:5.1f} ms, p95 {busy['p95']:5.1f} ms,"
          f" max {busy['max']:5.1f} ms")
    print(f"  worker cost: p50 {busy['p50'] - idle['p50']:+.1f} ms, p95 {busy['p95'] - idle['p95']:+.1f} ms"
          "   [target: within one frame, <= 16 ms]")


FLOOR_PASS, FLOOR_SQLITE = "python -c pass", 'python -c "import sqlite3"'
# the standard library any CLI built like this one imports before it runs anything of its own
STDLIB = "sqlite3, argparse, logging, dataclasses, pathlib, json, typing, re, threading, signal"
FLOOR_STDLIB = "python -c \"import <its standard library>\""
SIZES = (("empty store", "empty"), ("10k turns / 1k items", "big"), ("100k items", "huge"))
COMMANDS = (("status", ["memory", "status", "--json"]), ("list", ["memory", "list", "--json"]))
RUN_FOLDER: list[Path] = []  # removed when the run ends


def huge_store(base: Path, home: Path) -> Path:
    """A checkout holding a copy of the recall benchmark's 100k-item store (built through the
    Store's own writer by bench/recall.py, and reused from its cache while its inputs are unchanged)."""
    import shutil

    import recall

    cache = Path(tempfile.gettempdir()) / "autopatch-recall-bench" / recall._cache_key()
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["AUTOPATCH_HOME"] = str(home)
    built, _threads, secs, reused = recall._store(cache, 100_000, 2, True)
    print(f"100k-item store {'reused' if reused else 'built'} ({secs:.0f} s to build), copied for this run", flush=True)
    repo = make_repo(base / "huge")
    state = repo / ".autopatch-j"
    state.mkdir(mode=0o700)
    shutil.copyfile(built / ".autopatch-j" / "memory.db", state / "memory.db")
    os.chmod(state / "memory.db", 0o600)
    return repo


def print_cli(times: dict[str, dict], runs: int) -> None:
    sqlite_floor = times[FLOOR_SQLITE]["wall_median"]
    print(f"CLI, whole process (wall and CPU of fresh processes, median of {runs}, interleaved round by round"
          " with the floors, after one warm-up round):")
    for label in (FLOOR_PASS, FLOOR_SQLITE, FLOOR_STDLIB):
        r = times[label]
        extra = f"   {r['wall_median'] / sqlite_floor:5.2f}x import sqlite3 ({STDLIB})" if label == FLOOR_STDLIB else ""
        print(f"  {label:<48} wall {r['wall_median']:6.0f} ms  CPU {r['cpu_median']:6.0f} ms{extra}")
    for name, _argv in COMMANDS:
        small = times[f"memory {name} --json, empty store"]["wall_median"]
        for size, _key in SIZES:
            r = times[f"memory {name} --json, {size}"]
            ratio = f"{r['wall_median'] / sqlite_floor:5.2f}x import sqlite3 [target <= 3x]"
            if size == "100k items":
                ratio = f"{r['wall_median'] / small:5.2f}x the empty store [target <= 1.5x]"
            print(f"  {'memory ' + name + ' --json, ' + size:<48} wall {r['wall_median']:6.0f} ms  CPU"
                  f" {r['cpu_median']:6.0f} ms   {ratio}")


def print_frames(frames: dict[str, dict], runs: int) -> None:
    floor = frames["minimal Textual app"]["first_frame_ms"]
    empty = frames["app, empty store"]["first_frame_ms"]
    print(f"first frame from process start in a pseudo-terminal (120x40), median of {runs} fresh processes,"
          " interleaved round by round, after one warm-up round:")
    for label, r in frames.items():
        ratio = ""
        if label.startswith("app"):
            ratio = f"   {r['first_frame_ms'] / floor:5.2f}x minimal Textual [target <= 1.5x]"
        if label == "app, 100k items":
            ratio += f", {r['first_frame_ms'] / empty:5.2f}x the empty store [target <= 1.5x]"
        print(f"  {label:<24} {r['first_frame_ms']:6.0f} ms  (process CPU to exit {r['cpu_ms']:5.0f} ms){ratio}")


# issue 33: the floor is the standard library a CLI cannot avoid
CLI_FLOOR = 'python -c "import argparse, json, sqlite3, pathlib"'
CLI_FLOOR_ARGV = ["-c", "import argparse, json, sqlite3, pathlib"]
FLOOR_COMMANDS = (  # (label, argv after `python -m autopatch_tui`, target ratio to CLI_FLOOR)
    ("memory status --json, empty store", ["memory", "status", "--json"], 2.0),
    ("memory list --json, empty store", ["memory", "list", "--json"], 2.0),
    ("--help", ["--help"], 1.5),
    ("--version", ["--version"], 1.5),
)
TOP_IMPORTS = 10


def top_imports(argv: list[str], cwd: Path, env: dict[str, str], n: int = TOP_IMPORTS,
                runs: int = 3) -> list[tuple[int, str]]:
    """The `n` largest cumulative import times (`-X importtime`, microseconds) of `argv` (a Python
    command line without the interpreter), top-level and nested alike: each module's least of `runs`
    runs (a loaded machine inflates single readings)."""
    least: dict[str, int] = {}
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=120)
        for line in proc.stderr.splitlines():
            if not line.startswith("import time:") or "|" not in line:
                continue
            _self, cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|", 2))
            if cumulative.isdigit():
                least[name] = min(int(cumulative), least.get(name, int(cumulative)))
    return sorted(((us, name) for name, us in least.items()), reverse=True)[:n]


def cli_floor(base: Path, empty: Path, runs: int) -> None:
    """Issue 33: `memory status`/`memory list --json` on an empty store (target <= 2x) and
    `--help`/`--version` (target <= 1.5x) against the standard library a CLI cannot avoid, wall and
    CPU, interleaved in one run; then the top import costs of each."""
    env = pty_start.cli_env(base / "home")
    py = sys.executable
    cases = [(CLI_FLOOR, [py, *CLI_FLOOR_ARGV], base, env)]
    cases += [(label, [py, "-m", "autopatch_tui", *argv], empty, env) for label, argv, _ in FLOOR_COMMANDS]
    times = pty_start.process_times(cases, runs)
    floor = times[CLI_FLOOR]
    print(f"CLI against its floor {CLI_FLOOR} (whole process, median of {runs}, interleaved round by round,"
          " after one warm-up round; CPU = the child's user + system time):")
    print(f"  {CLI_FLOOR:<48} wall {floor['wall_median']:6.0f} ms  CPU {floor['cpu_median']:6.0f} ms")
    for label, _argv, target in FLOOR_COMMANDS:
        r = times[label]
        wall_x, cpu_x = r["wall_median"] / floor["wall_median"], r["cpu_median"] / floor["cpu_median"]
        ok = "met" if max(wall_x, cpu_x) <= target else "MISSED"
        print(f"  {label:<48} wall {r['wall_median']:6.0f} ms  CPU {r['cpu_median']:6.0f} ms   {wall_x:4.2f}x wall,"
              f" {cpu_x:4.2f}x CPU [target <= {target}x: {ok}]")
    print(f"top {TOP_IMPORTS} import costs (-X importtime, cumulative, least of 3 runs; nested modules included):")
    for label, argv in (("floor", CLI_FLOOR_ARGV), *((label, ["-m", "autopatch_tui", *argv])
                                                      for label, argv, _ in FLOOR_COMMANDS)):
        top = top_imports(argv, base if label == "floor" else empty, env)
        print(f"  {label}: " + ", ".join(f"{name} {us / 1000:.1f}" for us, name in top) + " (ms)")


def main() -> None:
    import argparse

    import pty_typing

    ap = argparse.ArgumentParser(description="app start-up, screen opens, typing latency")
    ap.add_argument("--runs", type=int, default=10, help="fresh processes per CLI command and floor (median)")
    ap.add_argument("--frame-runs", type=int, default=5, help="fresh processes per first-frame case (median)")
    ap.add_argument("--typing-runs", type=int, default=3, help="fresh processes per typing case (busy, idle)")
    ap.add_argument("--tree", type=Path, default=None,
                    help="run the CLI and the app from this source tree (e.g. an older commit, for 'before'"
                         " figures); the stores are built with this one")
    ap.add_argument("--only-startup", action="store_true", help="CLI and first frames only (no screens, no typing)")
    ap.add_argument("--only-cli-floor", action="store_true",
                    help="only the CLI against its standard-library floor, with the top import costs (issue 33)")
    args = ap.parse_args()
    if args.tree is not None:
        pty_start.TREE = args.tree.resolve()
    print(f"code under test: {pty_start.TREE}; load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    base = Path(tempfile.mkdtemp(prefix="autopatch-bench-"))
    RUN_FOLDER.append(base)
    env = {"AUTOPATCH_HOME": str(base / "home")}
    settings = load_settings(env)
    empty = make_repo(base / "empty")
    MemoryManager.open(empty, settings).close()  # the store exists: `status`/`list` read it, never create it
    cli_floor(base, empty, args.runs)
    if args.only_cli_floor:
        return
    big = make_repo(base / "big")
    mgr = MemoryManager.open(big, settings)
    seed(mgr, 10_000, 1_000)
    mgr.close()
    repos = {"empty": empty, "big": big, "huge": huge_store(base, base / "home")}
    cli_env = pty_start.cli_env(base / "home")
    py = sys.executable
    cases = [(FLOOR_PASS, [py, "-c", "pass"], base, cli_env), (FLOOR_SQLITE, [py, "-c", "import sqlite3"], base, cli_env),
             (FLOOR_STDLIB, [py, "-c", f"import {STDLIB}"], base, cli_env)]
    for name, argv in COMMANDS:
        for size, key in SIZES:
            cases.append((f"memory {name} --json, {size}", [py, "-m", "autopatch_tui", *argv], repos[key], cli_env))
    print_cli(pty_start.process_times(cases, args.runs), args.runs)
    app_env = pty_start.app_env(base / "home")
    frame_cases = [("minimal Textual app", base, app_env, pty_start.MINIMAL_ARGV)]
    frame_cases += [(f"app, {size}", repos[key], app_env, pty_start.APP_ARGV) for size, key in SIZES]
    print_frames(pty_start.interleaved_frames(frame_cases, args.frame_runs), args.frame_runs)
    print(f"load average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.only_startup:
        return
    rows = []
    for label, repo in (("empty store", empty), ("10k turns / 1k items", big)):
        runs = [asyncio.run(startup(repo, settings)) for _ in range(3)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        rows.append((label, best))
    print("headless (best of 3; imports already done): wall ms (CPU ms)")
    for label, r in rows:
        print(f"  {label:<22} first frame {r['first_frame_ms']:.0f} ({r['first_frame_cpu_ms']:.0f}),"
              f" interactive {r['interactive_ms']:.0f}")
        print("    first open:  " + ", ".join(f"{n} {r[f'open_{n}_ms']:.0f} ({r[f'open_{n}_cpu_ms']:.0f})"
                                               for n, _ in SCREENS) + "   [target <= 300 ms each]")
        print("    second open: " + ", ".join(f"{n} {r[f'open_{n}_again_ms']:.0f} ({r[f'open_{n}_again_cpu_ms']:.0f})"
                                               for n, _ in SCREENS))

    server, url = model_server()
    try:
        model = model_env(url)
        model_settings = load_settings({**env, **model})
        pending = seed_pending(make_repo(base / "pending"), model_settings)
        print(f"from process start in a pseudo-terminal, with a model configured and {PENDING_TURNS} extraction jobs"
              f" pending (median of {args.frame_runs}):")
        r = pty_start.measure(pending, base / "home", runs=args.frame_runs, extra_env=model)
        print(f"  first frame {r['first_frame_ms']:6.0f} ms  key echoed {r.get('key_echo_ms', float('nan')):5.0f} ms"
              f" after it  process CPU to exit {r['cpu_ms']:5.0f} ms   [target: first frame <= 700 ms]")

        def typing_repo(name: str, processed: bool) -> Path:
            return seed_pending(make_repo(base / f"light-{name}"), model_settings, processed=processed)

        t = pty_typing.measure(typing_repo, pty_start.app_env(base / "home", model), runs=args.typing_runs)
    finally:
        stop_server(server)
    print_typing(f"{PENDING_TURNS} extraction jobs, no candidates", t, args.typing_runs)
    server, url = model_server("candidates")
    try:
        model = model_env(url)
        model_settings = load_settings({**env, **model})

        def heavy_repo(name: str, processed: bool) -> Path:
            return seed_pending(make_repo(base / f"heavy-{name}"), model_settings, processed=processed, turns=60,
                                items=10_000)

        t = pty_typing.measure(heavy_repo, pty_start.app_env(base / "home", model), runs=args.typing_runs)
    finally:
        stop_server(server)
    print_typing("60 turns, one candidate each, extraction then consolidation on a 10k-item store", t,
                 args.typing_runs)


if __name__ == "__main__":
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    try:
        main()
    finally:  # this run's stores (a copy of the 100k store is 354 MB); bench/recall.py's cache stays
        if RUN_FOLDER:
            import shutil

            shutil.rmtree(RUN_FOLDER[0], ignore_errors=True)
