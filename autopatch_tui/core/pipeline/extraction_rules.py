"""Validation of an extraction reply against the payload that was actually sent.

Two kinds of findings:
- *violations* break the contract in a way the payload can prove (unknown source turn, a quote that
  is not verbatim in the sent and RAW text, an empty checkpoint, a Chinese decision without an
  English recall alias). They trigger the single repair call.
- *rejections* drop one candidate by policy (no current user source, a one-off scope, an
  assistant-only claim, apply-only confirmation, weak repetition evidence, a code fact in a
  discussion) or by the semantic gate (`semantic_gate.py`: the user's own words must carry the
  meaning). The rest of the reply still commits; the refusals are counted per rule name.
Strength `hard` and recall `always` are kept only for explicitly lasting statements; otherwise they
are lowered to `soft` / `on_match` (counted as adjustments)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from autopatch_tui.core import constants as C
from autopatch_tui.core.pipeline import markers as M
from autopatch_tui.core.pipeline.contracts import CandidateOut, ExtractionOut
from autopatch_tui.core.pipeline.extraction_payload import ExtractionInput, TurnView
from autopatch_tui.core.pipeline.semantic_gate import aliases_cover_decision, refuse_candidate
from autopatch_tui.core.recall.terms import content_terms, query_terms

SOFT_RULES = {"cjk_decision_needs_english_alias"}  # tolerated after the repair


@dataclass(frozen=True)
class Violation:
    rule: str
    where: str  # e.g. "candidates[2].sources[0]" — never content

    def as_payload(self) -> dict[str, str]:
        return {"rule": self.rule, "where": self.where}


@dataclass
class Verdict:
    violations: list[Violation] = field(default_factory=list)
    accepted: list[CandidateOut] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    adjusted: Counter[str] = field(default_factory=Counter)

    def safe_summary(self, limit: int = 64) -> str | None:
        """The refusals as `rule:count` joined by "." (most frequent first), within `limit`
        characters and the job table's safe rule alphabet; None when nothing was refused."""
        out = ""
        for rule, n in sorted(self.rejected.items(), key=lambda kv: (-kv[1], kv[0])):
            part = f"{rule}:{n}"
            if len(out) + len(part) + (1 if out else 0) > limit:
                break
            out = f"{out}.{part}" if out else part
        return out or None

    def blocking(self, *, after_repair: bool) -> list[Violation]:
        if not after_repair:
            return self.violations
        return [v for v in self.violations if v.rule not in SOFT_RULES]


def _in_sent(inp: ExtractionInput, turn_id: str, role: str, quote: str) -> bool:
    return any(quote in seg for seg in inp.sent.get((turn_id, role), ()))


def _raw(turn: TurnView, role: str) -> str:
    return turn.user if role == "user" else turn.assistant


def _check_sources(i: int, cand: CandidateOut, inp: ExtractionInput, turns: dict[str, TurnView],
                   verdict: Verdict) -> bool:
    ok = True
    for j, src in enumerate(cand.sources):
        where = f"candidates[{i}].sources[{j}]"
        turn = turns.get(src.turn_id)
        if turn is None or not inp.sent.get((src.turn_id, src.role)):
            verdict.violations.append(Violation("source_turn_unknown", where))
            ok = False
        elif not _in_sent(inp, src.turn_id, src.role, src.quote) or src.quote not in _raw(turn, src.role):
            verdict.violations.append(Violation("quote_not_found", where))
            ok = False
    return ok


def _is_evidence_key(key: str) -> bool:
    """`<source_scan_id>:<finding_id>`, both parts present."""
    scan, sep, finding = key.partition(":")
    return bool(sep and scan.strip() and finding.strip())


def _bind_evidence(source_turns: list[TurnView]) -> bool:
    """One-to-one binding of distinct source turns to distinct finding evidence keys (bipartite
    matching). Only well-formed `<scan>:<finding>` keys can be bound."""
    match: dict[str, str] = {}

    def assign(turn: TurnView, seen: set[str]) -> bool:
        for key in filter(_is_evidence_key, turn.evidence_keys):
            if key in seen:
                continue
            seen.add(key)
            if key not in match or assign(next(t for t in source_turns if t.turn_id == match[key]), seen):
                match[key] = turn.turn_id
                return True
        return False

    return all(assign(t, set()) for t in source_turns)


def _inferred_ok(cand: CandidateOut, turns: dict[str, TurnView]) -> bool:
    if cand.kind != "user_preference":
        return False
    user_srcs = [s for s in cand.sources if s.role == "user"]
    src_turns = list({s.turn_id: turns[s.turn_id] for s in user_srcs}.values())
    if len(src_turns) < 3:
        return False
    if not _bind_evidence(src_turns):
        return False
    paths = {p for t in src_turns for p in t.scope_paths}
    if len(paths) < 2:
        return False
    meaning = set(content_terms(" ".join([cand.subject, cand.statement, cand.content, *cand.keywords, *cand.aliases])))
    return all(set(query_terms(s.quote)) & meaning for s in user_srcs)


def _policy(cand: CandidateOut, inp: ExtractionInput, turns: dict[str, TurnView]) -> str | None:
    """The first policy rule `cand` breaks, or None."""
    batch = inp.batch_ids
    user_srcs = [s for s in cand.sources if s.role == "user"]
    batch_user = [s for s in user_srcs if s.turn_id in batch]
    if cand.origin == "inferred_repetition":
        return None if _inferred_ok(cand, turns) else "inferred_evidence"
    if not batch_user:
        return "current_batch_source"
    for s in batch_user:
        turn = turns[s.turn_id]
        local_applies = turn.intent in C.REPAIR_INTENTS or cand.kind in C.PROJECT_KINDS
        if local_applies and any(M.is_one_off(c) for c in M.clauses_around(turn.user, s.quote)):
            return "one_off_scope"
    if cand.kind == "discussion_context":
        if any(s.role == "assistant" for s in cand.sources):
            return "discussion_assistant_source"
        if M.has_code_fact(" ".join((cand.subject, cand.statement, cand.content))):
            return "code_fact"
        return None
    if cand.origin == "adopted_proposal":
        # the proposal must precede the confirmation: an assistant text of the confirming turn (or
        # later) is the reply to the user, not the proposal the user adopted
        last_user_seq = max(turns[s.turn_id].sequence for s in batch_user)
        proposals = [s for s in cand.sources if s.role == "assistant" and turns[s.turn_id].sequence < last_user_seq]
        if not proposals:
            return "adopted_needs_assistant_and_user"
        if any(M.is_local_proposal(M.clause_around(turns[s.turn_id].assistant, s.quote)) for s in proposals):
            return "one_off_scope"  # adopting a proposal limited to this place/patch stays local
        if all(M.is_apply_only(turns[s.turn_id].user) for s in batch_user):
            return "apply_only"
        return None
    # explicit preference or decision: the user said it, in this batch, not just "apply"
    if all(M.is_apply_only(turns[s.turn_id].user) for s in batch_user):
        return "apply_only"
    return None


def _normalize(cand: CandidateOut, inp: ExtractionInput, turns: dict[str, TurnView], verdict: Verdict) -> CandidateOut:
    user_clauses = " ".join(M.clause_around(turns[s.turn_id].user, s.quote)
                            for s in cand.sources if s.role == "user")
    lasting = cand.origin in ("explicit", "adopted_proposal") and M.is_lasting(user_clauses)
    changes: dict[str, str] = {}
    if cand.origin == "inferred_repetition" or cand.kind == "discussion_context":
        changes = {"strength": "soft", "recall_mode": "on_match"}
    else:
        if cand.strength == "hard" and not lasting:
            changes["strength"] = "soft"
        if cand.recall_mode == "always" and not lasting:
            changes["recall_mode"] = "on_match"
    changes = {k: v for k, v in changes.items() if getattr(cand, k) != v}
    for k in changes:
        verdict.adjusted[f"{k}_not_lasting"] += 1
    return replace_candidate(cand, **changes) if changes else cand


def replace_candidate(cand: CandidateOut, **changes: object) -> CandidateOut:
    return cand.model_copy(update=changes)


def validate_extraction(out: ExtractionOut, inp: ExtractionInput) -> Verdict:
    verdict = Verdict()
    if not out.thread_checkpoint.strip():
        verdict.violations.append(Violation("checkpoint_empty", "thread_checkpoint"))
    turns = inp.turns_by_id()
    for i, cand in enumerate(out.candidates):
        if not _check_sources(i, cand, inp, turns, verdict):
            continue
        if (cand.kind == "project_decision" and cand.origin != "inferred_repetition"
                and M.cjk_dominant(cand.statement)
                and not aliases_cover_decision(cand.subject, cand.statement, cand.content, cand.aliases)):
            verdict.violations.append(Violation("cjk_decision_needs_english_alias", f"candidates[{i}].aliases"))
        rule = _policy(cand, inp, turns) or refuse_candidate(cand, inp, turns)
        if rule:
            verdict.rejected[rule] += 1
            continue
        verdict.accepted.append(_normalize(cand, inp, turns, verdict))
    return verdict


__all__ = ["Verdict", "Violation", "validate_extraction", "SOFT_RULES"]
