"""A CLI that imports what it runs (issues 14 and 23).

- `memory status` and `memory list` import no agent, no model SDK, client or HTTP layer, no Textual,
  no pydantic (settings and the contract shapes validate without it), no pipeline (runner, worker,
  closing), no Memory operation they do not run, and none of the standard library's heavier
  modules that only other paths need (`logging.handlers` and its sockets, `shutil`, `tomllib`
  without a settings file, `hashlib`'s OpenSSL). One subprocess runs both commands in-process and
  reports what got loaded (platformdirs too: with AUTOPATCH_HOME set it is not needed).
- `--help`, a command's `--help`, `--version` and usage errors import no Memory code at all: no
  manager, no store, no registry, no pipeline, model client, recall or UI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("openai", "httpx2", "httpx", "textual", "pydantic", "pydantic_core", "platformdirs",
         "autopatch_tui.core.agent.chat", "autopatch_tui.core.agent.loop",
         "autopatch_tui.core.pipeline.runner", "autopatch_tui.core.pipeline.worker",
         "autopatch_tui.core.pipeline.closing", "autopatch_tui.core.pipeline.consolidation",
         "autopatch_tui.core.llm.client", "autopatch_tui.core.memory.jobs", "autopatch_tui.core.memory.history",
         "autopatch_tui.core.memory.export", "autopatch_tui.core.memory.clear", "autopatch_tui.core.recall.terms",
         "autopatch_tui.core.stores.service", "autopatch_tui.core.repair.workflows",
         "logging.handlers", "socket", "shutil", "tomllib", "_hashlib")

PROBE = """
import contextlib, io, json, sys
from autopatch_tui.cli.main import main
codes = []
for argv in (["memory", "status", "--json"], ["memory", "list", "--json"]):
    with contextlib.redirect_stdout(io.StringIO()):
        codes.append(main(argv))
print(json.dumps({"codes": codes, "loaded": [m for m in HEAVY if m in sys.modules]}))
"""


def test_status_and_list_import_only_what_they_run(repo, isolated_env) -> None:
    out = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n" + PROBE], cwd=repo, capture_output=True,
                         text=True, timeout=60, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"codes": [0, 0], "loaded": []}


NO_MEMORY = """
import contextlib, io, json, sys
from autopatch_tui.cli.main import main
err = io.StringIO()
try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(ARGV)
except SystemExit as exc:
    code = exc.code
MEMORY = ("autopatch_tui.core.manager", "autopatch_tui.core.memory", "autopatch_tui.core.stores",
          "autopatch_tui.core.pipeline", "autopatch_tui.core.recall", "autopatch_tui.core.llm",
          "autopatch_tui.core.agent", "autopatch_tui.core.repair", "autopatch_tui.core.identity", "autopatch_tui.tui")
ours = sorted(m for m in sys.modules if m.startswith(MEMORY))
print(json.dumps({"code": code, "loaded": ours, "stderr": err.getvalue()[-300:]}))
"""


def _version_supported(repo) -> bool:
    probe = subprocess.run([sys.executable, "-m", "autopatch_tui", "--version"], cwd=repo, capture_output=True,
                           text=True, timeout=60)
    return probe.returncode == 0


@pytest.mark.parametrize("argv,code", [
    (["--help"], 0), (["memory", "--help"], 0), (["memory", "status", "--help"], 0), (["ask", "--help"], 0),
    (["--version"], 0),
    (["memory", "list", "--kind", "bogus"], 2), (["memory", "nope"], 2), (["new", "--timeout", "-1"], 2),
    (["memory", "search", "   "], 2), (["memory", "status", "--repo", "/no/such/folder"], 2),
])
def test_help_version_and_usage_errors_import_no_memory_code(argv: list[str], code: int, repo, isolated_env) -> None:
    if argv == ["--version"] and not _version_supported(repo):
        pytest.skip("`--version` is another branch's (f20)")
    out = subprocess.run([sys.executable, "-c", f"ARGV = {argv!r}\n" + NO_MEMORY], cwd=repo, capture_output=True,
                         text=True, timeout=60, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == code, result
    assert result["loaded"] == [], result
    assert "Traceback" not in result["stderr"]


PROMOTE_AGAIN = """
import contextlib, io, json, sys
from autopatch_tui.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["memory", "promote", ITEM, "--yes", "--json"])
import autopatch_tui.core.repair.patch_files  # what `forget` and a write import: no socket, no OpenSSL either
print(json.dumps({"code": code, "written": json.loads(out.getvalue())["written"],
                  "loaded": [m for m in ("ctypes", "_ctypes", "socket", "_socket", "_hashlib") if m in sys.modules]}))
"""


def test_promote_with_nothing_to_write_loads_no_ctypes_socket_or_openssl(manager, repo, isolated_env) -> None:
    """`memory promote` of items the file already holds writes nothing: it loads neither `ctypes`
    (the swap's `renameat2`) nor `socket` and OpenSSL's `hashlib` (the temporary names' host tag)."""
    from tests.support.recall_seed import seed_item

    item = seed_item(manager.store.conn(), subject="tabs", statement="Indent with tabs.")
    first = subprocess.run([sys.executable, "-m", "autopatch_tui", "memory", "promote", item.logical_id, "--yes",
                            "--json"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and json.loads(first.stdout)["written"] is True, first.stderr[-300:]
    out = subprocess.run([sys.executable, "-c", f"ITEM = {item.logical_id!r}\n" + PROMOTE_AGAIN], cwd=repo,
                         capture_output=True, text=True, timeout=60)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "written": False, "loaded": []}, out.stderr[-300:]


VERSION_ONLY = """
import contextlib, io, json, sys
from autopatch_tui.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(["--version"])
    except SystemExit as exc:
        code = exc.code
loaded = sorted(m for m in sys.modules if (m.startswith("autopatch_tui.cli.") and m != "autopatch_tui.cli.main")
                or m in ("logging", "signal", "typing"))
with contextlib.redirect_stdout(io.StringIO()) as argparse_out:  # what the parser itself prints for it
    try:
        __import__("autopatch_tui.cli.main").cli.main.build_parser().parse_args(["--version"])
    except SystemExit:
        pass
print(json.dumps({"code": code, "out": out.getvalue(), "argparse": argparse_out.getvalue(), "loaded": loaded}))
"""


def test_version_builds_no_parser_and_imports_no_command_module(repo, isolated_env) -> None:
    """`--version` alone is answered before the parser is built: no command module (chat, memory,
    stores, review, the after-answer check, the output and signal helpers) is imported, nor
    `logging`, `signal` or `typing` (none in the floor), and the line is the one argparse prints."""
    out = subprocess.run([sys.executable, "-c", VERSION_ONLY], cwd=repo, capture_output=True, text=True, timeout=60,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0 and result["loaded"] == [], result
    assert result["out"] == result["argparse"] and result["out"].startswith("autopatch-tui "), result
