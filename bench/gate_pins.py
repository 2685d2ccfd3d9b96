"""Which of the Memory gate's lexicon entries pin a verdict (issue 29, deliverable 1).

    .venv/bin/python bench/gate_pins.py [--name MODULE.NAME]... [--max-seconds S] [--show N] [--no-main]

Runs both corpora (tests/quality/cases.py, tests/quality_independent/cases.json) once through the CLI
and the stub exactly as bench/quality.py does, recording every `validate_extraction` call. Then, for
every lexicon entry of the gate's modules — each branch of an alternation (at any depth) of a
module-level compiled pattern, each word of a module-level word set, each entry of a module-level
tuple of strings — it removes that one entry, replays the recorded calls in-process and compares
the verdicts (kept candidates with their standing, refusals with their rules, violations). An entry
whose removal changes no verdict pins nothing.

It prints the number of entries checked, the unpinned count, the total number of alternatives
(pattern branches + word-list entries) of the current code and, unless `--no-main`, of `main`'s code
measured in the same run (a `git archive` of main read by an isolated child process).

Covers: module-level `re.Pattern`, `frozenset`/`set` of words and tuples of strings in
`core/pipeline/{lexicon,carry,clauses,markers,reading,speech,semantic_gate}.py`. Not split: tables
derived at import from another table (the masks' compiled `_SCRIPTED`, `_ACK_WORDS`, the typo and
abbreviation tables) — their source entries are checked where they are module-level patterns or
words. `--max-seconds` bounds the replay phase (entries left are reported as unchecked)."""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODULES = ("lexicon", "carry", "clauses", "markers", "reading", "speech", "semantic_gate")


# ------------------------------------------------------------------------------ entries


def branches(pattern: str) -> list[tuple[int, int, int, int]]:
    """(start, end, cut_start, cut_end) of every alternation branch of `pattern`, at any group depth:
    removing the branch removes pattern[cut_start:cut_end] (the branch and one of its `|`)."""
    seps: dict[int, list[int]] = {}  # group open position (-1: top level) -> positions of its `|`
    bounds: dict[int, tuple[int, int]] = {-1: (0, len(pattern))}
    stack = [-1]
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]" or (i > 0 and pattern[i - 1] == "[")
        elif ch == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":
                i += 1
        elif ch == "(":
            stack.append(i)
            body = i + 1
            if pattern[body:body + 1] == "?":  # (?:, (?=, (?!, (?<=, (?<!, (?P<name>
                m = re.match(r"\?(?:P<\w+>|<[=!]|[:=!>]|[a-zA-Z]+[:)])", pattern[body:])
                body += m.end() if m else 1
            bounds[i] = (body, -1)
        elif ch == "|":
            seps.setdefault(stack[-1], []).append(i)
        elif ch == ")" and len(stack) > 1:
            g = stack.pop()
            bounds[g] = (bounds[g][0], i)
        i += 1
    out = []
    for g, bars in seps.items():
        start, end = bounds[g]
        if end < 0:
            continue
        edges = [start, *bars, end]
        for k in range(len(edges) - 1):
            a = edges[k] + (1 if k else 0)
            b = edges[k + 1]
            cut = (a - 1, b) if k else (a, b + 1)  # the branch and the `|` before it (after, for the first)
            out.append((a, b, *cut))
    return out


def entries(modules: dict[str, object]) -> list[tuple[str, str, str, object]]:
    """(module, name, shown entry, replacement value) of every lexicon entry."""
    out = []
    for mod_name, mod in modules.items():
        for name, value in sorted(vars(mod).items()):
            if name.startswith("__"):
                continue
            if isinstance(value, re.Pattern):
                p = value.pattern
                for a, b, ca, cb in branches(p):
                    out.append((mod_name, name, p[a:b][:60], (value, p[:ca] + p[cb:])))
            elif isinstance(value, (frozenset, set)) and value and all(isinstance(w, str) for w in value):
                for w in sorted(value):
                    out.append((mod_name, name, w, type(value)(value - {w})))
            elif (isinstance(value, tuple) and len(value) > 1 and all(isinstance(w, str) for w in value)
                  and name.isupper()):
                for i, w in enumerate(value):
                    out.append((mod_name, name, w[:60], value[:i] + value[i + 1:]))
    return out


def count_alternatives(modules: dict[str, object]) -> int:
    return len(entries(modules))


# ------------------------------------------------------------------------------ recording and replay


def record() -> list[tuple]:
    """Run both corpora once, recording every validate_extraction call (out, inp, after_repair)."""
    import httpcore2

    import autopatch_tui.cli.main as cli_main
    from autopatch_tui.core.pipeline import extraction
    from tests.quality.cases import CASES
    from tests.quality.harness import run_case
    from tests.quality_independent.loader import CASES_JSON, load
    from tests.support.llm_stub import StubLLMServer

    calls: list[tuple] = []
    original = extraction.validate_extraction

    def recording(out, inp, *, after_repair=False):
        calls.append((out, inp, after_repair))
        return original(out, inp, after_repair=after_repair)

    httpcore2.default_ssl_context = functools.lru_cache(maxsize=None)(httpcore2.default_ssl_context)
    cli_main.build_parser = functools.lru_cache(maxsize=1)(cli_main.build_parser)
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="autopatch-pins-", dir=shm if shm.is_dir() else None))
    for name in list(os.environ):
        if name.startswith("AUTOPATCH_"):
            del os.environ[name]
    os.environ["AUTOPATCH_HOME"] = str(root / "home")
    stub = StubLLMServer()
    extraction.validate_extraction = recording
    try:
        independent, _ = load(CASES_JSON)
        for case in [*CASES, *(ic.case for ic in independent)]:
            run_case(case, stub, root)
    finally:
        extraction.validate_extraction = original
        stub.close()
        shutil.rmtree(root, ignore_errors=True)
    return calls


def _clear_caches() -> None:
    from autopatch_tui.core.pipeline import clauses, reading

    reading.read_segment.cache_clear()
    clauses.segments.cache_clear()
    clauses._turn_spans.cache_clear()


def verdicts(calls: list[tuple]) -> tuple:
    from autopatch_tui.core.pipeline.extraction_rules import validate_extraction

    _clear_caches()
    out = []
    for reply, inp, after_repair in calls:
        try:
            v = validate_extraction(reply, inp, after_repair=after_repair)
        except Exception as exc:  # a removed branch may leave a pattern that raises: a changed verdict
            out.append(("error", type(exc).__name__))
            continue
        out.append((tuple((c.subject, c.strength, c.recall_mode) for c in v.accepted), tuple(v.refusals),
                    tuple(x.rule for x in v.violations)))
    return tuple(out)


def main_alternatives() -> int | None:
    """The number of alternatives of main's gate, read from a `git archive` of main by an isolated child."""
    tmp = Path(tempfile.mkdtemp(prefix="gate-pins-main-"))
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "main", "autopatch_tui"], capture_output=True,
                                 timeout=60, stdin=subprocess.DEVNULL)
        if archive.returncode != 0:
            return None
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True, timeout=60)
        shutil.copy(Path(__file__), tmp / "gate_pins.py")
        code = ("import sys, importlib; sys.path[:0] = [sys.argv[1]]; import gate_pins as g; "
                "mods = {}\nfor n in g.MODULES:\n    try: mods[n] = importlib.import_module("
                "'autopatch_tui.core.pipeline.' + n)\n    except ImportError: pass\nprint(g.count_alternatives(mods))")
        res = subprocess.run([sys.executable, "-I", "-c", code, str(tmp)], capture_output=True, text=True,
                             cwd=tmp, timeout=120, stdin=subprocess.DEVNULL)
        return int(res.stdout.strip()) if res.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", action="append", default=[], help="only these MODULE.NAME tables")
    ap.add_argument("--max-seconds", type=float, default=None, help="bound the replay phase")
    ap.add_argument("--show", type=int, default=30, help="unpinned entries listed (default 30)")
    ap.add_argument("--no-main", action="store_true", help="do not count main's alternatives")
    args = ap.parse_args()

    import importlib

    modules = {n: importlib.import_module(f"autopatch_tui.core.pipeline.{n}") for n in MODULES}
    all_entries = entries(modules)
    todo = [e for e in all_entries if not args.name or f"{e[0]}.{e[1]}" in args.name]
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average) on {os.cpu_count()} CPUs (direction only)")
    t0 = time.perf_counter()
    calls = record()
    base = verdicts(calls)
    print(f"recorded {len(calls)} validate_extraction calls over both corpora in {time.perf_counter() - t0:.1f} s")
    t1 = time.perf_counter()
    unpinned, checked = [], 0
    for mod_name, name, shown, replacement in todo:
        if args.max_seconds is not None and time.perf_counter() - t1 > args.max_seconds:
            break
        mod = modules[mod_name]
        saved = getattr(mod, name)
        if isinstance(replacement, tuple) and len(replacement) == 2 and isinstance(replacement[0], re.Pattern):
            try:
                new = re.compile(replacement[1], replacement[0].flags)
            except re.error:
                new = None  # the pattern does not parse without it: the entry is load-bearing
        else:
            new = replacement
        checked += 1
        if new is None:
            continue
        setattr(mod, name, new)
        try:
            if verdicts(calls) == base:
                unpinned.append(f"{mod_name}.{name}: {shown!r}")
        finally:
            setattr(mod, name, saved)
    _clear_caches()
    print(f"entries checked: {checked} of {len(todo)} selected ({len(all_entries)} in all) in "
          f"{time.perf_counter() - t1:.1f} s")
    print(f"unpinned (removing it changes no verdict of our corpora): {len(unpinned)} of {checked} checked")
    for line in unpinned[:args.show]:
        print(f"  {line}")
    per_table: dict[str, list[int]] = {}
    for mod_name, name, _, _ in todo[:checked]:
        per_table.setdefault(f"{mod_name}.{name}", [0, 0])[0] += 1
    for line in unpinned:
        per_table[line.split(":", 1)[0]][1] += 1
    print("per table (checked, unpinned):")
    for table_name, (n, u) in sorted(per_table.items(), key=lambda kv: -kv[1][1]):
        print(f"  {table_name}: {n} checked, {u} unpinned")
    main_total = None if args.no_main else main_alternatives()
    print(f"total alternatives (pattern branches + word-list entries): {len(all_entries)} now; "
          f"main: {main_total if main_total is not None else 'not measured'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
