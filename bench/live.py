"""A scripted session against whatever model endpoint is configured (opt-in: `make live`).

    .venv/bin/python bench/live.py --run [--keep]

Reads the ordinary settings (AUTOPATCH_LLM_* in the environment or config.toml), works in a
temporary repository and a temporary AUTOPATCH_HOME (your stores are not touched), and prints what
worked: a plain chat turn (streamed?), a `code_explain` turn on a scoped file (tool loop, or the
files-in-prompt fallback), the Memory jobs those turns produced (JSON mode accepted or dropped,
outcomes and failure rules), and every model call with its wall time. Nothing is asserted; CI never
runs it (without `--run` it only says how to). Figures are measured in this run only.

Privacy: prints no endpoint, key, prompt or reply — only the answers' lengths and the first words
of the chat answer, which the configured model itself wrote for this scripted prompt.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import make_repo, table, temp_dir  # noqa: E402

from autopatch_tui.core.agent.chat import ChatService  # noqa: E402
from autopatch_tui.core.agent.loop import AgentCallbacks  # noqa: E402
from autopatch_tui.core.errors import AutopatchError  # noqa: E402
from autopatch_tui.core.llm.endpoint import ENDPOINTS  # noqa: E402
from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.settings import load_settings  # noqa: E402

APP = '''"""A tiny module for the live session."""


def retry_delay(attempt: int, base: float = 0.5, cap: float = 8.0) -> float:
    """Exponential backoff: base * 2**attempt, never more than cap."""
    return min(cap, base * (2 ** attempt))
'''


class CallLog:
    """Wraps the client's two call methods: task, wall seconds, finish reason, outcome."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, str]] = []

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            outcome = "error"
            try:
                completion = fn(*args, **kwargs)
                outcome = completion.finish_reason or "?"
                return completion
            except AutopatchError as exc:
                outcome = getattr(exc, "category", type(exc).__name__)
                raise
            finally:
                self.rows.append((kwargs.get("task", "?"), time.perf_counter() - wall, time.process_time() - cpu,
                                  outcome))
        return timed


def step(name: str, results: list[tuple[str, str, str]], fn: Callable[[], str]) -> None:
    wall = time.perf_counter()
    try:
        detail = fn()
        verdict = "ok"
    except AutopatchError as exc:
        verdict, detail = "FAILED", f"{type(exc).__name__}: {exc}"
    results.append((name, verdict, f"{detail} ({time.perf_counter() - wall:.1f} s)"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="really call the configured endpoint")
    parser.add_argument("--keep", action="store_true", help="print the temporary repository path and keep it")
    args = parser.parse_args()
    if not args.run:
        print("bench/live.py: opt-in; run `make live` (or `bench/live.py --run`) against a configured endpoint")
        return 0
    settings = load_settings()
    if not settings.has_model or not settings.chat_model:
        print("no model configured: set AUTOPATCH_LLM_BASE_URL and AUTOPATCH_LLM_MODEL (see README, Local models)")
        return 0
    print(f"model: {settings.chat_model} (memory: {settings.effective_memory_model}); tools={settings.llm_tools}"
          f" json_mode={settings.llm_json_mode} timeout={settings.llm_timeout_seconds:g}s"
          f" retries={settings.llm_max_retries} window={settings.context_window or 'table'}"
          f" max_output={settings.max_output_tokens or 'profile'}")
    results: list[tuple[str, str, str]] = []
    log = CallLog()
    with temp_dir("autopatch-live-") as tmp:
        repo = make_repo(tmp / "repo")
        (repo / "src").mkdir()
        (repo / "src" / "backoff.py").write_text(APP, encoding="utf-8")
        home = tmp / "home"
        os.environ["AUTOPATCH_HOME"] = str(home)  # the child settings below and any helper read it
        mgr = MemoryManager.open(repo, settings.with_overrides(home=home, config_file=None))
        try:
            assert mgr.client is not None
            mgr.client.complete = log.wrap(mgr.client.complete)  # type: ignore[method-assign]
            mgr.client.stream = log.wrap(mgr.client.stream)  # type: ignore[method-assign]
            chat = ChatService(mgr)
            deltas: list[str] = []

            def plain() -> str:
                result = chat.ask("In one short sentence: what is exponential backoff?", intent="general_chat",
                                  callbacks=AgentCallbacks(on_delta=deltas.append))
                words = " ".join(result.answer.split()[:8])
                cut = " (cut at the output limit)" if "cut off at its output limit" in result.answer else ""
                return f"{len(result.answer)} chars{cut}; starts: {words!r}"

            step("chat", results, plain)
            results.append(("streaming", "ok" if len(deltas) > 1 else "no", f"{len(deltas)} deltas"))
            tools: list[str] = []

            def explain() -> str:
                result = chat.ask("What does retry_delay return for attempt 3?", intent="code_explain",
                                  scope_paths=["src/backoff.py"], callbacks=AgentCallbacks(on_tool=tools.append))
                mode = "files in the prompt (tools off)" if "Tools were off" in result.answer else "tool loop"
                return f"{mode}; tool calls: {', '.join(tools) or 'none'}; answer {len(result.answer)} chars"

            step("code_explain", results, explain)
            model = settings.effective_memory_model or ""

            def memory() -> str:
                flush = mgr.process_pending()
                rows = mgr.store.conn().execute(
                    "SELECT kind, status, failure_category, failure_rule FROM memory_jobs ORDER BY rowid").fetchall()
                outcomes = defaultdict(int)
                for r in rows:
                    what = r["status"] + (f" {r['failure_category']}/{r['failure_rule']}" if r["failure_category"]
                                          else "")
                    outcomes[f"{r['kind']}: {what}"] += 1
                done = (f"flush: {flush.succeeded} succeeded, {flush.succeeded_no_output} no output, "
                        f"{flush.retry_wait} retry_wait, {flush.failed} failed, {flush.pending} pending")
                return done + "; " + "; ".join(f"{k} x{v}" for k, v in outcomes.items())

            step("memory jobs", results, memory)
            rejected = ENDPOINTS.json_mode_rejected(settings.llm_base_url, model)
            results.append(("json mode", "dropped" if rejected else "ok",
                            "refused by the server, repeated without it" if rejected
                            else f"requested ({settings.llm_json_mode})"))
            results.append(("tools remembered unusable", "yes" if ENDPOINTS.tools_unusable(
                settings.llm_base_url, settings.chat_model) else "no", ""))
        finally:
            mgr.close()
        if args.keep:
            print(f"repository: {repo}")
    print()
    table(("step", "result", "detail"), results)
    print()
    per_task: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for task, wall, cpu, outcome in log.rows:
        per_task[task].append((wall, cpu, outcome))
    rows = []
    for task, calls in per_task.items():
        walls = [c[0] for c in calls]
        outcomes = defaultdict(int)
        for c in calls:
            outcomes[c[2]] += 1
        rows.append((task, len(calls), f"{sum(walls):.1f}", f"{sum(walls) / len(walls):.2f}", f"{max(walls):.2f}",
                     f"{sum(c[1] for c in calls):.2f}", ", ".join(f"{k} x{v}" for k, v in outcomes.items())))
    table(("task", "calls", "wall s", "s/call", "max s", "client cpu s", "finish"), rows)
    print(f"\n{len(log.rows)} model calls, {sum(r[1] for r in log.rows):.1f} s wall in calls")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
