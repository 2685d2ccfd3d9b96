"""Memory quality benchmark: the shipped corpus (tests/quality/cases.py) through the CLI and the stub.

    .venv/bin/python bench/quality.py [--baseline] [--case ID]...

Runs every case black-box exactly as tests/quality/test_corpus.py does (`autopatch-tui ask` /
`memory process` in-process against the scripted OpenAI-compatible stub on 127.0.0.1, then
`memory list/show/search --json`) and prints
- the pass rate (all of a case's expectations met), per language;
- a confusion table: each proposed candidate by kind × outcome (kept as expected, refused as
  expected, stored although it should be refused = false accept, refused although legitimate =
  false refusal);
- the refusal rules hit (extraction verdicts, consolidation and extraction repair violations);
- the false-refusal count over the legitimate forms;
- wall and CPU time of the run, and the CPU spent inside the semantic gate itself.
`--baseline` also runs the corpus in the same process with the semantic gate switched off (its two
entry points replaced by no-ops; the other validation rules stay) and prints the same figures
side by side, so the table shows what the gate adds."""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import table  # noqa: E402


def _isolate(home: Path) -> None:
    for name in list(os.environ):
        if name.startswith("AUTOPATCH_"):
            del os.environ[name]
    os.environ["AUTOPATCH_HOME"] = str(home)


class GateClock:
    """Wall and CPU time spent inside the semantic gate's two entry points."""

    def __init__(self) -> None:
        self.calls = 0
        self.cpu = 0.0

    def wrap(self, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            t = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu += time.thread_time() - t
                self.calls += 1
        return timed


@contextmanager
def gate(mode: str, clock: GateClock):
    from autopatch_tui.core.pipeline import consolidation, extraction_rules

    saved = extraction_rules.refuse_candidate, consolidation.check_operation
    if mode == "off":
        extraction_rules.refuse_candidate = lambda *a, **k: None
        consolidation.check_operation = lambda *a, **k: None
    else:
        extraction_rules.refuse_candidate = clock.wrap(saved[0])
        consolidation.check_operation = clock.wrap(saved[1])
    try:
        yield
    finally:
        extraction_rules.refuse_candidate, consolidation.check_operation = saved


def run(cases, stub, root: Path) -> dict:
    from tests.quality.cases import KEPT
    from tests.quality.harness import check, run_case

    res = {"passed": 0, "lang": Counter(), "lang_passed": Counter(), "confusion": Counter(), "rules": Counter(),
           "false_refusals": [], "false_accepts": [], "failed": []}
    for case in cases:
        out = run_case(case, stub, root)
        bad = check(case, out)
        res["lang"][case.lang] += 1
        if not bad:
            res["passed"] += 1
            res["lang_passed"][case.lang] += 1
        else:
            res["failed"].append((case.id, bad[0]))
        # a candidate is stored when an active item of its kind and subject holds its statement in
        # any revision (a revised decision keeps its first statement in the chain)
        stored = {(i["kind"], i["subject"], r["statement"]) for i in out.items for r in i["revisions"]}
        final = case.repair if case.repair is not None else case.cands
        for c in final:
            kept = (c.kind, c.subject, c.statement) in stored
            want = c.expect == KEPT
            cell = {(True, True): "kept (right)", (False, False): "refused (right)",
                    (True, False): "stored, should refuse", (False, True): "not stored, legitimate"}[(kept, want)]
            res["confusion"][(c.kind, cell)] += 1
            if want and not kept:
                res["false_refusals"].append(f"{case.id}: {c.subject}")
            if kept and not want:
                res["false_accepts"].append(f"{case.id}: {c.subject}")
        for rule, n in out.refused.items():
            res["rules"][f"extraction: {rule}"] += n
        for rule in out.consolidation_rules:
            res["rules"][f"consolidation: {rule}"] += 1
        for rule in out.extraction_violations:
            res["rules"][f"extraction repair: {rule}"] += 1
    return res


def report(title: str, res: dict, n: int, wall: float, cpu: float, clock: GateClock | None) -> None:
    print(f"\n== {title}")
    print(f"pass rate: {res['passed']}/{n} = {100 * res['passed'] / n:.1f} %   "
          + "   ".join(f"{lang} {res['lang_passed'][lang]}/{res['lang'][lang]}" for lang in sorted(res["lang"])))
    cols = ["kept (right)", "refused (right)", "stored, should refuse", "not stored, legitimate"]
    kinds = sorted({k for k, _ in res["confusion"]})
    table(["kind proposed", *cols], [[k, *(res["confusion"][(k, c)] for c in cols)] for k in kinds])
    print(f"false refusals (legitimate candidates refused): {len(res['false_refusals'])}"
          + (": " + "; ".join(res["false_refusals"][:8]) if res["false_refusals"] else ""))
    print(f"false accepts (wrong candidates stored): {len(res['false_accepts'])}"
          + (": " + "; ".join(res["false_accepts"][:8]) if res["false_accepts"] else ""))
    if res["rules"]:
        print("refusal rules hit:")
        table(["rule", "count"], sorted(res["rules"].items(), key=lambda kv: (-kv[1], kv[0])))
    for case_id, why in res["failed"][:10]:
        print(f"  FAILED {case_id}: {why}")
    line = f"time: wall {wall:.2f} s, CPU {cpu:.2f} s (this process, all threads) for {n} cases"
    if clock is not None and clock.calls:
        line += (f"; semantic gate {clock.calls} calls, CPU {clock.cpu * 1000:.1f} ms "
                 f"({clock.cpu / clock.calls * 1e6:.0f} µs per call)")
    print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", action="store_true", help="also run with the semantic gate switched off")
    ap.add_argument("--case", action="append", default=[], help="run only these case IDs")
    args = ap.parse_args()

    import httpcore2

    import autopatch_tui.cli.main as cli_main
    from tests.quality.cases import CASES
    from tests.support.llm_stub import StubLLMServer

    cases = [c for c in CASES if not args.case or c.id in args.case]
    if not cases:
        print("no such case", file=sys.stderr)
        return 2
    httpcore2.default_ssl_context = functools.lru_cache(maxsize=None)(httpcore2.default_ssl_context)
    cli_main.build_parser = functools.lru_cache(maxsize=1)(cli_main.build_parser)
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="autopatch-quality-", dir=shm if shm.is_dir() else None))
    print(f"{len(cases)} cases ({sum(c.careless for c in cases)} that the validator before the gate got wrong, "
          f"{sum(c.legit for c in cases)} legitimate forms); temp dir {root}")
    try:
        _isolate(root / "home")
        stub = StubLLMServer()
        try:
            for mode in (["on", "off"] if args.baseline else ["on"]):
                clock = GateClock()
                w, c = time.perf_counter(), time.process_time()
                with gate(mode, clock):
                    res = run(cases, stub, root)
                wall, cpu = time.perf_counter() - w, time.process_time() - c
                report("semantic gate ON" if mode == "on" else "BASELINE: semantic gate OFF", res, len(cases),
                       wall, cpu, clock if mode == "on" else None)
        finally:
            stub.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
