"""Runs one quality-corpus case (tests/quality/cases.py) black-box, as a user's conversation would:
every ordinary turn is `autopatch-tui ask` through the CLI entry point (in-process, `cli.main.run`)
against the scripted OpenAI-compatible stub (`tests/support/llm_stub.py`, replies keyed by
`X-AutoPatch-Task`); the scripted model proposes the case's candidates from the extraction payload
it receives, then the outcome is read back through `memory list/show/search --json`.

Repair-intent turns (reviews with finding evidence keys) cannot be typed through `ask`; they are
written with the manager's own `begin_turn`/`complete_turn` (as the TUI's repair workflow does) and
processed by `autopatch-tui memory process`.

Only the refusal verdict is read from SQLite (`memory_jobs.failure_rule`, read-only): it is the
job diagnostics' rule column, and the consolidation refusal is read from the repair request the
stub received (its `violations`). `run_case` returns an `Outcome`; `check` lists every mismatch
with the case's expectations (empty = pass)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autopatch_tui.cli.main import run as cli_run
from autopatch_tui.core.recall.terms import normalize_phrase
from tests.quality.cases import Cand, Case
from tests.support.case_paths import materialize_paths
from tests.support.llm_stub import CapturedRequest, StubLLMServer

KEPT = "kept"


@dataclass
class Outcome:
    items: list[dict[str, Any]] = field(default_factory=list)  # ITEM_DETAIL per active item
    refused: Counter[str] = field(default_factory=Counter)  # extraction refusals by rule
    consolidation_rules: list[str] = field(default_factory=list)  # rules sent to consolidation_repair
    extraction_violations: list[str] = field(default_factory=list)  # rules sent to extraction_repair
    searches: dict[str, list[str]] = field(default_factory=dict)  # query -> result subjects
    errors: list[str] = field(default_factory=list)


def cli(*args: str, env: Mapping[str, str]) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli_run([*args, "--json"])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    text = out.getvalue()
    return rc, (json.loads(text) if text.strip() else None), err.getvalue()


def _payload(req: CapturedRequest) -> dict[str, Any]:
    return json.loads(req.messages[-1]["content"])


def _turn_ids(p: Mapping[str, Any]) -> dict[int, str]:
    """Case turn index -> turn ID of every turn in the payload (each case is one fresh thread, so
    turn i has sequence i + 1)."""
    views = [*p.get("turns", []), *p.get("recent_repair_evidence", [])]
    if p.get("adjacent_previous_turn"):
        views.append(p["adjacent_previous_turn"])
    return {v["sequence"] - 1: v["turn_id"] for v in views}


def _candidate(c: Cand, ids: Mapping[int, str]) -> dict[str, Any]:
    sources = [{"turn_id": ids.get(i, "turn-not-sent"), "role": role, "quote": quote}
               for i, role, quote in c.src]
    return {"kind": c.kind, "subject": c.subject, "statement": c.statement,
            "content": c.statement if c.content is None else c.content, "strength": c.strength,
            "origin": c.origin, "recall_mode": c.recall_mode, "applies_to_paths": list(c.paths),
            "aliases": list(c.aliases), "keywords": list(c.keywords), "sources": sources}


def _extraction(case: Case, *, repair: bool) -> Callable[[CapturedRequest], dict]:
    def reply(req: CapturedRequest) -> dict:
        p = _payload(req)
        ids = _turn_ids(p)
        batch = {t["sequence"] - 1 for t in p["turns"]}
        cands = case.repair if repair and case.repair is not None else case.cands
        out = [_candidate(c, ids) for c in cands if c.at in batch]
        return {"thread_checkpoint": "Thread checkpoint: goals and open points.", "candidates": out}
    return reply


def _op(c: Mapping[str, Any], operation: str = "create", target: str | None = None, **changes: Any) -> dict:
    fields = {k: c[k] for k in ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
                                "applies_to_paths", "aliases", "keywords")}
    fields.update(changes)
    return {"operation": operation, "candidate_ids": [c["candidate_id"]], "target_id": target, **fields}


def _consolidation(case: Case, *, repair: bool) -> Callable[[CapturedRequest], dict]:
    """Create one item per candidate, or revise the related item with the same subject; the case's
    `consolidate` changes apply to the primary reply only (the repair is the honest create)."""
    def reply(req: CapturedRequest) -> dict:
        p = _payload(req)
        related = {normalize_phrase(r["subject"]): r["id"] for r in p["related_items"]}
        ops = []
        for c in p["candidates"]:
            target = related.get(normalize_phrase(c["subject"]))
            changes = {} if repair else dict(case.consolidate)
            ops.append(_op(c, "revise" if target else "create", target, **changes))
        return {"operations": ops}
    return reply


def _assistant(case: Case) -> Callable[[CapturedRequest], str]:
    answers = {t.user: t.assistant for t in case.turns}

    def reply(req: CapturedRequest) -> str:
        users = [m for m in req.messages if m.get("role") == "user"]
        text = str(users[-1]["content"]) if users else ""
        # the longest turn text the request holds: an earlier turn's text may be part of a later one's
        found = [user for user in answers if user in text]
        return answers[max(found, key=len)] if found else "OK."
    return reply


def _seed_repair_turns(repo: Path, case: Case, env: Mapping[str, str]) -> None:
    from autopatch_tui.core.manager import MemoryManager
    from autopatch_tui.core.settings import load_settings

    settings = load_settings({**os.environ, **env})
    mgr = MemoryManager.open(repo, settings)
    try:
        for t in case.turns:
            h = mgr.begin_turn(t.user, intent=t.intent, scope_paths=list(t.paths), evidence_keys=list(t.keys))
            mgr.complete_turn(h, t.assistant)
    finally:
        mgr.close(join_timeout=5)


def run_case(case: Case, stub: StubLLMServer, home: Path) -> Outcome:
    out = Outcome()
    before = len(stub.requests)
    stub.default("chat", _assistant(case))
    stub.default("extraction", _extraction(case, repair=False))
    stub.default("extraction_repair", _extraction(case, repair=True))
    stub.default("consolidation", _consolidation(case, repair=False))
    stub.default("consolidation_repair", _consolidation(case, repair=True))
    with tempfile.TemporaryDirectory(prefix="quality-", dir=home) as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        (repo / ".git").mkdir()  # a checkout root, without running git
        env = {"AUTOPATCH_LLM_BASE_URL": stub.base_url, "AUTOPATCH_LLM_MODEL": "gpt-4o",
               "AUTOPATCH_LLM_API_KEY": "test-key", "AUTOPATCH_HOME": str(home), "AUTOPATCH_LLM_MAX_RETRIES": "0"}
        r = str(repo)
        materialize_paths(repo, case.turns)
        if any(t.intent not in ("general_chat", "code_explain") for t in case.turns):
            _seed_repair_turns(repo, case, env)
            rc, _, err = cli("memory", "process", "--repo", r, env=env)
            if rc != 0:
                out.errors.append(f"memory process exited {rc}: {err.strip()[:200]}")
        else:
            for t in case.turns:
                args = ["ask", t.user, "--intent", t.intent, "--repo", r]
                for p in t.paths:
                    args += ["--path", p]
                rc, _, err = cli(*args, env=env)
                if rc != 0:
                    out.errors.append(f"ask exited {rc}: {err.strip()[:200]}")
        rc, listed, err = cli("memory", "list", "--repo", r, env=env)
        if rc != 0:
            out.errors.append(f"memory list exited {rc}: {err.strip()[:200]}")
            return out
        for item in listed["items"]:
            _, detail, _ = cli("memory", "show", item["id"], "--repo", r, env=env)
            out.items.append(detail)
        for query in [q for q, _ in case.hits] + list(case.misses):
            _, found, _ = cli("memory", "search", query, "--repo", r, env=env)
            out.searches[query] = [x["subject"] for x in (found or {}).get("results", [])]
        conn = sqlite3.connect(f"file:{repo / '.autopatch-j' / 'memory.db'}?mode=ro", uri=True)
        try:
            for (rule,) in conn.execute("SELECT failure_rule FROM memory_jobs WHERE kind = 'extraction'"
                                        " AND failure_category IS NULL AND failure_rule IS NOT NULL"):
                for part in rule.split("."):
                    name, _, n = part.partition(":")
                    out.refused[name] += int(n or 1)
        finally:
            conn.close()
    for req in stub.requests[before:]:
        if req.task in ("consolidation_repair", "extraction_repair"):
            rules = [v["rule"] for v in _payload(req).get("violations", [])]
            (out.consolidation_rules if req.task == "consolidation_repair" else out.extraction_violations).extend(rules)
    return out


def expected_kinds(case: Case) -> Counter[str]:
    if case.items is not None:
        return Counter(case.items)
    final = case.repair if case.repair is not None else case.cands
    return Counter(c.kind for c in final if c.expect == KEPT)


def check(case: Case, out: Outcome) -> list[str]:
    """Every way the outcome differs from the case's expectations."""
    bad = list(out.errors)
    kinds = Counter(i["kind"] for i in out.items)
    if kinds != expected_kinds(case):
        bad.append(f"items {dict(kinds)} != expected {dict(expected_kinds(case))}")
    for kind in case.forbidden:
        if kinds[kind]:
            bad.append(f"forbidden kind {kind} stored")
    want_refused = Counter(c.expect for c in case.cands if c.expect != KEPT)
    if +out.refused != want_refused:
        bad.append(f"refused {dict(out.refused)} != expected {dict(want_refused)}")
    if case.consolidation_rule and case.consolidation_rule not in out.consolidation_rules:
        bad.append(f"consolidation rule {case.consolidation_rule} not raised ({out.consolidation_rules})")
    if case.violation and case.violation not in out.extraction_violations:
        bad.append(f"violation {case.violation} not sent to the repair ({out.extraction_violations})")
    for query, subject in case.hits:
        if subject not in out.searches.get(query, []):
            bad.append(f"search {query!r} missed {subject!r}")
    for query in case.misses:
        if out.searches.get(query):
            bad.append(f"search {query!r} hit {out.searches[query]}")
    by_subject = {i["subject"]: i for i in out.items}
    final = case.repair if case.repair is not None else case.cands
    for c in final:
        if c.expect != KEPT or c.subject not in by_subject:
            continue
        item = by_subject[c.subject]
        roles = {s["role"] for s in item["sources"]}
        want = set(c.roles) if c.roles else {role for _, role, _ in c.src}
        if roles != want:
            bad.append(f"{c.subject!r}: source roles {sorted(roles)} != {sorted(want)}")
        if c.origin != item["origin"]:
            bad.append(f"{c.subject!r}: origin {item['origin']} != {c.origin}")
        if c.lasting is not None:
            want_standing = ("hard", "always") if c.lasting else ("soft", "on_match")
            if (item["strength"], item["recall_mode"]) != want_standing:
                bad.append(f"{c.subject!r}: standing {item['strength']}/{item['recall_mode']} != {want_standing}")
    for subject, revision in case.revisions.items():
        item = by_subject.get(subject)
        if item is None or item["revision"] != revision:
            bad.append(f"{subject!r}: revision {item and item['revision']} != {revision}")
    return bad
