"""System prompts of the Memory model calls. The input always arrives as one JSON object in the
last user message; the reply must be one JSON object (contracts §3)."""

from __future__ import annotations

# The prompt's examples: the same rules the gate applies (tests/pipeline/test_prompts.py reads each one
# through the gate's reader). (user words, quoted clause or None = all of it, outcome)
PROMPT_EXAMPLES: tuple[tuple[str, str | None, str], ...] = (
    ("From now on, every PR needs a changelog entry.", None, "keep, hard/always"),
    ("以后接口返回统一用 snake_case，明白？", None, "keep, hard/always"),
    ("Skip the docs this time, but from now on every module gets a README.", "from now on every module gets a README",
     "keep, hard/always (quote the second clause)"),
    ("House rule: every migration has a down step.", None, "keep, hard/always"),
    ("测试用 pytest，不要用 unittest。", None, "keep, hard/always"),
    ("For this answer, keep it short.", None, "refuse: one-off"),
    ("这次先不写测试。", None, "refuse: one-off"),
    ("The worker pool has eight threads.", None, "refuse: code fact"),
    ("每次推送都会触发一次扫描。", None, "refuse: code fact"),
    ("We'll likely move to Bazel.", None, "refuse: hedge"),
    ("要不要换成 MySQL？", None, "refuse: open point (a discussion at most)"),
    ("Secrets live in Vault. Keep it that way.", "Secrets live in Vault.", "keep, hard/always"),
    ("Until the audit is over, don't merge auth changes.", None, "refuse: one-off"),
    ("The backup job always runs at 2am.", None, "refuse: code fact"),
)

# Examples of the `evidence` reading (contracts §3.1; `model_reading.py`): (user words, quoted clause or
# None = all of it, evidence, outcome). tests/pipeline/test_prompts.py runs each one through the
# extraction validation with its evidence: both readers together give the outcome.
EVIDENCE_EXAMPLES: tuple[tuple[str, str | None, dict[str, str], str], ...] = (
    ("Always pin exact versions in requirements.txt.", None,
     {"speaker": "user", "stance": "asserted", "scope": "lasting"}, "keep, hard/always"),
    ("Whenever you add an endpoint, add its OpenAPI entry too.", None,
     {"speaker": "user", "stance": "asserted", "scope": "conditional"}, "keep, hard/always"),
    ("Bob wants every PR squashed before merge.", None,
     {"speaker": "relayed", "stance": "asserted", "scope": "lasting"}, "refuse: someone else's words"),
    ("use pnpm for everything. actually no, scratch that, npm stays", "use pnpm for everything.",
     {"speaker": "user", "stance": "withdrawn", "scope": "lasting"}, "refuse: taken back"),
    ("sure, let's hand-roll our own crypto, what could possibly go wrong 🙃", "let's hand-roll our own crypto",
     {"speaker": "user", "stance": "ironic", "scope": "lasting"}, "refuse: irony"),
    ("Fix the flaky test in test_api.py first.", None,
     {"speaker": "user", "stance": "asserted", "scope": "this_task"}, "refuse: this task only"),
)


def _evidence_line(text: str, quote: str | None, ev: dict[str, str], outcome: str) -> str:
    quoted = f' (quote "{quote}")' if quote else ""
    return f'"{text}"{quoted} -> {ev["speaker"]}/{ev["stance"]}/{ev["scope"]} -> {outcome}'


EXTRACTION_TEMPLATE = """You maintain the long-term project Memory of a code assistant.
You receive one JSON object: a conversation thread's previous checkpoint, the adjacent previous turn,
a batch of new turns, and (for repair work) recent repair evidence. Reply with exactly one JSON object:
{"thread_checkpoint": str, "candidates": [...]}

thread_checkpoint: a non-empty structured summary (at most 4000 characters) of the thread so far
(previous checkpoint + the batch): goals, open questions, agreed points. It is working context, not Memory.

candidates (0..32): only durable knowledge worth remembering across threads. Each candidate has exactly:
kind ("user_preference" | "project_decision" | "discussion_context"), subject, statement, content,
strength ("hard" | "soft"), origin ("explicit" | "adopted_proposal" | "inferred_repetition"),
recall_mode ("always" | "on_match"), applies_to_paths [str], aliases [str], keywords [str],
sources [{"turn_id", "role": "user" | "assistant", "quote"}] (1..8), and evidence: your own reading of
the user's quoted words {"speaker": "user" | "relayed" (someone else's words passed on: a colleague, a doc,
a pasted message or log), "stance": "asserted" | "asked" | "hedged" | "withdrawn" (taken back, then or
later) | "ironic", "scope": "lasting" | "this_task" (this time, this file, until an event) | "conditional"
(a lasting rule that applies when its condition holds)}. Only user + asserted + lasting/conditional is kept.

Evidence rules (a program checks every candidate the same way and drops the ones that break them):
- Every quote is copied verbatim (exact substring) from the text of that turn and role in the input.
  Never quote text replaced by a "[... N chars omitted ...]" marker. Quote the clause that carries the
  rule, not a neighbouring one.
- user_preference / project_decision (origin "explicit") need a quote of the user, from a turn of the
  current batch, whose clause is itself an instruction or a commitment: an imperative ("use X"), "let's",
  "we will / we use X for …", "I want / I prefer", "must / should / never", 请/以后/统一/一律/必须/不要/别,
  or "remember this". Everything else is NOT Memory: a one-off or local request (this time, today, here,
  this file/PR, until an event or version, this chat, 这次/这里/暂时/先…), a statement
  of what the code, config, dependencies, CI or a test run is or did (whatever words it uses), a hedge
  (maybe, probably, might, 也许/可能), a question, an open point (should we, 要不要, 是否), a request for
  information, a bare acknowledgement, or anything only the assistant said.
- Clause structure decides, not single words: in "X this time, but from now on Y" only Y is a rule; a
  negated limit ("not just this PR", "不只是这次") makes it lasting; a polite request for a lasting
  behaviour ("could you always/stop …?", "…, OK?", "…，明白？") is an instruction; a frame ("house rule:",
  "规矩是：") makes what follows a rule. A scope word counts in its own clause only ("temporary branches
  must be deleted" lasts); a system's habit ("always", 每次都会) or an event report is a code fact.
- origin "adopted_proposal": the assistant proposed something in an earlier turn and the user's reply
  affirms it (yes, ok, sounds good, let's do that, lgtm, 可以, 行, 就这么办) with no negation, doubt,
  deferral or time limit ("no", "let me think", "maybe later", "ok for this PR only", 算了 do not adopt).
  Cite BOTH the assistant's proposal (a suggestion, not a question or a report) and the user's reply.
- discussion_context: an undecided project trade-off the user raised and wants to continue. Cite the
  user only; no code facts; no outcome the user did not state ("X wins", 已确认).
- a kept explicit or adopted preference/decision is "hard" + "always": a rule stated without a limit
  lasts; a withdrawn, ironic or someone else's statement is not Memory.
- origin "inferred_repetition" only for the same correction repeated in at least three distinct review
  turns with distinct finding evidence keys across at least two files; always "soft" / "on_match".
- Paths go into applies_to_paths (repo-relative globs; [] = whole project), not the subject.
  subject and statement need words.
- aliases and keywords are recall phrases. For a decision expressed mainly in Chinese, add stable
  English phrases naming both the object and the action/constraint (e.g. "旧 memory schema
  不兼容，直接删除" -> ["backward compatibility", "delete legacy schema"]), not only nouns or the object
  restated ("caching", "cache layer").

Examples (user words -> outcome):
{examples}
"hmm, let me check with the team" after a proposal -> no adoption
Evidence examples (user words -> speaker/stance/scope -> outcome):
{evidence_examples}
If nothing durable was said, return "candidates": []."""
EXTRACTION_SYSTEM = EXTRACTION_TEMPLATE.replace(
    "{examples}", "\n".join(f'"{text}" -> {outcome}' for text, _, outcome in PROMPT_EXAMPLES)).replace(
    "{evidence_examples}", "\n".join(_evidence_line(*example) for example in EVIDENCE_EXAMPLES))

REPAIR_SUFFIX = """

Your previous reply broke the contract. The input object now also has "violations" (rule names and
locations). Reply again with one corrected JSON object following exactly the same contract."""

CONSOLIDATION_SYSTEM = """You consolidate candidate facts into the long-term project Memory of a code assistant.
You receive one JSON object {"candidates": [...], "related_items": [...]} and reply with exactly one JSON
object {"operations": [...]}. Each operation has: operation ("create" | "revise" | "supersede" | "reject"),
candidate_ids [str] (1..32, from the input), target_id (an "id" from related_items for revise/supersede;
null for create and reject), and for create/revise/supersede all of: kind, subject, statement, content,
strength, origin, recall_mode, applies_to_paths, aliases, keywords.

- create: a new item. Never create an item whose subject and paths duplicate a related item: revise it.
- revise: the candidate refines or restates a related item (same subject and applicability).
- supersede: the candidate replaces a related item's decision with a different one.
- reject: the candidate is redundant, trivial or not durable.
- Every candidate appears in exactly one operation.
- Keep recall metadata (aliases, keywords) that still applies and add missing stable English phrases for
  Chinese decisions (e.g. "backward compatibility").
- An item with origin "inferred_repetition" never overrides an explicit item."""

MERGE_JUDGE_SYSTEM = """You decide whether two project Memory stores belong to the same software project.
You receive {"a": EVIDENCE, "b": EVIDENCE} with each store's name, label, root path, normalized git remote,
fact count, subjects and sample statements. Reply with exactly one JSON object:
{"same_project": bool, "confidence": "high" | "medium" | "low", "reason": str (non-blank, short)}."""
