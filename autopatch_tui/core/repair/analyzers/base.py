"""What every analyzer adapter shares: the protocol the scanner calls, the finding an analyzer
reports, and `run_tool` — the one way an adapter runs its tool.

An adapter runs a real tool as a subprocess with machine-readable output, maps the output to
`ToolFinding`s (repository-relative paths) and raises `AnalyzerError` when the tool is missing,
crashes, times out, prints too much or prints something unreadable. The scanner turns that error
into a line of the audit summary and goes on with the other analyzers.

`run_tool` bounds the run in time (the whole process group is killed at the deadline), in memory
(`RLIMIT_AS`, set in the child by a small exec step before it becomes the tool: an allocation past
it fails, and the tool ends with an error instead of taking the machine) and in output (stdout goes to a temporary
file whose size is watched while the tool runs). The child gets no standard input and an
environment without this app's or a model provider's settings (no API key reaches an analyzer)."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.tool_path import absolute_path, which

DEFAULT_TIMEOUT_SECONDS = 120.0
MAX_OUTPUT_BYTES = 32_000_000
MAX_ARGV_CHARS = 400_000  # file arguments per run (ARG_MAX is 2 MB on Linux); more run in chunks
_STDERR_TAIL_BYTES = 4_096
_MAX_REASON_CHARS = 200
_POLL_SECONDS = 0.02
_PRIVATE_ENV = ("AUTOPATCH_", "OPENAI_", "ANTHROPIC_", "AZURE_OPENAI_")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

ERROR, WARNING, INFO = "error", "warning", "info"


class AnalyzerError(AutopatchError):
    """The analyzer could not give a result; the message names the tool and the cause (safe to show)."""


@dataclass(frozen=True)
class ToolFinding:
    tool: str  # "ruff" | "semgrep"
    rule_id: str  # the tool's own rule ID: "S324", "java.weak-md5"
    severity: str  # ERROR | WARNING | INFO
    message: str
    path: str  # repository-relative, POSIX separators
    line: int
    column: int = 1
    end_line: int = 0
    end_column: int = 0
    url: str = ""  # the rule's documentation, when the tool gives one


@dataclass
class Analysis:
    findings: list[ToolFinding] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)  # files the tool could not parse or analyze
    notes: list[str] = field(default_factory=list)  # one line each for the audit summary (safe, escaped)


class Analyzer(Protocol):
    name: str
    languages: frozenset[str]  # keys of `languages.SUFFIXES` values

    def analyze(self, repo: Path, files: Sequence[str]) -> Analysis:
        """Analyze `files` (repository-relative, already confined) with the real tool; raises
        `AnalyzerError`."""
        ...


@dataclass(frozen=True)
class ToolOutput:
    returncode: int
    stdout: bytes
    stderr: str  # the last line of what the tool wrote to stderr, cleaned and bounded


def tool_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an analyzer: ours without app or provider settings, plus `extra`; a Python
    the tool starts (`-m`, `-c`) gets no working-folder entry on its import path, nor the tool one
    on its PATH (`core.tool_path`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_PRIVATE_ENV)}
    env["PYTHONSAFEPATH"] = "1"  # a Python the tool starts never imports from the repository it runs in
    env.update(extra or {})
    env["PATH"] = absolute_path(env.get("PATH"))  # no entry that means the repository it runs in
    return env


def reason(text: str) -> str:
    """One clean, bounded line of a tool's message."""
    lines = [" ".join(_ANSI.sub("", ln).split()) for ln in text.splitlines()]
    last = next((ln for ln in reversed(lines) if ln), "")
    return last[:_MAX_REASON_CHARS]


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


# Run first in the child, then replaced by the tool (same process, same group): it sets the limit
# and executes the tool. A small exec step instead of `preexec_fn`, which is not safe in a process
# with threads (the app's workers) — it runs Python code between fork and exec.
_LIMIT_AND_EXEC = (
    "import os, resource, sys\n"
    "n = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (n, n))\n"
    "try:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "except OSError as e:\n"
    "    sys.stderr.write('cannot start: ' + (e.strerror or type(e).__name__) + '\\n')\n"
    "    sys.exit(127)\n"
)


def limited(argv: Sequence[str], limit: int, env: Mapping[str, str]) -> list[str]:
    """`argv` run under an address-space limit of `limit` bytes (at most the hard limit this
    process has); inherited by the tool's own children. `FileNotFoundError` when the tool is not
    there (the caller says it is not installed)."""
    tool = argv[0] if os.sep in argv[0] else which(argv[0], env.get("PATH"))
    if tool is None or not os.path.isfile(tool):
        raise FileNotFoundError(argv[0])
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    return [sys.executable, "-I", "-S", "-c", _LIMIT_AND_EXEC, str(cap), tool, *argv[1:]]


def run_tool(name: str, argv: Sequence[str], *, cwd: Path, timeout: float, env: Mapping[str, str] | None = None,
             max_output: int = MAX_OUTPUT_BYTES, memory_limit: int | None = None) -> ToolOutput:
    child_env = dict(env) if env is not None else tool_env()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            command = limited(argv, memory_limit, child_env) if memory_limit else list(argv)
            proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=child_env, start_new_session=True)
        except FileNotFoundError:
            raise AnalyzerError(f"{name} is not installed ({argv[0]} was not found)") from None
        except OSError as exc:
            raise AnalyzerError(f"{name} could not start ({exc.strerror or type(exc).__name__})") from None
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None:
                if time.monotonic() >= deadline:
                    raise AnalyzerError(f"{name} timed out after {timeout:g} s")
                if os.fstat(out.fileno()).st_size > max_output:
                    raise AnalyzerError(f"{name} printed more than {max_output} bytes of output")
                time.sleep(_POLL_SECONDS)
        except BaseException:
            _kill(proc)
            raise
        size = os.fstat(out.fileno()).st_size
        if size > max_output:
            raise AnalyzerError(f"{name} printed more than {max_output} bytes of output")
        out.seek(0)
        stdout = out.read()
        err_size = os.fstat(err.fileno()).st_size
        err.seek(max(0, err_size - _STDERR_TAIL_BYTES))
        stderr = reason(err.read().decode("utf-8", errors="replace"))
    return ToolOutput(proc.returncode, stdout, stderr)


def failed(name: str, output: ToolOutput, memory_limit: int | None = None) -> AnalyzerError:
    code = output.returncode
    how = f"was killed by signal {-code}" if code < 0 else f"failed (exit {code})"
    if memory_limit and _out_of_memory(output.stderr):
        return AnalyzerError(f"{name} ran out of memory (its limit is {memory_limit >> 20} MB)"
                             + (f": {output.stderr}" if output.stderr else ""))
    return AnalyzerError(f"{name} {how}" + (f": {output.stderr}" if output.stderr else ""))


def _out_of_memory(stderr: str) -> bool:
    text = stderr.lower()
    return any(w in text for w in ("memory allocation", "out of memory", "cannot allocate", "memoryerror",
                                   "failed to allocate"))


def file_args(files: Sequence[str], base: Path | None = None) -> Iterator[list[str]]:
    """The file arguments in chunks of at most MAX_ARGV_CHARS; each as `./path` (or, with `base`, as
    the absolute `base/path`), so a file named `-x.py` is never read as an option."""
    chunk: list[str] = []
    size = 0
    for f in files:
        arg = str(base / f) if base is not None else f"./{f}"
        if chunk and size + len(arg) + 1 > MAX_ARGV_CHARS:
            yield chunk
            chunk, size = [], 0
        chunk.append(arg)
        size += len(arg) + 1
    if chunk:
        yield chunk


def relative(repo: Path, path: str) -> str | None:
    """A path the tool printed (absolute, or relative to the repository) as repository-relative
    POSIX text; None when it is outside the repository."""
    p = Path(path)
    p = p if p.is_absolute() else repo / p
    try:
        return Path(os.path.normpath(p)).relative_to(repo).as_posix()
    except ValueError:
        return None


def positive(value: object, default: int = 1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
