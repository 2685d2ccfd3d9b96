"""Adversarial extraction replies (hypothesis): zero crashes and zero invalid commits.

1. ≥ 1,000 replies straight into the validation path (`parse_json_object_reply` → `extraction.judge`
   → `extraction.commit` on a real SQLite store; no HTTP, for speed). Every committed candidate is
   re-checked by an independent oracle (tests/support/pipeline_helpers.oracle_violations).
2. ≥ 50 replies (primary + repair) through the full HTTP path of `runner.step`.

The examples are derandomized so a failure reproduces; the strategies mix plausible candidates
(quotes drawn from the real turn texts, every kind/origin/strength) with random JSON shapes, wrong
types, quotes that are not in the text, huge and unicode strings, NUL and lone surrogates, code
fences and prose."""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.llm.json_reply import parse_json_object_reply
from autopatch_tui.core.memory import jobs as jobs_mod
from autopatch_tui.core.pipeline import extraction
from tests.support.pipeline_helpers import (
    Turn,
    add_turn,
    ext_reply,
    oracle_violations,
    payload_of,
    rows,
)

HYPOTHESIS = {"deadline": None, "derandomize": True, "database": None, "suppress_health_check": list(HealthCheck)}

TURNS = [  # (key, intent, user, assistant, scope_paths, evidence_keys)
    ("E", "patch_revise", "Don't use var; use let for block scope. 本次先跳过空值检查。", "ok",
     ["src/d.js"], ["scan-3:F9"]),
    ("A", "patch_revise", "Don't use var; use let for block scope.",
     "I propose we version the API in the URL path.", ["src/c.js"], ["scan-1:F3"]),
    ("B1", "general_chat", "以后所有 Python 代码都用四个空格缩进。\x00我们要不要把配置从 YAML 换成 TOML？还没想好。",
     "好的。`load_config()` returns a dict.", [], []),
    ("B2", "patch_revise", "这里不要用 var，改成 let。Don't use var; use let for block scope.", "Patched src/a.js.",
     ["src/a.js"], ["scan-1:F1"]),
    ("B3", "patch_explain", "apply", "Patch applied; tests pass.", [], []),
    ("B4", "code_audit", ("Don't use var; use let for block scope. From now on, never commit generated files. "
     "同意，就按这个方案定下来。"), "I propose we always run the linter before committing.", ["src/b.js"],
     ["scan-2:F7", "scan-1:F2"]),
]
CLAUSE = re.compile(r"[^。！？!?;；\n.]+")

JUNK = [None, True, 0, -1, 3.5, "", "x", [], {}, ["a", 1], {"k": "v"}, [[{}]]]
JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10))
RANDOM_JSON = st.recursive(JSON_LEAF, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c,
                                                                                           max_size=3),
                           max_leaves=8)
WEIRD_TEXT = [
    "", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "😀" * 3, "x" * 5000, "[... 12 chars omitted ...]",
    "```", "null", "这里", "以后", "`code()` returns 1", "src/a.js:12", "ｕｓｅ ｌｅｔ", "use\u00a0let",
]
def _setup(make_manager, llm_stub):
    mgr = make_manager()
    llm_stub.default("extraction", ext_reply())
    handles = {}
    for key, intent, user, assistant, paths, keys in TURNS[:2]:
        handles[key] = add_turn(mgr, user, assistant, intent=intent, scope_paths=paths, evidence_keys=keys)
        assert mgr.runner.step(force=True) is not None
    for key, intent, user, assistant, paths, keys in TURNS[2:]:
        handles[key] = add_turn(mgr, user, assistant, intent=intent, scope_paths=paths, evidence_keys=keys)
    return mgr, handles


def _quote_pool(handles):
    texts = {(h.turn_id, role): text for (key, _, user, assistant, _, _), h in
             ((t, handles[t[0]]) for t in TURNS) for role, text in (("user", user), ("assistant", assistant))}
    pool = []
    for (tid, role), text in texts.items():
        pool.append((tid, role, text))
        pool.extend((tid, role, m.group(0).strip()) for m in CLAUSE.finditer(text) if m.group(0).strip())
        pool.append((tid, role, "use let"))
    return texts, pool


def _strategies(handles):
    """Cheap draws (mostly `sampled_from` over prepared pools) so that a thousand examples run in
    seconds: well-formed candidates whose quotes come from the real texts, next to junk."""
    texts, pool = _quote_pool(handles)
    ids = [h.turn_id for h in handles.values()]
    good = [{"turn_id": t, "role": r, "quote": q} for t, r, q in pool]
    good += [{"turn_id": handles[k].turn_id, "role": "user", "quote": " "} for k in ("B1", "B4")]  # no word
    bad = ([{"turn_id": t, "role": "assistant" if r == "user" else "user", "quote": q} for t, r, q in pool[:12]]
           + [{"turn_id": i, "role": "user", "quote": w} for i in ids for w in WEIRD_TEXT[:9]]
           + [{"turn_id": "turn-unknown", "role": "user", "quote": "use let"},
              {"turn_id": ids[0], "role": "system", "quote": "use let"},
              {"turn_id": ids[0], "role": "user", "quote": "use let", "extra": 1},
              {"turn_id": ids[0], "role": "user"}, "not a source", None])
    keys = sorted(texts)

    def substring(k):
        text = texts[k]
        return st.tuples(st.integers(0, len(text)), st.integers(0, len(text))).map(
            lambda ab: {"turn_id": k[0], "role": k[1], "quote": text[min(ab):max(ab)]})

    source = st.one_of(st.sampled_from(good), st.sampled_from(good), st.sampled_from(keys).flatmap(substring),
                       st.sampled_from(bad))
    text_pool = ["var keyword", "indentation", "config format", "API versioning", "旧 memory schema 不兼容，直接删除",
                 "Prefer let over var for block scope.", "Use four spaces.", "Open question: YAML or TOML?",
                 "never commit generated files", "`x()` returns 1", "see a.py:3", "parse(x) is defined in cli.py",
                 "???", "\u200b", "   "]  # the last three normalize to nothing: never an identity
    phrase_pool = [[], ["let"], ["var", "let"], ["backward compatibility"], ["tabs", "indentation"], ["memory schema"],
                   ["x" * 401], [""]]

    wellformed = st.fixed_dictionaries({
        "kind": st.sampled_from(["user_preference", "project_decision", "discussion_context"]),
        "subject": st.sampled_from(text_pool), "statement": st.sampled_from(text_pool),
        "content": st.sampled_from(text_pool + [""]),
        "strength": st.sampled_from(["hard", "soft"]),
        "origin": st.sampled_from(["explicit", "adopted_proposal", "inferred_repetition"]),
        "recall_mode": st.sampled_from(["always", "on_match"]),
        "applies_to_paths": st.sampled_from([[], ["src/a.js"], ["src/*.py", "docs"]]),
        "aliases": st.sampled_from(phrase_pool), "keywords": st.sampled_from(phrase_pool),
        "sources": st.lists(source, min_size=1, max_size=4),
    })
    enum_or_junk = {"kind": ["user_preference", "project_decision", "discussion_context", "fact", "User_Preference"],
                    "strength": ["hard", "soft", "medium"], "origin": ["explicit", "inferred", "adopted_proposal"],
                    "recall_mode": ["always", "on_match", "never"]}
    mangled = st.fixed_dictionaries(
        {k: st.sampled_from(v + JUNK) for k, v in enum_or_junk.items()}
        | {k: st.sampled_from(text_pool + WEIRD_TEXT + JUNK) for k in ("subject", "statement", "content")}
        | {k: st.sampled_from(phrase_pool + JUNK) for k in ("applies_to_paths", "aliases", "keywords")}
        | {"sources": st.one_of(st.lists(source, max_size=10), st.sampled_from(JUNK))},
        optional={"extra": st.sampled_from(JUNK)},
    )
    candidate = st.one_of(wellformed, wellformed, wellformed, mangled, st.sampled_from(JUNK))
    checkpoint = st.one_of(st.just("checkpoint text"), st.just("checkpoint text"),
                           st.sampled_from(WEIRD_TEXT + JUNK + ["c" * 4001]), st.text(max_size=12))
    reply_obj = st.one_of(
        st.fixed_dictionaries({"thread_checkpoint": checkpoint, "candidates": st.lists(candidate, max_size=4)}),
        st.fixed_dictionaries({"thread_checkpoint": checkpoint, "candidates": st.lists(wellformed, max_size=3)}),
        st.fixed_dictionaries({"thread_checkpoint": checkpoint, "candidates": st.lists(candidate, max_size=3)},
                              optional={"extra": st.sampled_from(JUNK), "thread_id": st.sampled_from(JUNK)}),
        RANDOM_JSON,
    )

    def render(obj, style):
        text = json.dumps(obj)
        return {"plain": text, "fence": f"```json\n{text}\n```", "prose": f"Here it is: {text}",
                "double": text + text, "truncated": text[: max(1, len(text) // 2)],
                "unicode": json.dumps(obj, ensure_ascii=False)}[style]

    raw = st.one_of(
        st.tuples(reply_obj, st.sampled_from(["plain", "plain", "fence", "prose", "double", "truncated", "unicode"]))
        .map(lambda p: render(*p)),
        st.text(max_size=30), st.sampled_from(WEIRD_TEXT),
    )
    return reply_obj, raw


class _Recipe:
    """Choices read from a hypothesis-drawn byte string: one cheap draw per example, and shrinking
    still works (fewer/zero bytes mean the first, simplest entry of every pool)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def below(self, n: int) -> int:
        if n <= 1:
            return 0
        if self.pos + 2 > len(self.data):
            return 0
        value = int.from_bytes(self.data[self.pos:self.pos + 2], "big")
        self.pos += 2
        return value % n

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def chance(self, k: int) -> bool:  # true in about 1 of k (false once the bytes run out)
        return self.below(k) == k - 1


def _builder(handles):
    texts, pool = _quote_pool(handles)
    ids = [h.turn_id for h in handles.values()]
    batch_ids = {handles[k].turn_id for k in ("B1", "B2", "B3", "B4")}
    batch_users = [(t, role, q) for t, role, q in pool if role == "user" and t in batch_ids and "\x00" not in q]
    batch_users += [(handles[k].turn_id, "user", " ") for k in ("B1", "B4")]  # a quote without a word
    let_sources = [{"turn_id": handles[k].turn_id, "role": "user", "quote": "use let"} for k in ("E", "A", "B2", "B4")]
    proposal = {"turn_id": handles["A"].turn_id, "role": "assistant", "quote": "I propose we version the API"}
    batch_assistant = [{"turn_id": t, "role": role, "quote": q} for t, role, q in pool
                       if role == "assistant" and t in batch_ids]
    nul_start = [{"turn_id": t, "role": role, "quote": q} for t, role, q in pool if q.startswith("\x00")]
    assert nul_start
    text_pool = ["var keyword", "indentation", "config format", "API versioning", "旧 memory schema 不兼容，直接删除",
                 "Prefer let over var for block scope.", "Use four spaces.", "Open question: YAML or TOML?",
                 "never commit generated files", "`x()` returns 1", "see a.py:3", "parse(x) is defined in cli.py",
                 "???", "\u200b", "   "]  # the last three normalize to nothing: never an identity
    phrase_pool = [[], ["let"], ["var", "let"], ["backward compatibility"], ["tabs", "indentation"],
                   ["memory schema"], ["x" * 401], [""], ["let", 3]]
    kinds = ["user_preference", "project_decision", "discussion_context"]
    origins = ["explicit", "adopted_proposal", "inferred_repetition"]

    def source(r: _Recipe):
        mode = r.below(8)
        if mode <= 2:
            t, role, q = r.pick(pool)
            return {"turn_id": t, "role": role, "quote": q}
        if mode == 3:  # an arbitrary slice of a real text
            (t, role), text = r.pick(sorted(texts.items()))
            a, b = sorted((r.below(len(text) + 1), r.below(len(text) + 1)))
            return {"turn_id": t, "role": role, "quote": text[a:b]}
        if mode == 4:
            t, role, q = r.pick(pool)
            return {"turn_id": t, "role": "assistant" if role == "user" else "user", "quote": q}
        if mode == 5:
            return {"turn_id": r.pick(ids + ["turn-unknown", ""]), "role": r.pick(["user", "assistant", "system"]),
                    "quote": r.pick(WEIRD_TEXT)}
        if mode == 6:
            return r.pick(let_sources + [proposal])
        return r.pick(JUNK + [{"turn_id": ids[0], "role": "user"}, {**let_sources[0], "extra": 1}])

    def likely(r: _Recipe):
        origin = r.pick(["explicit", "explicit", "adopted_proposal", "inferred_repetition"])
        if origin == "inferred_repetition":
            srcs = [dict(x) for x in let_sources[: 2 + r.below(3)]]
        else:
            srcs = [{"turn_id": t, "role": role, "quote": q} for t, role, q in
                    (r.pick(batch_users) for _ in range(1 + r.below(2)))]
            if r.chance(16):
                srcs = [dict(r.pick(nul_start))]
            if origin == "adopted_proposal" or r.chance(4):
                # the adjacent proposal, or (wrongly) an assistant text of the batch itself
                srcs.insert(0, dict(r.pick([proposal, proposal, *batch_assistant])))
        return {"kind": r.pick(kinds), "subject": r.pick(text_pool[:9] + text_pool[-3:]),
                "statement": r.pick(text_pool[:9]),
                "content": r.pick(text_pool + [""]), "strength": r.pick(["hard", "soft"]), "origin": origin,
                "recall_mode": r.pick(["always", "on_match"]), "applies_to_paths": r.pick([[], ["src/a.js"]]),
                "aliases": r.pick(phrase_pool[:5]), "keywords": r.pick(phrase_pool[:5]), "sources": srcs}

    def wellformed(r: _Recipe):
        return {"kind": r.pick(kinds), "subject": r.pick(text_pool), "statement": r.pick(text_pool),
                "content": r.pick(text_pool + [""]), "strength": r.pick(["hard", "soft"]),
                "origin": r.pick(origins), "recall_mode": r.pick(["always", "on_match"]),
                "applies_to_paths": r.pick([[], ["src/a.js"], ["src/*.py", "docs"]]),
                "aliases": r.pick(phrase_pool), "keywords": r.pick(phrase_pool),
                "sources": [source(r) for _ in range(1 + r.below(4))]}

    def mangled(r: _Recipe):
        c = wellformed(r)
        for _ in range(1 + r.below(3)):
            key = r.pick(sorted(c))
            action = r.below(4)
            if action == 0:
                del c[key]
            elif action == 1:
                c[key] = r.pick(JUNK + WEIRD_TEXT)
            elif action == 2:
                c["unexpected"] = r.pick(JUNK)
            else:
                c["sources"] = [source(r) for _ in range(r.below(11))]
        return c

    def candidate(r: _Recipe):
        return [likely, likely, wellformed, mangled, lambda r: r.pick(JUNK)][r.below(5)](r)

    def reply(r: _Recipe):
        shape = r.below(13)
        checkpoint = r.pick(["checkpoint text"] * 6 + WEIRD_TEXT + JUNK + ["c" * 4001])
        if shape <= 4:
            obj = {"thread_checkpoint": checkpoint, "candidates": [candidate(r) for _ in range(r.below(4))]}
        elif shape <= 9:
            obj = {"thread_checkpoint": "checkpoint text", "candidates": [likely(r) for _ in range(1 + r.below(2))]}
        elif shape == 10:
            obj = {"thread_checkpoint": checkpoint, "candidates": [candidate(r) for _ in range(r.below(4))],
                   r.pick(["extra", "thread_id", "Candidates"]): r.pick(JUNK)}
        elif shape == 11:
            obj = r.pick([{"candidates": []}, {"thread_checkpoint": "x"}, [], {}, {"thread_checkpoint": "x",
                          "candidates": {"kind": "user_preference"}}, {"thread_checkpoint": 3, "candidates": []}])
        else:
            return r.pick(WEIRD_TEXT + ["Sure! Here is the JSON.", "{", "{}}", '{"a": NaN}', '{"a":1,"a":2}',
                                        "[1, 2]", "```json\n```", "```\n{}\n"])
        style = r.below(12)
        if style <= 5:
            return obj  # already parsed
        text = json.dumps(obj)
        return [text, f"```json\n{text}\n```", f"```\n{text}\n```", f"Here it is: {text}", text + text,
                text[: max(1, len(text) // 2)], json.dumps(obj, ensure_ascii=False)][r.below(7)]

    return reply


def _oracle_inputs(mgr, inp):
    known = inp.turns_by_id()
    turns = {r["id"]: Turn(r) for r in rows(mgr, f"SELECT * FROM turns WHERE id IN ({','.join('?' * len(known))})",
                                            tuple(known))}
    return turns, inp.batch_ids


def test_a_thousand_adversarial_replies_through_the_validation_path(make_manager, llm_stub):
    mgr, handles = _setup(make_manager, llm_stub)
    conn = mgr.store.conn()
    clock_now = mgr.clock.now
    lease = jobs_mod.claim_next(conn, owner=mgr.owner, now=clock_now(), lease_seconds=3600, max_wait=30, force=True)
    assert lease is not None and len(lease.job_ids) == 4
    inp = extraction.prepare(conn, lease, mgr.memory_model)
    assert inp is not None and [t.turn_id for t in inp.evidence] == [handles["E"].turn_id]
    assert inp.adjacent.turn_id == handles["A"].turn_id
    turns, batch = _oracle_inputs(mgr, inp)
    build = _builder(handles)
    stats = {"parsed": 0, "contract": 0, "committed": 0, "accepted": 0}

    def reset():
        with conn:
            pass
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM memory_candidates")
        conn.execute("DELETE FROM memory_jobs WHERE kind = 'consolidation'")
        conn.execute("UPDATE threads SET checkpoint = '', checkpoint_sequence = 0")
        conn.execute(f"UPDATE memory_jobs SET status = 'leased', lease_owner = ?, lease_expires_at = ?,"
                     f" completed_at = NULL, no_output_reason = NULL WHERE id IN ({','.join('?' * 4)})",
                     (mgr.owner, clock_now() + 3600, *lease.job_ids))
        conn.execute("COMMIT")

    @settings(max_examples=1000, **HYPOTHESIS)
    @given(recipe=st.binary(min_size=96, max_size=192), after_repair=st.booleans())
    def run(recipe, after_repair):
        reply = build(_Recipe(recipe))
        if isinstance(reply, str):
            try:
                reply = parse_json_object_reply(reply)
            except MemoryContractError:
                stats["contract"] += 1
                return
        stats["parsed"] += 1
        out, verdict, rule = extraction.judge(reply, inp, after_repair=after_repair)  # never raises
        if rule is not None:
            assert isinstance(rule, str) and re.fullmatch(r"[a-z0-9_.:-]{1,64}", rule)
            return
        assert out is not None and verdict is not None and out.thread_checkpoint.strip()
        status = extraction.commit(conn, lease, inp, out, verdict, provider_calls=1, now=clock_now())
        stats["committed"] += 1
        try:
            committed = [dict(c) for c in conn.execute("SELECT * FROM memory_candidates").fetchall()]
            assert status == ("succeeded" if verdict.accepted else "succeeded_no_output")
            assert len(committed) == len(verdict.accepted)
            assert rows(mgr, "SELECT checkpoint FROM threads WHERE id = ?", (inp.thread_id,))[0]["checkpoint"] == \
                out.thread_checkpoint.strip()
            for c in committed:
                c["sources"] = [dict(s) for s in conn.execute(
                    "SELECT turn_id, role, quote FROM candidate_sources WHERE candidate_id = ? ORDER BY ordinal",
                    (c["id"],))]
                assert oracle_violations(c, turns=turns, batch=batch, sent=inp.sent) == [], c
                stats["accepted"] += 1
        finally:
            reset()

    run()
    # the strategies really reached every path, including valid commits of accepted candidates
    assert stats["contract"] > 50 and stats["parsed"] > 500
    assert stats["committed"] > 50 and stats["accepted"] > 20, stats


def test_adversarial_replies_through_the_http_pipeline(make_manager, llm_stub):
    mgr, handles = _setup(make_manager, llm_stub)
    llm_stub.default("extraction", ext_reply())
    while mgr.runner.step(force=True) is not None:  # the batch of the setup is processed normally
        pass
    reply_obj, raw = _strategies(handles)
    ascii_reply = st.one_of(reply_obj.map(json.dumps), raw.filter(lambda s: not re.search("[\ud800-\udfff]", s)))
    seen = {"succeeded": 0, "succeeded_no_output": 0, "failed": 0}
    counter = iter(range(10_000))

    @settings(max_examples=60, **HYPOTHESIS)
    @given(primary=ascii_reply, repair=ascii_reply)
    def run(primary, repair):
        n = next(counter)
        spec = TURNS[n % len(TURNS)]
        h = add_turn(mgr, spec[2], spec[3], intent=spec[1], scope_paths=spec[4], evidence_keys=spec[5])
        llm_stub.script("extraction", primary)
        llm_stub.script("extraction_repair", repair)
        job = rows(mgr, "SELECT id FROM memory_jobs WHERE turn_id = ?", (h.turn_id,))[0]["id"]
        outcome = mgr.runner.step(force=True, only={job})
        assert outcome is not None and outcome.status in seen, outcome
        seen[outcome.status] += 1
        while llm_stub.pending("extraction_repair"):  # unused repair reply
            llm_stub._queues["extraction_repair"].popleft()
        assert mgr.healthy
        req = [r for r in llm_stub.requests_for("extraction") if h.turn_id in r.messages[-1]["content"]][-1]
        p = payload_of(req)
        sent = {}
        views = [*p["turns"], *p["recent_repair_evidence"], *([p["adjacent_previous_turn"]]
                                                               if p["adjacent_previous_turn"] else [])]
        for v in views:
            sent[(v["turn_id"], "user")] = (v["user"],)
            sent[(v["turn_id"], "assistant")] = (v["assistant"],)
        turns = {r["id"]: Turn(r) for r in rows(mgr, f"SELECT * FROM turns WHERE id IN "
                                                      f"({','.join('?' * len(views))})",
                                                tuple(v["turn_id"] for v in views))}
        for c in rows(mgr, "SELECT * FROM memory_candidates WHERE job_id = ?", (job,)):
            c["sources"] = rows(mgr, "SELECT turn_id, role, quote FROM candidate_sources WHERE candidate_id = ?"
                                     " ORDER BY ordinal", (c["id"],))
            assert oracle_violations(c, turns=turns, batch={v["turn_id"] for v in p["turns"]}, sent=sent) == []
        job_row = rows(mgr, "SELECT * FROM memory_jobs WHERE id = ?", (job,))[0]
        assert job_row["status"] == outcome.status and job_row["completed_at"] is not None
        assert 1 <= job_row["provider_calls"] <= 2

    run()
    assert seen["failed"] > 5 and seen["succeeded"] + seen["succeeded_no_output"] > 5, seen
