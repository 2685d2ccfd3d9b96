"""Memory against a real model (opt-in, never in CI): the quality corpora as real conversations.

    .venv/bin/python bench/memory_eval.py --run [--corpus PATH]... [--case ID]... [--limit N]
        [--results FILE] [--scripted-answers] [--with-text]

Reads the ordinary settings (`AUTOPATCH_LLM_*` in the environment or config.toml; README, "Local
models" and "A real-model eval") and runs each case of the corpora — by default both in-repo ones,
ours (`tests/quality/cases.py`) and the independent one (`tests/quality_independent/cases.json`);
`--corpus PATH` (repeatable) runs files in the independent format instead
(`tests/quality_independent/README.md`) — in its own temporary repository and AUTOPATCH_HOME (your
stores are never touched):

- the turns before the last are written as the corpus has them (user words and the assistant's
  answer, the conversation the last turn continues); the last turn is asked for real
  (`ChatService.ask`: the configured model answers; `--scripted-answers` writes the corpus's answer
  instead, and review turns with finding evidence keys are always written, as the repair workflow
  does);
- then every Memory job runs once (`process_pending`): the model extracts (with its own `evidence`
  reading), the product gates, the model consolidates, the product checks the operations.

Per case it writes one line to the results file (JSON lines, keyed by the case ID; default
`memory_eval_results.jsonl` in the working folder) as soon as the case is done, and a rerun skips
every case the file already holds: an interrupted run (Ctrl-C, a crash, a server restart) resumes
where it stopped, and the case that was running is run again — so is a case whose Memory jobs did
not all end (a transient provider error leaves a job to retry; its line says `"complete": false`). The line holds what was stored (kind,
strength, recall, whether it matches a legitimate or a wrong candidate of the case), the refusals and
the readers' disagreements by rule, job outcomes and the seconds per turn; the stored subjects only
with `--with-text` (model-written text, like any reply, stays out of the file otherwise).

At the end (and with `--report` alone, from the file) it prints per category: cases, items stored,
precision of the stored items (stored items matching a legitimate candidate of the case / stored
items), recall of the legitimate candidates (matched by a stored item / legitimate), how many of the
legitimate lasting ones were stored hard + always, refusals by rule and seconds per turn.

A stored item *matches* a candidate when their content terms (`core.recall.terms`, the recall
index's own terms of subject, statement, content, keywords, aliases, and the candidate's quotes)
share at least two terms (one when the candidate has at most three). This is an approximation: a
real model words its items its own way; `--with-text` keeps the subjects for a human second look.
Figures are this run's only (a model server's speed varies with its load).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import table  # noqa: E402
from tests.support.case_paths import materialize_paths  # noqa: E402

DEFAULT_RESULTS = "memory_eval_results.jsonl"
LIVE_INTENTS = ("general_chat", "code_explain")  # the intents a typed turn can have


@dataclass(frozen=True)
class EvalTurn:
    user: str
    assistant: str
    intent: str = "general_chat"
    paths: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Expected:
    text: str  # subject, statement and the user's quotes of one candidate
    lasting: bool | None = None


@dataclass(frozen=True)
class EvalCase:
    id: str
    corpus: str
    category: str
    lang: str
    turns: tuple[EvalTurn, ...]
    legit: tuple[Expected, ...] = ()
    wrong: tuple[Expected, ...] = ()


# --------------------------------------------------------------------------- corpora


def _turns(turns: Iterable[Any]) -> tuple[EvalTurn, ...]:
    return tuple(EvalTurn(t.user, t.assistant, t.intent, tuple(t.paths), tuple(t.keys)) for t in turns)


def _expected(cand: Any) -> Expected:
    quotes = " ".join(q for _, role, q in cand.src if role == "user")
    return Expected(f"{cand.subject} {cand.statement} {quotes}", cand.lasting)


def ours() -> list[EvalCase]:
    from tests.quality.cases import CASES, KEPT

    out = []
    for case in CASES:
        legit = tuple(_expected(c) for c in case.cands if c.expect == KEPT)
        wrong = tuple(_expected(c) for c in case.cands if c.expect != KEPT)
        refused = sorted({c.expect for c in case.cands if c.expect != KEPT})
        category = "ours:legit" if not refused else f"ours:{refused[0]}"
        out.append(EvalCase(case.id, "ours", category, case.lang, _turns(case.turns), legit, wrong))
    return out


def independent(path: Path | None = None) -> tuple[list[EvalCase], list[tuple[str, str]]]:
    from tests.quality_independent.loader import CASES_JSON, load

    path = path or CASES_JSON
    cases, malformed = load(path)
    name = "independent" if path == CASES_JSON else path.stem
    out = []
    for ic in cases:
        exp = Expected(_expected(ic.final).text, ic.lasting)
        keep = ic.expect == "keep"
        out.append(EvalCase(ic.id, name, f"{name}:{ic.category}", ic.lang, _turns(ic.case.turns),
                            (exp,) if keep else (), () if keep else (exp,)))
    return out, [(m.id, m.reason) for m in malformed]


def load_corpora(paths: Sequence[Path]) -> tuple[list[EvalCase], list[tuple[str, str]]]:
    if not paths:
        cases, bad = independent()
        return ours() + cases, bad
    cases, bad = [], []
    for p in paths:
        c, b = independent(p)
        cases += c
        bad += b
    return cases, bad


# --------------------------------------------------------------------------- matching


def _terms(text: str) -> set[str]:
    from autopatch_tui.core.recall.terms import content_terms

    return set(content_terms(text))


def matches(item_text: str, expected: Expected) -> bool:
    want = _terms(expected.text)
    shared = len(_terms(item_text) & want)
    return shared >= (1 if len(want) <= 3 else 2)


# --------------------------------------------------------------------------- one case


def run_case(case: EvalCase, settings: Any, scratch: Path, *, scripted: bool, with_text: bool) -> dict[str, Any]:
    from autopatch_tui.core.agent.chat import ChatService
    from autopatch_tui.core.errors import AutopatchError
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.memory.refusals import parse_disagreements, refusal_counts

    started = time.perf_counter()
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memory-eval-", dir=scratch) as tmp:
        repo, home = Path(tmp) / "repo", Path(tmp) / "home"
        repo.mkdir()
        (repo / ".git").mkdir()  # a checkout root, without running git
        materialize_paths(repo, case.turns)
        mgr = MemoryManager.open(repo, settings.with_overrides(home=home, config_file=None))
        try:
            chat = ChatService(mgr)
            live = not scripted and all(t.intent in LIVE_INTENTS for t in case.turns)
            for n, t in enumerate(case.turns):
                if live and n == len(case.turns) - 1:
                    try:
                        chat.ask(t.user, intent=t.intent, scope_paths=list(t.paths))
                    except AutopatchError as exc:  # the turn is saved as failed; its Memory job still runs
                        errors.append(f"chat: {type(exc).__name__}")
                else:
                    h = mgr.begin_turn(t.user, intent=t.intent, scope_paths=list(t.paths),
                                       evidence_keys=list(t.keys))
                    mgr.complete_turn(h, t.assistant)
            try:
                mgr.process_pending()
            except AutopatchError as exc:
                errors.append(f"memory: {type(exc).__name__}")
            conn = mgr.store.conn()
            jobs = Counter(f"{r[0]}:{r[1]}" + (f":{r[2]}" if r[2] else "") for r in conn.execute(
                "SELECT kind, status, failure_category FROM memory_jobs"))
            # a job still open (a transient error: the server was down, restarting, timed out) leaves
            # the case incomplete: its line is kept for the record, and a rerun runs the case again
            open_jobs = conn.execute("SELECT count(*) FROM memory_jobs WHERE status IN"
                                     " ('pending', 'leased', 'retry_wait')").fetchone()[0]
            disagreements: Counter[str] = Counter()
            for (rule,) in conn.execute("SELECT failure_rule FROM memory_jobs WHERE kind = 'extraction'"
                                        " AND failure_category IS NULL AND failure_rule IS NOT NULL"):
                disagreements.update(parse_disagreements(rule))
            stored, texts = [], []
            for summary in mgr.list_items():
                d = mgr.show_item(summary.id)
                text = " ".join([d.subject, d.statement, d.content, *d.keywords, *d.aliases])
                texts.append(text)
                legit = next((e for e in case.legit if matches(text, e)), None)
                wrong = legit is None and any(matches(text, e) for e in case.wrong)
                row = {"kind": d.kind, "strength": d.strength, "recall_mode": d.recall_mode, "origin": d.origin,
                       "match": "legit" if legit else ("wrong" if wrong else "none"),
                       "lasting_expected": legit.lasting if legit else None}
                if with_text:
                    row["subject"] = d.subject
                stored.append(row)
            found = sum(1 for e in case.legit if any(matches(text, e) for text in texts))
            refusals = refusal_counts(conn)
        finally:
            mgr.close()
    return {"id": case.id, "complete": open_jobs == 0, "corpus": case.corpus, "category": case.category, "lang": case.lang,
            "turns": len(case.turns), "seconds": round(time.perf_counter() - started, 3), "stored": stored,
            "legit": len(case.legit), "legit_found": found, "refusals": refusals,
            "disagreements": dict(disagreements), "jobs": dict(jobs), "errors": errors}


# --------------------------------------------------------------------------- results file


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """The cases already done, by ID; a line cut short by an interruption, or of a case whose Memory
    jobs did not all end (`complete` false), is skipped: the case runs again."""
    done: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("id"), str) and row.get("complete", True):
            done[row["id"]] = row
    return done


def append_result(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


# --------------------------------------------------------------------------- report


@dataclass
class Tally:
    cases: int = 0
    stored: int = 0
    stored_legit: int = 0
    legit: int = 0
    legit_found: int = 0
    lasting: int = 0
    lasting_hard_always: int = 0
    turns: int = 0
    seconds: float = 0.0
    refusals: Counter[str] = field(default_factory=Counter)
    disagreements: Counter[str] = field(default_factory=Counter)

    def add(self, row: dict[str, Any]) -> None:
        self.cases += 1
        self.stored += len(row["stored"])
        self.stored_legit += sum(1 for s in row["stored"] if s["match"] == "legit")
        self.legit += row["legit"]
        self.legit_found += row["legit_found"]
        for s in row["stored"]:
            if s["match"] == "legit" and s["lasting_expected"]:
                self.lasting += 1
                self.lasting_hard_always += (s["strength"], s["recall_mode"]) == ("hard", "always")
        self.turns += row["turns"]
        self.seconds += row["seconds"]
        self.refusals.update(row["refusals"])
        self.disagreements.update(row["disagreements"])


def _pct(num: int, den: int) -> str:
    return f"{num}/{den} ({100 * num / den:.0f}%)" if den else "-"


def report(rows: Iterable[dict[str, Any]]) -> None:
    per: dict[str, Tally] = defaultdict(Tally)
    total = Tally()
    for row in rows:
        per[row["category"]].add(row)
        total.add(row)
    out = []
    for name, t in [*sorted(per.items()), ("ALL", total)]:
        out.append((name, t.cases, t.stored, _pct(t.stored_legit, t.stored), _pct(t.legit_found, t.legit),
                    _pct(t.lasting_hard_always, t.lasting), f"{t.seconds / t.turns:.1f}" if t.turns else "-",
                    " ".join(f"{r}:{n}" for r, n in t.refusals.most_common(4))))
    table(("category", "cases", "stored", "precision", "recall", "lasting hard+always", "s/turn",
           "refusals (top 4)"), out)
    print(f"\nrefusals by rule: {dict(total.refusals.most_common()) or '{}'}")
    print(f"readers' disagreements by rule: {dict(total.disagreements.most_common()) or '{}'}")


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="really call the configured endpoint")
    parser.add_argument("--report", action="store_true", help="only print the report of the results file")
    parser.add_argument("--corpus", action="append", type=Path, default=[], help="a corpus file (independent format)")
    parser.add_argument("--case", action="append", default=[], help="only this case ID (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="at most N cases not yet done")
    parser.add_argument("--results", type=Path, default=Path(DEFAULT_RESULTS))
    parser.add_argument("--scripted-answers", action="store_true", help="the corpus's answers, not the model's")
    parser.add_argument("--with-text", action="store_true", help="keep the stored items' subjects in the file")
    args = parser.parse_args(argv)
    if args.report:
        report(read_results(args.results).values())
        return 0
    if not args.run:
        print("bench/memory_eval.py: opt-in; run it with --run against a configured endpoint (README, "
              "\"A real-model eval\")")
        return 0
    from autopatch_tui.core.settings import load_settings

    settings = load_settings()
    if not settings.has_model or not settings.chat_model:
        print("no model configured: set AUTOPATCH_LLM_BASE_URL and AUTOPATCH_LLM_MODEL (README, Local models)")
        return 2
    cases, malformed = load_corpora(args.corpus)
    for cid, why in malformed:
        print(f"malformed, left out: {cid}: {why}")
    if args.case:
        wanted = set(args.case)
        cases = [c for c in cases if c.id in wanted]
    done = read_results(args.results)
    todo = [c for c in cases if c.id not in done]
    if args.limit is not None:
        todo = todo[:args.limit]
    print(f"{len(cases)} cases, {len(cases) - len(todo) if args.limit is None else len(done)} already done"
          f" ({args.results}), {len(todo)} to run", flush=True)
    with tempfile.TemporaryDirectory(prefix="memory-eval-") as scratch:
        os.environ["AUTOPATCH_HOME"] = str(Path(scratch) / "home")  # nothing reaches the user's home
        try:
            for n, case in enumerate(todo, 1):
                row = run_case(case, settings, Path(scratch), scripted=args.scripted_answers,
                               with_text=args.with_text)
                append_result(args.results, row)
                if row["complete"]:
                    done[case.id] = row
                print(f"[{n}/{len(todo)}] {case.id}: stored {len(row['stored'])}, {row['seconds']:.1f} s"
                      + (f", {', '.join(row['errors'])}" if row["errors"] else "")
                      + ("" if row["complete"] else " — INCOMPLETE (Memory jobs left open: "
                         + ", ".join(k for k in row["jobs"] if ":retry_wait" in k or ":pending" in k)
                         + "); it runs again next time"), flush=True)
        except KeyboardInterrupt:
            print(f"\ninterrupted: {len(done)} cases are in {args.results}; run again to resume", flush=True)
            return 130
    ids = {c.id for c in cases}
    report(r for cid, r in done.items() if cid in ids)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
