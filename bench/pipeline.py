"""The two-phase Memory pipeline: model calls, payload size, worker overhead, and the cost of
committing one consolidated item into large stores (issue 3).

    .venv/bin/python bench/pipeline.py [--turns 200] [--chat-ms 60] [--memory-ms 20] [--sizes 1000,10000,100000]
        [--commits 50] [--summary-reps 10] [--parts ABCD]

Part A: a scripted 200-turn conversation through the OpenAI-compatible stub server on 127.0.0.1
(real HTTP through the SDK). Extraction replies are computed from the request: a checkpoint that
grows with the thread (capped at ~3,500 characters) and 0-2 candidates that quote the user text
exactly; consolidation replies create, revise or reject from the candidates and the related
registry. The app's way: `start_background()`, turns added while the worker runs (each turn waits
`--chat-ms` between `begin_turn` and `complete_turn`, like a main chat call; each Memory call takes
`--memory-ms` on the stub), then `process_pending()` (the exit flush). It runs twice: *paced* (turns
arrive slower than Memory calls finish, as in an interactive session) and *burst* (turns back to back).

Worker overhead per job = time inside `runner.step` - time waiting for the processing lock - time
inside the HTTP call (`LLMClient.complete`, which includes the stub's simulated latency).

Part B: one consolidated item (one `create`) committed into a store holding 1k / 10k / 100k active
items (seeded with `item_writes.insert_revision` in one transaction, overlapping vocabulary): load
candidates + `consolidation.related_items` + checks + `consolidation.commit` (lease proof, operations,
job state), p50/p95 over ~50 commits each, beside the reference implementation's 2.3 s / 29.5 s.
The review-summary refresh (coalesced by the worker, off the commit path) is shown separately.

Part C: an idle worker poll against a history of finished jobs. Part D: the review-summary refresh
at each size of part B — the old full render, the new full render (state rebuilt) and the
incremental refresh after one commit, wall and CPU, in the same process, each incremental text
compared with a full render.

Targets (issue 3): <= 0.5 Memory calls per completed turn; <= 10 ms per committed item at 100k."""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import random
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_settings, environment_line, make_repo, ms, percentile, table, temp_dir, verdict  # noqa: E402

from autopatch_tui.core.llm.tokens import estimate_messages_tokens  # noqa: E402
from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.memory import item_writes, jobs  # noqa: E402
from autopatch_tui.core.memory.item_writes import identity_key, insert_revision  # noqa: E402
from autopatch_tui.core.memory.items import ItemFields  # noqa: E402
from autopatch_tui.core.memory.sqlite import write_txn  # noqa: E402
from autopatch_tui.core.ids import new_id  # noqa: E402
from autopatch_tui.core.pipeline import consolidation, extraction, summary, summary_state  # noqa: E402
from autopatch_tui.core.pipeline.contracts import CandidateOut, ConsolidationOut, SourceOut, validate_reply  # noqa: E402
from autopatch_tui.core.recall import phrase_index, postings  # noqa: E402
from tests.support.llm_stub import CapturedRequest, Reply, StubLLMServer  # noqa: E402

CALLS_PER_TURN_TARGET = 0.5
COMMIT_TARGET = 0.010
COMMIT_CPU_P50_TARGET = 0.0035  # issue 33: back to last round's 3.46 ms CPU p50 at 100k items
REFERENCE = {10_000: 2.3, 100_000: 29.5}  # seconds per committed item, reference implementation
MEMORY_TASKS = ("extraction", "extraction_repair", "consolidation", "consolidation_repair")

# =========================================================================== Part A: conversation


@dataclass(frozen=True)
class Durable:
    """A durable statement a user turn carries, and the candidate a good model extracts from it."""

    kind: str
    subject: str
    quote: str  # a whole sentence of the user text
    strength: str = "soft"
    recall: str = "on_match"
    aliases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()


PREFERENCES = [
    Durable("user_preference", "path handling", "From now on, always use pathlib instead of os.path in this project.",
            "hard", "always", ("filesystem paths",), ("pathlib", "os.path")),
    Durable("user_preference", "test style", "I prefer pytest fixtures over setUp methods for new tests.",
            aliases=("unit test structure",), keywords=("pytest", "fixtures"), paths=("tests",)),
    Durable("user_preference", "error messages", "Error messages must never include file contents or secrets.",
            "hard", "always", ("error text privacy",), ("secrets", "error message")),
    Durable("user_preference", "patch size", "I like small patches that change one concern at a time.",
            aliases=("small diffs",), keywords=("patch scope",)),
    Durable("user_preference", "type hints", "Always add type hints to public functions.", "hard", "on_match",
            ("typing",), ("type hints", "mypy")),
    Durable("user_preference", "logging", "Use the logging module, never print, in library code.", "hard", "on_match",
            ("no print statements",), ("logging",), ("src",)),
    Durable("user_preference", "docstrings", "Keep docstrings short: one summary line, then details only if needed.",
            aliases=("docstring style",), keywords=("docstrings",)),
]
DECISIONS = [
    Durable("project_decision", "minimum python version",
            "We decided the minimum Python version is 3.11 going forward.", "hard", "on_match",
            ("python support", "drop python 3.10"), ("python 3.11",)),
    Durable("project_decision", "config format", "Config stays in TOML and we will not add YAML support.",
            aliases=("configuration file format",), keywords=("toml", "yaml")),
    Durable("project_decision", "legacy memory schema", "旧 memory schema 不兼容，直接删除。",
            aliases=("backward compatibility", "delete legacy schema"), keywords=("memory schema",)),
    Durable("project_decision", "http client", "我们决定统一使用 httpx 作为 HTTP 客户端。",
            aliases=("http client library", "use httpx"), keywords=("httpx",)),
    Durable("project_decision", "runtime store", "SQLite stays the only runtime store and we will not add Postgres.",
            aliases=("database choice",), keywords=("sqlite", "postgres")),
]
REVISIONS = [  # later restatements of an earlier subject: consolidation revises
    Durable("user_preference", "path handling",
            "Correction to my earlier rule: pathlib everywhere, including the tests, from now on.",
            "hard", "always", ("filesystem paths",), ("pathlib",)),
    Durable("project_decision", "minimum python version",
            "Update: we decided to require Python 3.12 from now on, not 3.11.", "hard", "on_match",
            ("python support",), ("python 3.12",)),
    Durable("user_preference", "test style",
            "For tests, always prefer pytest fixtures and parametrize over loops.", "hard", "on_match",
            ("unit test structure",), ("pytest", "parametrize"), ("tests",)),
]
DISCUSSIONS = [
    Durable("discussion_context", "config loader split",
            "I am not sure yet whether the config loader should be split into two modules, so let us keep "
            "discussing it.", keywords=("config loader",)),
    Durable("discussion_context", "scan cache key",
            "Open question for later: should the scan cache be keyed by commit hash or by file mtime?",
            keywords=("scan cache",)),
    Durable("discussion_context", "plugin api",
            "We still need to decide if plugins get a stable API or stay internal.", keywords=("plugins",)),
]
LOCAL = [  # the model proposes them; validation rejects them as local corrections
    Durable("user_preference", "guard clauses", "Use a guard clause here instead of the nested if."),
    Durable("user_preference", "variable naming", "Rename the variable in this patch to config_path."),
]

FILES = ["src/app/config.py", "src/app/env.py", "src/net/client.py", "src/net/retry.py", "src/store/db.py",
         "src/store/migrate.py", "src/cli/main.py", "src/scan/scanner.py", "src/scan/cache.py",
         "src/ui/screens.py", "tests/test_config.py", "tests/test_client.py", "tests/test_scanner.py"]
FUNCS = ["load_config", "merge_env", "send_request", "backoff_delay", "open_db", "run_migrations", "main",
         "scan_files", "cache_key", "render_screen", "parse_args", "read_token", "retry_after"]
QUESTIONS = [
    "How does {f}() in {p} decide what to do when the input is empty?",
    "Why does {f}() in {p} catch the broad Exception instead of OSError?",
    "Can you explain the control flow of {f}() in {p} step by step?",
    "What would break if {f}() in {p} returned None instead of raising?",
    "Is {f}() in {p} thread safe when two workers call it at once?",
    "Where is {f}() in {p} called from, and with which arguments?",
    "Summarize what {p} is responsible for and how {f}() fits in.",
    "Does {f}() in {p} handle Windows paths correctly?",
]
ANSWER_SENTENCES = [
    "The function first normalizes its arguments and then looks up the cached value.",
    "When the cache misses, it reads the file, parses it, and stores the parsed object under the key.",
    "Errors from the parser are wrapped in a ConfigError so callers only need one except clause.",
    "The retry loop sleeps with exponential backoff and gives up after the third attempt.",
    "Two workers can race on the cache, but the worst case is a duplicate read, not corruption.",
    "The caller in the CLI passes the repository root, which is resolved before the call.",
    "A None return would surface later as an AttributeError in the renderer, far from the cause.",
    "The broad except is there because the plugin hook can raise anything; narrowing it needs a wrapper.",
    "Paths are joined with os.path.join today, so a Windows drive letter is kept as is.",
    "The tests cover the empty-input case but not the case where the environment override is blank.",
    "I would add a guard at the top, return early on empty input, and log the skipped file at debug level.",
    "The module is small enough that splitting it would mostly add import indirection.",
]


@dataclass
class Turn:
    user: str
    answer: str
    intent: str
    scope: tuple[str, ...]
    evidence: tuple[str, ...]
    durable: Durable | None


def conversation(n: int, seed: int = 7) -> list[Turn]:
    rng = random.Random(seed)
    plan: list[Durable | None] = [None] * n
    slots = list(range(2, n - 2))
    rng.shuffle(slots)
    pool = PREFERENCES + DECISIONS + DISCUSSIONS + LOCAL
    chosen = slots[: len(pool) + len(REVISIONS) + 8]
    chosen_sorted = sorted(chosen)
    early, late = chosen_sorted[: len(pool) + 8], chosen_sorted[len(pool) + 8:]
    seq = pool + [rng.choice(PREFERENCES + DECISIONS) for _ in range(8)]  # 8 verbatim restatements
    rng.shuffle(seq)
    for slot, d in zip(early, seq):
        plan[slot] = d
    for slot, d in zip(late, REVISIONS):
        plan[slot] = d
    turns = []
    for i in range(n):
        p, f = rng.choice(FILES), rng.choice(FUNCS)
        question = rng.choice(QUESTIONS).format(f=f, p=p) + f" (turn {i + 1})"
        d = plan[i]
        user = f"{question} {d.quote}" if d else question
        if rng.random() < 0.3:
            user += " Context: " + " ".join(rng.sample(ANSWER_SENTENCES, rng.randint(1, 3)))
        answer = " ".join(rng.choice(ANSWER_SENTENCES) for _ in range(rng.randint(4, 18)))
        repair = d is None and rng.random() < 0.1
        intent = "patch_revise" if repair else rng.choice(["general_chat", "code_explain", "code_explain"])
        scope = tuple(rng.sample(FILES, rng.randint(0, 3))) if intent != "general_chat" else ()
        evidence = (f"scan-{i // 20}:F{rng.randint(1, 400)}",) if repair else ()
        turns.append(Turn(user, answer, intent, scope, evidence, d))
    return turns


class ModelScript:
    """Stub replies computed from each captured request, like a cooperative model would answer."""

    def __init__(self, turns: list[Turn], delay: float) -> None:
        self.by_user = {t.user: t for t in turns}
        self.delay = delay

    @staticmethod
    def _payload(req: CapturedRequest) -> dict:
        return json.loads(req.messages[-1]["content"])

    def extraction(self, req: CapturedRequest) -> Reply:
        p = self._payload(req)
        lines = [ln for ln in p["previous_checkpoint"].splitlines() if ln.startswith("- ")]
        cands = []
        for t in p["turns"]:
            turn = self.by_user.get(t["user"])
            topic = t["user"].split("?")[0][:90]
            lines.append(f"- turn {t['sequence']} ({t['intent']}): {topic}; answered with a concrete plan.")
            d = turn.durable if turn else None
            if d is None or len(cands) == 2:
                continue
            cands.append({
                "kind": d.kind, "subject": d.subject, "statement": d.quote, "content": f"The user said: {d.quote}",
                "strength": d.strength, "origin": "explicit", "recall_mode": d.recall,
                "applies_to_paths": list(d.paths), "aliases": list(d.aliases), "keywords": list(d.keywords),
                "sources": [{"turn_id": t["turn_id"], "role": "user", "quote": d.quote}],
            })
        while sum(len(ln) + 1 for ln in lines) > 3400:
            lines.pop(0)
        checkpoint = "Goals: explain and improve the project's config, network and scan code.\n" + "\n".join(lines)
        return Reply(content=json.dumps({"thread_checkpoint": checkpoint, "candidates": cands}, ensure_ascii=False),
                     delay=self.delay)

    def consolidation(self, req: CapturedRequest) -> Reply:
        p = self._payload(req)
        related = {}
        for r in p["related_items"]:
            if r["kind"] != "discussion_context":
                related[identity_key(r["kind"], r["subject"], r["applies_to_paths"], None)] = r
        groups: dict[str, list[dict]] = {}
        for c in p["candidates"]:
            key = identity_key(c["kind"], c["subject"], c["applies_to_paths"], c["thread_id"])
            groups.setdefault(key, []).append(c)
        ops = []
        for key, cs in groups.items():
            last = cs[-1]
            fields = {k: last[k] for k in ("kind", "subject", "statement", "content", "strength", "origin",
                                           "recall_mode", "applies_to_paths", "aliases", "keywords")}
            ids = [c["candidate_id"] for c in cs]
            target = related.get(key)
            if target is not None and target["statement"] == last["statement"]:
                ops.append({"operation": "reject", "candidate_ids": ids, "target_id": None})
            elif target is not None:
                fields["aliases"] = list(dict.fromkeys(target["aliases"] + fields["aliases"]))
                ops.append({"operation": "revise", "candidate_ids": ids, "target_id": target["id"], **fields})
            else:
                ops.append({"operation": "create", "candidate_ids": ids, "target_id": None, **fields})
        return Reply(content=json.dumps({"operations": ops}, ensure_ascii=False), delay=self.delay)


class TimedLock:
    """The runner's processing lock, measuring how long each acquisition waited (per thread)."""

    def __init__(self, inner, tl: threading.local) -> None:
        self.inner, self.tl = inner, tl

    def __enter__(self):
        t0 = time.perf_counter()
        self.inner.acquire()
        self.tl.lock_wait = getattr(self.tl, "lock_wait", 0.0) + time.perf_counter() - t0
        return self

    def __exit__(self, *exc) -> None:
        self.inner.release()


@dataclass
class StepRecord:
    kind: str
    jobs: int
    status: str
    total: float
    model: float
    lock_wait: float

    @property
    def overhead(self) -> float:
        return self.total - self.model - self.lock_wait


@dataclass
class RunResult:
    name: str
    turns: int
    elapsed: float
    steps: list[StepRecord] = field(default_factory=list)
    idle_steps: int = 0
    idle_time: float = 0.0
    requests: list[CapturedRequest] = field(default_factory=list)
    job_counts: dict[str, int] = field(default_factory=dict)
    batch_sizes: Counter = field(default_factory=Counter)
    items: int = 0
    revisions: int = 0
    candidates: Counter = field(default_factory=Counter)
    flush: dict[str, int] = field(default_factory=dict)
    cpu: float = 0.0  # this process's CPU time for the whole run (app threads + worker + stub)


def run_conversation(base: Path, name: str, turns: list[Turn], *, chat_s: float, memory_s: float) -> RunResult:
    stub = StubLLMServer()
    script = ModelScript(turns, memory_s)
    for task in ("extraction", "extraction_repair"):
        stub.default(task, script.extraction)
    for task in ("consolidation", "consolidation_repair"):
        stub.default(task, script.consolidation)
    settings = bench_settings(base / "home", llm_base_url=stub.base_url, llm_api_key="bench-fake-key",
                              llm_model="gpt-4o", llm_max_retries=0)
    mgr = MemoryManager(make_repo(base, f"project-{name}"), settings)
    result = RunResult(name, len(turns), 0.0)
    tl = threading.local()
    runner = mgr.runner
    runner.lock = TimedLock(runner.lock, tl)
    client = mgr.memory_model.client
    orig_complete, orig_step = client.complete, runner.step
    rec_lock = threading.Lock()

    def complete(**kw):
        t0 = time.perf_counter()
        try:
            return orig_complete(**kw)
        finally:
            tl.model = getattr(tl, "model", 0.0) + time.perf_counter() - t0

    def step(*a, **kw):
        tl.model, tl.lock_wait = 0.0, 0.0
        t0 = time.perf_counter()
        out = orig_step(*a, **kw)
        dt = time.perf_counter() - t0
        with rec_lock:
            if out is None:
                result.idle_steps += 1
                result.idle_time += dt
            else:
                result.steps.append(StepRecord(out.kind, len(out.job_ids), out.status, dt, tl.model, tl.lock_wait))
        return out

    client.complete = complete
    runner.step = step
    try:
        t0 = time.perf_counter()
        c0 = time.process_time()
        mgr.start_background()
        for t in turns:
            h = mgr.begin_turn(t.user, intent=t.intent, scope_paths=t.scope, evidence_keys=t.evidence)
            if chat_s:
                time.sleep(chat_s)  # the main chat call
            mgr.complete_turn(h, t.answer)
        result.flush = mgr.process_pending().as_dict()
        result.elapsed = time.perf_counter() - t0
        result.cpu = time.process_time() - c0
        mgr.worker.stop(10)
        conn = mgr.store.conn()
        result.job_counts = {r[0]: r[1] for r in conn.execute("SELECT status, count(*) FROM memory_jobs GROUP BY status")}
        result.items = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
        result.revisions = conn.execute("SELECT count(*) FROM memory_items WHERE revision > 1").fetchone()[0]
        result.candidates = Counter({r[0]: r[1] for r in conn.execute(
            "SELECT status, count(*) FROM memory_candidates GROUP BY status")})
        result.requests = [r for r in stub.requests if r.task in MEMORY_TASKS]
        result.batch_sizes = Counter(s.jobs for s in result.steps if s.kind == "extraction")
        if stub.errors:
            print("stub errors:", stub.errors[:3])
    finally:
        mgr.close()
        stub.close()
    return result


def report_conversation(results: list[RunResult]) -> None:
    rows = []
    for r in results:
        calls = len(r.requests)
        per_turn = calls / r.turns
        by_task = Counter(q.task for q in r.requests)
        toks = [estimate_messages_tokens(q.messages) for q in r.requests]
        ext = [s for s in r.steps if s.kind == "extraction"]
        con = [s for s in r.steps if s.kind == "consolidation"]
        ov_step = [s.overhead for s in r.steps]
        ov_job = sum(ov_step) / max(1, sum(s.jobs for s in r.steps))
        rows.append([
            ("conversation", r.name),
            ("turns completed / wall time (process CPU time)", f"{r.turns} / {r.elapsed:.1f} s ({r.cpu:.1f} s)"),
            ("Memory model calls (by task)", f"{calls}  ({', '.join(f'{k} {v}' for k, v in sorted(by_task.items()))})"),
            ("calls per completed turn  [target <= 0.5]",
             f"{per_turn:.3f}  {verdict(per_turn <= CALLS_PER_TURN_TARGET)}"),
            ("extraction batch sizes (jobs: steps)", ", ".join(f"{k}: {v}" for k, v in sorted(r.batch_sizes.items()))),
            ("input tokens per call avg / p95 / max",
             f"{sum(toks) / len(toks):.0f} / {percentile(toks, 95):.0f} / {max(toks)}"),
            ("input tokens per completed turn", f"{sum(toks) / r.turns:.0f}"),
            ("worker overhead per step p50 / p95 (excl. model + lock wait)",
             f"{ms(percentile(ov_step, 50))} / {ms(percentile(ov_step, 95))}"),
            ("  extraction step p50 / consolidation step p50",
             f"{ms(percentile([s.overhead for s in ext], 50))} / "
             f"{ms(percentile([s.overhead for s in con], 50)) if con else '-'}"),
            ("worker overhead per job (mean, job rows)", ms(ov_job)),
            ("model time per call (mean, incl. simulated latency)",
             ms(sum(s.model for s in r.steps) / max(1, calls))),
            ("idle polls (claim found nothing): count / mean", f"{r.idle_steps} / "
             f"{ms(r.idle_time / r.idle_steps) if r.idle_steps else '-'}"),
            ("jobs by status", ", ".join(f"{k} {v}" for k, v in sorted(r.job_counts.items()))),
            ("exit flush (process_pending)", ", ".join(f"{k} {v}" for k, v in r.flush.items() if v)),
            ("candidates by status", ", ".join(f"{k} {v}" for k, v in sorted(r.candidates.items()))),
            ("items created (active) / revisions", f"{r.items} / {r.revisions}"),
        ])
    print(f"{'figure':64}  " + "  ".join(f"{r.name:44}" for r in results))
    print("-" * 64 + "  " + "  ".join("-" * 44 for _ in results))
    for i in range(1, len(rows[0])):
        print(f"{rows[0][i][0]:64}  " + "  ".join(f"{str(rw[i][1]):44}" for rw in rows))


# =========================================================================== Part B: commit at scale

VOCAB = ("error handling config loader parser cache retry timeout logging test fixture database migration schema "
         "query index transaction lock thread worker queue job lease heartbeat memory recall alias keyword path "
         "scope patch review finding scanner rule import unused variable null check exception wrapper client "
         "server request response header token budget prompt model provider stream json yaml toml file reader "
         "writer naming style format lint type hint docstring comment async await callback event listener screen "
         "widget render layout theme plugin hook registry session history export archive backup snapshot "
         "compression encoding unicode locale timezone date parsing validation sanitizer escape quote shell "
         "subprocess signal process pool executor cancel deadline metric counter gauge trace span profile "
         "benchmark latency throughput memory leak allocation buffer slice array dict set tuple generator "
         "iterator decorator context manager property dataclass enum protocol interface abstract factory "
         "singleton adapter facade proxy observer strategy command builder visitor").split()
ZIPF_CUM = list(itertools.accumulate(1.0 / (i + 1) ** 0.9 for i in range(len(VOCAB))))
PATHS = [f"src/{a}/{b}.py" for a in ("app", "core", "net", "store", "scan", "ui", "cli", "util")
         for b in VOCAB[:40]] + [f"tests/test_{b}.py" for b in VOCAB[:60]]
CHECK_IDS = ["java:S1128", "python:S1481", "pmd:UnusedImports", "no-unused-vars", "cwe-79", "B101", "E501"]


SAMPLE = 20


class ItemGen:
    """Realistic item fields over a shared, Zipf-weighted vocabulary (common terms in many items)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.identities: set[tuple[str, tuple[str, ...]]] = set()
        self.seen = 0
        sentences = [self._words(8, 14).capitalize() + "." for _ in range(3000)]
        # (statement, content) bodies are reused across items; subjects and paths are not
        self.bodies = list(zip(sentences[:1500], sentences[1500:]))

    def _words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(VOCAB, cum_weights=ZIPF_CUM, k=self.rng.randint(lo, hi)))

    def fields(self) -> ItemFields:
        rng = self.rng
        while True:
            kind = "user_preference" if rng.random() < 0.4 else "project_decision"
            subject = self._words(2, 4)
            paths = tuple(rng.sample(PATHS, rng.choice((0, 1, 1, 2))))
            key = (subject, tuple(sorted(paths)))  # vocabulary is already in normalized form
            if key not in self.identities:
                self.identities.add(key)
                break
        keywords = [self._words(1, 2) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.2:
            keywords.append(rng.choice(CHECK_IDS))
        statement, content = rng.choice(self.bodies)
        return ItemFields(
            kind=kind, subject=subject, statement=statement, content=content,
            strength=rng.choice(("soft", "hard")), origin="explicit", recall_mode=rng.choice(("on_match", "always")),
            applies_to_paths=paths, aliases=tuple(self._words(2, 3) for _ in range(rng.randint(0, 2))),
            keywords=tuple(keywords),
        )


# Seeding only: the pure term functions `insert_revision` uses, memoized (vocabulary and statements
# repeat across items). Results are identical; only the seeding is faster.
MEMOIZED = ((item_writes, "normalize_phrase"), (item_writes, "normalize_path"), (postings, "content_terms"),
            (phrase_index, "phrase_terms"))


def _memoized(fn):
    if isinstance(fn("x"), list):  # hand out fresh lists, cache immutable tuples
        cached_tuple = functools.lru_cache(maxsize=None)(lambda text: tuple(fn(text)))
        return lambda text: list(cached_tuple(text))
    return functools.lru_cache(maxsize=None)(fn)


class _DeferTerms:
    """Seeding only: a connection proxy for `insert_revision` that runs every statement at once
    except the recall postings' `executemany`, whose rows it collects so they can be inserted
    afterwards in key order, in the same transaction (same rows, far better B-tree locality)."""

    def __init__(self, conn) -> None:
        self.conn, self.rows = conn, []

    def execute(self, *a):
        return self.conn.execute(*a)

    def executemany(self, sql: str, rows):
        if not sql.startswith("INSERT OR IGNORE INTO main.recall_postings"):
            return self.conn.executemany(sql, rows)  # the dictionary: later items look their IDs up
        self.sql = sql
        self.rows.extend(rows)
        return None

    def flush(self) -> None:
        if self.rows:
            self.rows.sort()
            self.conn.executemany(self.sql, self.rows)
            self.rows = []


def seed_items(mgr: MemoryManager, gen: ItemGen, n: int, sample: list[tuple[ItemFields, str]]) -> float:
    """Insert `n` active items in one transaction through `insert_revision`. Seeding only: the pure
    term functions are memoized, recall-term rows are inserted in key order at the end of the
    transaction, and the page cache is enlarged. Keeps a uniform sample of (fields, logical ID) of
    every item seeded so far in `sample`."""
    conn = mgr.store.conn()
    conn.execute("PRAGMA cache_size = -262144")
    originals = {(module, name): getattr(module, name) for module, name in MEMOIZED}
    for (module, name), fn in originals.items():
        setattr(module, name, _memoized(fn))
    t0 = time.perf_counter()
    try:
        now = time.time()
        with write_txn(conn):
            proxy = _DeferTerms(conn)
            for i in range(n):
                f = gen.fields()
                _, logical = insert_revision(proxy, f, logical_id=None, revision=1, now=now)
                if i % 20_000 == 19_999:
                    proxy.flush()
                gen.seen += 1
                if len(sample) < SAMPLE:
                    sample.append((f, logical))
                elif (k := gen.rng.randrange(gen.seen)) < SAMPLE:
                    sample[k] = (f, logical)
            proxy.flush()
    finally:
        for (module, name), fn in originals.items():
            setattr(module, name, fn)
        conn.execute("PRAGMA cache_size = -2000")  # back to SQLite's default for the measurement
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return time.perf_counter() - t0


def stage_candidate(mgr: MemoryManager, fields: ItemFields, turn_id: str) -> jobs.Lease:
    """A pending consolidation job with one candidate, claimed like the worker claims it (untimed)."""
    conn = mgr.store.conn()
    now = time.time()
    cand = CandidateOut(
        kind=fields.kind, subject=fields.subject, statement=fields.statement, content=fields.content,
        strength=fields.strength, origin="explicit", recall_mode=fields.recall_mode,
        applies_to_paths=list(fields.applies_to_paths), aliases=list(fields.aliases), keywords=list(fields.keywords),
        sources=[SourceOut(turn_id=turn_id, role="user", quote=fields.statement)],
    )
    with write_txn(conn):
        thread = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
        cjob = new_id("job")
        conn.execute("INSERT INTO memory_jobs (id, kind, status, thread_id, sequence, available_at, created_at,"
                     " updated_at) VALUES (?, 'consolidation', 'pending', ?, 0, ?, ?, ?)", (cjob, thread, now, now, now))
        extraction.insert_candidate(conn, cand, job_id=None, consolidation_job_id=cjob, thread_id=thread, now=now)
    lease = jobs.claim_next(conn, owner=mgr.owner, now=now, lease_seconds=120, max_wait=30, force=True, only={cjob})
    assert lease is not None and lease.job_ids == (cjob,)
    return lease


def commit_one(mgr: MemoryManager, lease: jobs.Lease) -> tuple[float, float, float, int, float, float]:
    """What the runner does around the model call for one consolidation job whose reply is one
    `create` (the summary refresh is no longer part of it: the runner only marks it due). Returns
    (total, related lookup, commit, related count, total CPU time of this process, related lookup CPU)."""
    conn = mgr.store.conn()
    c0 = time.process_time()
    t0 = time.perf_counter()
    cands = consolidation.load_candidates(conn, lease.job_ids[0])
    t1 = time.perf_counter()
    rc0 = time.process_time()
    related = consolidation.related_items(conn, cands)
    related_cpu = time.process_time() - rc0
    t2 = time.perf_counter()
    payload = {"candidates": [c.payload() for c in cands],
               "related_items": [consolidation.related_payload(r) for r in related]}
    c = payload["candidates"][0]
    reply = {"operations": [{"operation": "create", "candidate_ids": [c["candidate_id"]], "target_id": None,
                             **{k: c[k] for k in ("kind", "subject", "statement", "content", "strength", "origin",
                                                  "recall_mode", "applies_to_paths", "aliases", "keywords")}}]}
    out = validate_reply(ConsolidationOut, reply)
    consolidation.check_operations(out, cands, related)
    t3 = time.perf_counter()
    changed = consolidation.commit(conn, lease, out, cands, provider_calls=1, now=time.time())
    schedule = getattr(mgr.runner, "summary_schedule", None)  # (absent before the summary was coalesced)
    if schedule is not None:
        schedule.mark()  # what the runner does after a changed commit
    t4 = time.perf_counter()
    cpu = time.process_time() - c0
    assert changed == 1
    return t4 - t0, t2 - t1, t4 - t3, len(related), cpu, related_cpu


def _timed(fn) -> tuple[float, float, object]:
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def summary_bench(mgr: MemoryManager, gen: ItemGen, turn_id: str, reps: int) -> tuple[list[object], int]:
    """The review-summary refresh at the store's current size, all in this process: the old full
    render (`summary.render`, what every refresh did before it was incremental), the new full render
    (the state rebuilt from scratch: the first refresh of a process, or after a journal gap) and the
    incremental refresh after ONE consolidation commit (the commit untimed; text only, then the whole
    `summary.refresh` with the file write and the version update). Every incremental text is compared
    with a full render of the same data. Medians of `reps`. Returns (row, commits made)."""
    conn = mgr.store.conn()
    old_w, old_c, new_w, new_c, inc_w, inc_c, ref_w, ref_c = ([] for _ in range(8))
    same = True
    for _ in range(reps):
        w, c, _ = _timed(lambda: summary.render(conn, now=1.0))
        old_w.append(w)
        old_c.append(c)
        summary_state.reset()
        w, c, _ = _timed(lambda: summary_state.render(conn, now=1.0))
        new_w.append(w)
        new_c.append(c)
    fulls = summary_state.stats["full"]
    for _ in range(reps):
        commit_one(mgr, stage_candidate(mgr, gen.fields(), turn_id))
        w, c, (text, _) = _timed(lambda: summary_state.render(conn, now=1.0))
        inc_w.append(w)
        inc_c.append(c)
        same &= text == summary.render(conn, now=1.0)[0]
        commit_one(mgr, stage_candidate(mgr, gen.fields(), turn_id))
        w, c, _ = _timed(lambda: summary.refresh(conn, mgr.paths, now=1.0))
        ref_w.append(w)
        ref_c.append(c)
    incremental = summary_state.stats["full"] == fulls  # no refresh after a commit fell back to a full render
    active = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
    med = lambda v: percentile(v, 50)  # noqa: E731
    return [f"{active:,}", f"{ms(med(old_w))} (cpu {ms(med(old_c))})", f"{ms(med(new_w))} (cpu {ms(med(new_c))})",
            f"{ms(med(inc_w))} (cpu {ms(med(inc_c))})", f"x{med(old_c) / med(inc_c):,.0f}",
            f"{ms(med(ref_w))} (cpu {ms(med(ref_c))})",
            ("yes" if same else "NO") + ("" if incremental else " (a refresh fell back to a full render)")], 2 * reps


def scale_bench(base: Path, sizes: list[int], commits: int, summary_reps: int = 0,
                summary_rows: list[list[object]] | None = None) -> list[list[object]]:
    mgr = MemoryManager(make_repo(base, "project-scale"), bench_settings(base / "home"))
    gen = ItemGen(11)
    rows = []
    try:
        h = mgr.begin_turn("seed turn for candidate provenance")
        mgr.complete_turn(h, "ok")
        have = 0
        sample: list[tuple[ItemFields, str]] = []
        for size in sizes:
            seed_s = seed_items(mgr, gen, size - have, sample)
            have = size
            conn = mgr.store.conn()
            for _ in range(5):  # warm-up, not counted
                commit_one(mgr, stage_candidate(mgr, gen.fields(), h.turn_id))
            totals, lookups, commits_t, cpus, lookup_cpus = [], [], [], [], []
            for _ in range(commits):
                total, lookup, commit_t, _n, cpu, lookup_cpu = commit_one(
                    mgr, stage_candidate(mgr, gen.fields(), h.turn_id))
                cpus.append(cpu)
                lookup_cpus.append(lookup_cpu)
                totals.append(total)
                lookups.append(lookup)
                commits_t.append(commit_t)
            have += 5 + commits
            active = conn.execute("SELECT count(*) FROM memory_items WHERE status = 'active'").fetchone()[0]
            terms = conn.execute("SELECT count(*) FROM recall_postings").fetchone()[0]
            # the worker re-renders memory_summary.md coalesced (at most once per few seconds, and at
            # exit/close), outside any commit: one render after this batch of commits
            conn.execute("UPDATE memory_meta SET data_version = data_version + 1 WHERE id = 1")
            c0 = time.process_time()
            t0 = time.perf_counter()
            summary.refresh(conn, mgr.paths, now=time.time())
            refresh = time.perf_counter() - t0
            refresh_cpu = time.process_time() - c0
            # a restatement of an existing item (same subject and paths) needs that item in the
            # registry the model sees, or the model cannot revise it (identity checks then refuse a create)
            found = 0
            for f, logical in sample:
                probe = consolidation.Candidate("probe", None, {**f.as_json_dict(), "statement": "restated"}, [])
                found += any(r["logical_id"] == logical for r in consolidation.related_items(conn, [probe]))
            ref = REFERENCE.get(size)
            p95 = percentile(totals, 95)
            rows.append([
                f"{active:,}", f"{terms:,}", f"{seed_s:.1f} s",
                f"{ms(percentile(totals, 50))} / {ms(p95)}",
                f"{ms(percentile(cpus, 50))} / {ms(percentile(cpus, 95))}",
                f"{ms(percentile(lookups, 50))} / {ms(percentile(lookups, 95))}"
                f" (cpu p50 {ms(percentile(lookup_cpus, 50))})",
                f"{ms(percentile(commits_t, 50))} / {ms(percentile(commits_t, 95))}",
                f"{ref:.1f} s published (x{ref / percentile(totals, 50):,.0f})" if ref else "-",
                (f"<= 10 ms: {verdict(p95 <= COMMIT_TARGET)}; cpu p50 <= 3.5 ms: "
                 f"{verdict(percentile(cpus, 50) <= COMMIT_CPU_P50_TARGET)}") if size >= 100_000 else "-",
                f"{ms(refresh)} (cpu {ms(refresh_cpu)})",
                f"{found}/{len(sample)}",
            ])
            if summary_reps and summary_rows is not None:
                row, made = summary_bench(mgr, gen, h.turn_id, summary_reps)
                summary_rows.append(row)
                have += made
    finally:
        mgr.close()
    return rows


# =========================================================================== Part C: claims vs history


def claim_bench(base: Path, sizes: list[int], polls: int = 30) -> list[list[object]]:
    """An idle `claim_next` (what every worker poll and every turn-end wake-up runs, inside BEGIN
    IMMEDIATE, so turn writes wait for it) on a store whose history holds N finished extraction
    jobs (one per ended turn). History rows are inserted with plain SQL (no bulk API exists)."""
    mgr = MemoryManager(make_repo(base, "project-history"), bench_settings(base / "home"))
    rows = []
    try:
        conn = mgr.store.conn()
        have = 0
        for n in sizes:
            now = time.time()
            with write_txn(conn):
                thread = conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]
                turns, done = [], []
                for i in range(have, n):
                    tid = new_id("turn")
                    turns.append((tid, thread, i + 1, f"question {i}", f"answer {i}", now - 60, now - 59))
                    done.append((new_id("job"), thread, tid, i + 1, now - 59, now - 59, now - 58, now - 58))
                conn.executemany(
                    "INSERT INTO turns (id, thread_id, sequence, intent, state, user_text, assistant_text, created_at,"
                    " ended_at) VALUES (?, ?, ?, 'general_chat', 'completed', ?, ?, ?, ?)", turns)
                conn.executemany(
                    "INSERT INTO memory_jobs (id, kind, status, thread_id, turn_id, sequence, attempts, provider_calls,"
                    " available_at, created_at, updated_at, completed_at, no_output_reason) VALUES"
                    " (?, 'extraction', 'succeeded_no_output', ?, ?, ?, 1, 1, ?, ?, ?, ?, 'no_candidates')", done)
            have = n
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            idle, idle_cpu = [], []
            for _ in range(polls):
                c0 = time.process_time()
                t0 = time.perf_counter()
                lease = jobs.claim_next(conn, owner=mgr.owner, now=time.time(), lease_seconds=120, max_wait=30)
                idle.append(time.perf_counter() - t0)
                idle_cpu.append(time.process_time() - c0)
                assert lease is None
            rows.append([f"{n:,}", f"{ms(percentile(idle, 50))} / {ms(percentile(idle, 95))}",
                         f"{ms(percentile(idle_cpu, 50))} / {ms(percentile(idle_cpu, 95))}"])
    finally:
        mgr.close()
    return rows


# =========================================================================== main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--chat-ms", type=float, default=60.0, help="paced run: main chat call per turn")
    ap.add_argument("--memory-ms", type=float, default=20.0, help="simulated latency of every Memory call")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--summary-reps", type=int, default=10, help="part D: repetitions per size (0: skip part D)")
    ap.add_argument("--parts", default="ABCD", help="which parts to run, e.g. BD (D needs B's stores)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]

    with temp_dir("bench-pipeline-") as base:
        print("bench/pipeline.py — durable two-phase Memory pipeline (issue 3)")
        print(environment_line(base))
        print()
        t_all = time.perf_counter()
        parts = args.parts.upper()
        if "A" in parts:
            conversation_part(base, args)
        summary_rows: list[list[object]] = []
        if "B" in parts:
            scale_part(base, args, sizes, summary_rows if "D" in parts else None)
        if "C" in parts:
            print()
            print("C. Idle worker poll (jobs.claim_next finding nothing; holds the write lock) vs finished jobs in history")
            table(["finished extraction jobs", "claim_next p50 / p95", "cpu p50 / p95"],
                  claim_bench(base, [s for s in sizes if s]))
        if summary_rows:
            print()
            print(f"D. Review-summary refresh, measured in this run at each size of B (medians of {args.summary_reps}; "
                  "wall (cpu); text only unless noted)")
            table(["active items", "old full render (summary.render)", "new full render (state rebuilt)",
                   "incremental after 1 commit", "old/incr cpu", "whole refresh after 1 commit (incl. file write)",
                   "same text as full render"], summary_rows)
            print("  old = the full render every refresh did before (count every active item per kind, render all); "
                  "new full = the first refresh of a process or after a change-journal gap")
        print()
        print(f"total bench time {time.perf_counter() - t_all:.1f} s")


def conversation_part(base: Path, args: argparse.Namespace) -> None:
    turns = conversation(args.turns)
    durable = Counter(t.durable.kind if t.durable else "none" for t in turns)
    print(f"A. Scripted {args.turns}-turn conversation through the stub (real HTTP via the SDK); turns carrying a "
          f"durable statement: {sum(v for k, v in durable.items() if k != 'none')} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(durable.items()) if k != 'none')}; 2 are local corrections)")
    print(f"   paced: {args.chat_ms:.0f} ms chat call per turn, {args.memory_ms:.0f} ms per Memory call; "
          f"burst: turns back to back, {args.memory_ms:.0f} ms per Memory call")
    results = [
        run_conversation(base, "paced", turns, chat_s=args.chat_ms / 1000, memory_s=args.memory_ms / 1000),
        run_conversation(base, "burst", turns, chat_s=0.0, memory_s=args.memory_ms / 1000),
    ]
    report_conversation(results)


def scale_part(base: Path, args: argparse.Namespace, sizes: list[int], summary_rows: list[list[object]] | None) -> None:
    print()
    print(f"B. Committing ONE consolidated item (one create): load candidates + related_items + checks + "
          f"consolidation.commit; {args.commits} commits per size after 5 warm-up")
    rows = scale_bench(base, sizes, args.commits, args.summary_reps, summary_rows)
    table(["active items", "recall postings", "seed", "one item p50 / p95", "one item CPU p50 / p95",
           "related_items p50 / p95",
           "commit txn p50 / p95", "reference: published (ratio)", "target", "summary*", "registry**"], rows)
    print("* one memory_summary.md refresh after a data-version bump the change journal does not cover (so a full "
          "re-render of all active items), wall (cpu). The worker runs it coalesced, at most once per few seconds "
          "and at exit/close, never inside a commit; it is not in 'one item'. Part D has the incremental refresh")
    print("  reference: the reference implementation's published per-item figures (not measured here)")
    print(f"** of {SAMPLE} existing items (uniform sample), how many related_items returns for a candidate with "
          "the same subject and paths, i.e. a restatement the model should revise")


if __name__ == "__main__":
    main()
