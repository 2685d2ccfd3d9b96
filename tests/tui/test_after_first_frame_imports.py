"""After the first frame the app's main thread stays free for keys (issue 33, item 2): starting
the Memory worker (the app does it right after its first frame) imports nothing, and the worker
builds the pipeline — pydantic, the model SDK, the pipeline's modules, ~0.5 s of CPU that held the
main thread and delayed the first typed key by 300-750 ms — only once a job is open, in its own
thread. One fresh process per case reports which thread imported what."""

from __future__ import annotations

import json
import subprocess
import sys

PIPELINE = ("pydantic", "openai", "autopatch_tui.core.pipeline.runner", "autopatch_tui.core.pipeline.contracts")

PROBE = """
import json, sys, threading, importlib.abc
from pathlib import Path
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
settings = load_settings()
mgr = MemoryManager.open(Path.cwd(), settings)
if PENDING:
    h = mgr.begin_turn("we always use tabs")
    mgr.complete_turn(h, "ok")
seen = {}
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in WATCH:
            seen.setdefault(name, threading.current_thread().name)
        return None
sys.meta_path.insert(0, Spy())
idle = threading.Event()
mgr.start_background()  # what the app calls on its main thread right after the first frame
main_thread = sorted(n for n in WATCH if n in sys.modules)
worker = mgr.worker
wait = worker._wake.wait
def waiting(timeout=None):  # the worker's loop reached its idle wait: its first round is over
    idle.set()
    return wait(timeout)
worker._wake.wait = waiting
worker.wake()
idle.wait(60)
out = {"after_start": main_thread, "threads": seen, "runner_built": mgr._runner is not None}
mgr.close()
print(json.dumps(out))
"""


def probe(repo, pending: bool) -> dict:
    code = f"WATCH = {PIPELINE!r}\nPENDING = {pending!r}\n" + PROBE
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=120,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_starting_the_worker_imports_no_pipeline_and_an_idle_store_never_builds_it(repo, isolated_env) -> None:
    out = probe(repo, pending=False)
    assert out["after_start"] == []  # the main thread returns from start_background with nothing imported
    assert out["threads"] == {}  # nothing to process: nobody imports the pipeline at all
    assert out["runner_built"] is False


def test_an_open_job_builds_the_pipeline_in_the_worker_thread_not_the_callers(repo, isolated_env) -> None:
    out = probe(repo, pending=True)
    assert out["after_start"] == []
    assert out["runner_built"] is True  # the open job is worked on
    assert out["threads"]["autopatch_tui.core.pipeline.runner"] == "memory-worker"


SESSION_PROBE = """
import json, sys
from pathlib import Path
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
from autopatch_tui.tui.services import Services
settings = load_settings()
services = Services(MemoryManager.open(Path.cwd(), settings), settings)
note = services.start_session()  # the chat screen's worker, right after the first frame
print(json.dumps({"note": note, "loaded": sorted(m for m in WATCH if m in sys.modules)}))
services.manager.close()
"""


def test_a_session_start_without_a_saved_audit_imports_no_pydantic(repo, isolated_env) -> None:
    """pydantic (~0.3 s of CPU with its plugin scan) was imported to learn that there is no
    audit.json; a thread importing it competes with the first keys for the GIL."""
    watch = ("pydantic", "autopatch_tui.core.repair.drafts_file")
    out = subprocess.run([sys.executable, "-c", f"WATCH = {watch!r}\n" + SESSION_PROBE], cwd=repo,
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"note": "", "loaded": []}


def test_a_saved_audit_of_an_ended_thread_is_still_read_and_closed(repo, isolated_env) -> None:
    """The shortcut is only for a missing file: a saved audit (here one of another thread) is
    still loaded, validated and ended, with its note."""
    from autopatch_tui.core.paths import StorePaths

    state = StorePaths(repo).state_dir
    state.mkdir(mode=0o700, exist_ok=True)
    saved = state / "audit.json"
    saved.write_text("{not json")
    saved.chmod(0o600)
    watch = ("pydantic",)
    out = subprocess.run([sys.executable, "-c", f"WATCH = {watch!r}\n" + SESSION_PROBE], cwd=repo,
                         capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["loaded"] == ["pydantic"]
    assert got["note"]  # the unreadable file is reported, not skipped


EXIT_PROBE = """
import json, sys
from pathlib import Path
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.pipeline.exit_once import ExitFlush
from autopatch_tui.core.settings import load_settings
mgr = MemoryManager.open(Path.cwd(), load_settings())
mgr.start_background()
if PENDING:
    h = mgr.begin_turn("we always use tabs")
    mgr.complete_turn(h, "ok")
outcome = ExitFlush(lambda: mgr).run("ctrl+q")  # every exit path of the app flushes through this
mgr.close()
r = outcome.result
print(json.dumps({"loaded": sorted(m for m in WATCH if m in sys.modules), "pending": r.pending,
                  "summary": (Path.cwd() / ".autopatch-j" / "memory_summary.md").exists()}))
"""


def _exit(repo, pending: bool) -> dict:
    code = f"WATCH = {PIPELINE!r}\nPENDING = {pending!r}\n" + EXIT_PROBE
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=120,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_quitting_a_session_with_nothing_to_flush_builds_no_pipeline(repo, isolated_env) -> None:
    _exit(repo, pending=False)  # the first session writes the summary
    out = _exit(repo, pending=False)
    assert out == {"loaded": [], "pending": 0, "summary": True}


def test_quitting_with_an_open_job_still_flushes_it(repo, isolated_env) -> None:
    _exit(repo, pending=False)
    out = _exit(repo, pending=True)  # no model: the job stays pending, and the flush counts it
    assert "autopatch_tui.core.pipeline.runner" in out["loaded"]
    assert out["pending"] == 1
