"""Memory quality benchmark: our corpus (tests/quality/cases.py) and the independent corpus
(tests/quality_independent/cases.json), both through the CLI and the stub; `--only apj` scores
AutoPatch-J's own Memory cases (tests/quality_apj/cases.json) in the independent format.

    .venv/bin/python bench/quality.py [--baseline] [--case ID]... [--corpus PATH]...
        [--only ours|independent|apj|corpus] [--show N]

Runs every case black-box exactly as the tests do (`autopatch-tui ask` / `memory process` in-process
against the scripted OpenAI-compatible stub on 127.0.0.1, then `memory list/show/search --json`) and
prints, for our corpus
- the pass rate (all of a case's expectations met), per language;
- a confusion table: each proposed candidate by kind x outcome (kept as expected, refused as
  expected, stored although it should be refused = false accept, refused although legitimate =
  false refusal);
- the refusal rules hit (extraction verdicts, consolidation and extraction repair violations);
and for the independent corpus (and any `--corpus` file in the same format,
tests/quality_independent/README.md) the malformed cases excluded from the score with their
reasons, the score, per language and per category, the confusion table kind proposed x outcome
(kept right / refused right / false accept / false refusal / kept but wrong standing), the false
memories per wrong-candidate category, and the rule counts. Both end with wall and CPU time of the
run and the CPU spent judging candidates (`validate_extraction`, per candidate) and consolidation
operations (`check_operation`).
`--baseline` also runs everything in the same process with the semantic gate switched off (its two
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

from bench._common import table


def _isolate(home: Path) -> None:
    for name in list(os.environ):
        if name.startswith("AUTOPATCH_"):
            del os.environ[name]
    os.environ["AUTOPATCH_HOME"] = str(home)


class GateClock:
    """CPU time spent judging: `validate_extraction` (per candidate: the reply's candidates) and
    the consolidation gate `check_operation` (per operation)."""

    def __init__(self) -> None:
        self.candidates = 0
        self.cpu = 0.0
        self.ops = 0
        self.op_cpu = 0.0
        self.judged = 0  # candidates the semantic gate itself judged (after the provenance checks)
        self.gate_cpu = 0.0

    def _timed(self, fn, cpu: str, count: str, how_many=lambda *args: 1):
        """`fn`, adding its thread CPU to the attribute `cpu` and `how_many(*args)` to `count`."""
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            t = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                setattr(self, cpu, getattr(self, cpu) + time.thread_time() - t)
                setattr(self, count, getattr(self, count) + how_many(*args))
        return timed

    def wrap_gate(self, fn):
        return self._timed(fn, "gate_cpu", "judged")

    def wrap_extraction(self, fn):
        return self._timed(fn, "cpu", "candidates", lambda out, *args: len(out.candidates))

    def wrap_operation(self, fn):
        return self._timed(fn, "op_cpu", "ops")

    def line(self) -> str:
        out = ""
        if self.candidates:
            out += (f"judging {self.candidates} candidates (validate_extraction): CPU {self.cpu * 1000:.1f} ms "
                    f"({self.cpu / self.candidates * 1e6:.0f} µs per candidate)")
        if self.judged:
            out += (f"; of it the semantic gate (refuse_candidate) {self.judged} candidates: "
                    f"{self.gate_cpu / self.judged * 1e6:.0f} µs per candidate")
        if self.ops:
            out += (f"; consolidation gate {self.ops} operations: CPU {self.op_cpu * 1000:.1f} ms "
                    f"({self.op_cpu / self.ops * 1e6:.0f} µs per operation)")
        return out


@contextmanager
def gate(mode: str, clock: GateClock):
    from autopatch_tui.core.pipeline import consolidation, extraction, extraction_rules

    saved = extraction_rules.refuse_candidate, consolidation.check_operation, extraction.validate_extraction
    if mode == "off":
        extraction_rules.refuse_candidate = lambda *a, **k: None
        consolidation.check_operation = lambda *a, **k: None
    else:
        extraction_rules.refuse_candidate = clock.wrap_gate(saved[0])
        consolidation.check_operation = clock.wrap_operation(saved[1])
    extraction.validate_extraction = clock.wrap_extraction(saved[2])
    try:
        yield
    finally:
        extraction_rules.refuse_candidate, consolidation.check_operation, extraction.validate_extraction = saved


def _rules(res: dict, out) -> None:
    for rule, n in out.refused.items():
        res["rules"][f"extraction: {rule}"] += n
    for rule in out.consolidation_rules:
        res["rules"][f"consolidation: {rule}"] += 1
    for rule in out.extraction_violations:
        res["rules"][f"extraction repair: {rule}"] += 1


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
        _rules(res, out)
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
    _time_line(wall, cpu, n, clock)


def _time_line(wall: float, cpu: float, n: int, clock: GateClock | None) -> None:
    print(f"time: wall {wall:.2f} s, CPU {cpu:.2f} s (this process, all threads) for {n} cases")
    if clock is not None and clock.line():
        print(clock.line())


# --------------------------------------------------------------------------- independent format

# categories whose every case is a wrong candidate: a stored one there is a false memory (issue #19's goal: 0)
FALSE_MEMORY_CATEGORIES = ("code_fact", "one_off", "hedge", "unconfirmed_adoption", "alias")


def run_independent(cases, stub, root: Path) -> dict:
    from tests.quality.harness import run_case
    from tests.quality_independent.loader import score

    res = {"passed": 0, "lang": Counter(), "lang_passed": Counter(), "cat": Counter(), "cat_passed": Counter(),
           "confusion": Counter(), "cat_cells": Counter(), "rules": Counter(), "failed": [], "standing": Counter()}
    for ic in cases:
        out = run_case(ic.case, stub, root)
        sc = score(ic, out)
        res["lang"][ic.lang] += 1
        res["cat"][ic.category] += 1
        res["confusion"][(ic.case.cands[0].kind, sc.cell)] += 1
        res["cat_cells"][(ic.category, sc.cell)] += 1
        if sc.passed:
            res["passed"] += 1
            res["lang_passed"][ic.lang] += 1
            res["cat_passed"][ic.category] += 1
            if ic.expect == "keep":
                item = next(iter(out.items), None)
                if item is not None:
                    res["standing"][(ic.lasting, f"{item['strength']}/{item['recall_mode']}")] += 1
        else:
            res["failed"].append((ic, sc))
        _rules(res, out)
    return res


def report_independent(title: str, res: dict, n: int, wall: float, cpu: float, clock: GateClock | None,
                       show: int) -> None:
    from tests.quality_independent.loader import CELLS, FALSE_ACCEPT

    print(f"\n== {title}")
    if not n:
        print("no well-formed case")
        return
    print(f"score: {res['passed']}/{n} = {100 * res['passed'] / n:.1f} %   "
          + "   ".join(f"{lang} {res['lang_passed'][lang]}/{res['lang'][lang]}" for lang in sorted(res["lang"])))
    kinds = sorted({k for k, _ in res["confusion"]})
    print("confusion (kind proposed x outcome):")
    table(["kind proposed", *CELLS], [[k, *(res["confusion"][(k, c)] for c in CELLS)] for k in kinds])
    print("per category:")
    table(["category", "cases", "right", *CELLS[2:]],
          [[cat, res["cat"][cat], res["cat_passed"][cat], *(res["cat_cells"][(cat, c)] for c in CELLS[2:])]
           for cat in sorted(res["cat"])])
    false_memories = {cat: res["cat_cells"][(cat, FALSE_ACCEPT)] for cat in FALSE_MEMORY_CATEGORIES}
    print(f"false memories among {', '.join(FALSE_MEMORY_CATEGORIES)}: {sum(false_memories.values())} "
          f"({', '.join(f'{k} {v}' for k, v in false_memories.items())})")
    if res["standing"]:
        print("standing of the kept items (lasting in the case -> strength/recall stored): "
              + ", ".join(f"{'lasting' if k[0] else 'not lasting' if k[0] is False else 'either'} -> {k[1]}: {v}"
                          for k, v in sorted(res["standing"].items(), key=str)))
    if res["rules"]:
        print("refusal rules hit:")
        table(["rule", "count"], sorted(res["rules"].items(), key=lambda kv: (-kv[1], kv[0])))
    for ic, sc in res["failed"][:show]:
        print(f"  FAILED {ic.id} [{ic.category}, expect {ic.expect}]: {sc.cell}: {sc.detail}")
    if len(res["failed"]) > show:
        print(f"  ... {len(res['failed']) - show} more (--show N)")
    _time_line(wall, cpu, n, clock)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", action="store_true", help="also run with the semantic gate switched off")
    ap.add_argument("--case", action="append", default=[], help="run only these case IDs")
    ap.add_argument("--corpus", action="append", default=[], type=Path,
                    help="also score this corpus file (independent format)")
    ap.add_argument("--only", choices=("ours", "independent", "apj", "corpus"),
                    help="run only this corpus (apj: AutoPatch-J's own cases, tests/quality_apj/cases.json)")
    ap.add_argument("--show", type=int, default=20, help="failed independent cases listed (default 20)")
    args = ap.parse_args()

    import httpcore2

    import autopatch_tui.cli.main as cli_main
    from tests.quality.cases import CASES
    from tests.quality_apj.loader import CASES_JSON as APJ_JSON
    from tests.quality_independent.loader import CASES_JSON, load
    from tests.support.llm_stub import StubLLMServer

    ours = [c for c in CASES if (not args.case or c.id in args.case)] if args.only in (None, "ours") else []
    corpora = []
    for path in ([CASES_JSON] if args.only in (None, "independent") else []) + (
            [APJ_JSON] if args.only == "apj" else []) + (
            args.corpus if args.only in (None, "corpus") else []):
        cases, bad = load(path)
        corpora.append((path, [c for c in cases if not args.case or c.id in args.case], bad))
    if not ours and not any(cases for _, cases, _ in corpora):
        print("no such case", file=sys.stderr)
        return 2
    httpcore2.default_ssl_context = functools.lru_cache(maxsize=None)(httpcore2.default_ssl_context)
    cli_main.build_parser = functools.lru_cache(maxsize=1)(cli_main.build_parser)
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="autopatch-quality-", dir=shm if shm.is_dir() else None))
    print(f"temp dir {root}; load: {os.getloadavg()[0]:.2f} (1-min average) on {os.cpu_count()} CPUs")
    if ours:
        print(f"our corpus: {len(ours)} cases ({sum(c.careless for c in ours)} that the validator before the gate "
              f"got wrong, {sum(c.round_one_wrong for c in ours)} that the round-one gate got wrong, "
              f"{sum(c.legit for c in ours)} legitimate forms)")
    for path, cases, bad in corpora:
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(cases)} well-formed cases, "
              f"{len(bad)} malformed (excluded from the score)")
        for m in bad:
            print(f"  MALFORMED {m.id}: {m.reason}")
    try:
        _isolate(root / "home")
        stub = StubLLMServer()
        try:
            for mode in (["on", "off"] if args.baseline else ["on"]):
                label = "semantic gate ON" if mode == "on" else "BASELINE: semantic gate OFF"
                if ours:
                    clock = GateClock()
                    w, c = time.perf_counter(), time.process_time()
                    with gate(mode, clock):
                        res = run(ours, stub, root)
                    report(f"our corpus (tests/quality), {label}", res, len(ours), time.perf_counter() - w,
                           time.process_time() - c, clock)
                for path, cases, _ in corpora:
                    clock = GateClock()
                    w, c = time.perf_counter(), time.process_time()
                    with gate(mode, clock):
                        res = run_independent(cases, stub, root)
                    report_independent(f"{path.name}, {label}", res, len(cases), time.perf_counter() - w,
                                       time.process_time() - c, clock, args.show)
        finally:
            stub.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
