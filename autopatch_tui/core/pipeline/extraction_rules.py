"""Validation of an extraction reply against the payload that was actually sent.

Two kinds of findings:
- *violations* break the contract in a way the payload can prove (unknown source turn, a quote that
  is not verbatim in the sent and RAW text, an empty checkpoint, a Chinese decision without an
  English recall alias). They trigger the single repair call.
- *rejections* drop one candidate by policy (no current user source, an assistant-only claim,
  apply-only confirmation, weak repetition evidence, a code fact in a discussion) or by the
  semantic gate (`semantic_gate.py`: the user's own clause must be the evidence). The rest of the
  reply still commits; each refusal is recorded with its rule and the turn of the candidate's first
  batch user source (`Verdict.refusals`), so a turn's refusals land on its own job.
The repaired reply goes through every rule again: a Chinese decision whose aliases still do not
cover it after the one repair is refused (`cjk_decision_needs_english_alias`), never tolerated —
unless it has no English alias at all (missing, not wrong): that decision is kept and noted
(`Verdict.adjusted["english_alias_missing"]`), since losing the user's explicit decision over a
missing recall phrase is worse than storing it findable by its Chinese words. An alias that adds a
numeral, a unit or a technical token the user never wrote is refused (`alias_adds`, `alias_facts.py`).
Strength and recall follow the spec, never "kept but lowered": a candidate the gate keeps is the
user's explicit or adopted lasting statement (anything it cannot read so is refused with a rule), so
it is `hard` (explicit) + `always` (it lasts: a standing rule stated without a limit lasts); changes
from the model's proposal are counted as adjustments. Inferred repetitions and discussions are always
`soft` + `on_match`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from autopatch_tui.core import constants as C
from autopatch_tui.core.pipeline import markers as M
from autopatch_tui.core.pipeline.alias_facts import RULE as ALIAS_ADDS_RULE
from autopatch_tui.core.pipeline.alias_facts import alias_adds
from autopatch_tui.core.pipeline.contracts import CandidateOut, ExtractionOut
from autopatch_tui.core.pipeline.extraction_payload import ExtractionInput, TurnView
from autopatch_tui.core.pipeline.model_reading import DISAGREEMENT_PREFIX, second_reading
from autopatch_tui.core.pipeline.model_reading import RULE as MODEL_READING_RULE
from autopatch_tui.core.pipeline.secret_gate import SECRET_RULE, candidate_has_secret
from autopatch_tui.core.pipeline.semantic_gate import (
    aliases_cover_decision,
    refuse_candidate,
)
from autopatch_tui.core.recall.terms import content_terms, query_terms

ALIAS_RULE = "cjk_decision_needs_english_alias"  # a violation before the repair, a refusal after it
# a note, never a refusal: a Chinese decision kept after the one repair although it has no English alias
ALIAS_MISSING_NOTE = "english_alias_missing"


def _aliases_missing(cand: CandidateOut) -> bool:
    """No alias holds a Latin letter: the English recall phrase is missing, not wrong."""
    return not any(any("a" <= ch.lower() <= "z" for ch in a) for a in cand.aliases)


@dataclass(frozen=True)
class Violation:
    rule: str
    where: str  # e.g. "candidates[2].sources[0]" — never content

    def as_payload(self) -> dict[str, str]:
        return {"rule": self.rule, "where": self.where}


def safe_summary(counts: Counter[str], limit: int = 64) -> str | None:
    """Refusal counts as `rule:count` joined by "." (most frequent first), within `limit`
    characters and the job table's safe rule alphabet; None when nothing was refused."""
    out = ""
    for rule, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        part = f"{rule}:{n}"
        if len(out) + len(part) + (1 if out else 0) > limit:
            break
        out = f"{out}.{part}" if out else part
    return out or None


def job_verdict(refusals: Counter[str], disagreements: Counter[str], limit: int = 64) -> str | None:
    """A job's safe verdict: its refusal pairs (`safe_summary`), then the readers' disagreements as
    `d-RULE:count` pairs (`model_reading.py`), within `limit` characters. When the readers disagreed,
    room is kept for the first disagreement pair, so `memory audit` can always see it."""
    ordered = sorted(disagreements.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [f"{DISAGREEMENT_PREFIX}{rule}:{n}" for rule, n in ordered]
    reserve = len(parts[0]) + 1 if parts else 0
    out = safe_summary(refusals, limit - reserve) or ""
    for part in parts:
        if len(out) + len(part) + (1 if out else 0) > limit:
            break
        out = f"{out}.{part}" if out else part
    return out or None


@dataclass
class Verdict:
    violations: list[Violation] = field(default_factory=list)
    accepted: list[CandidateOut] = field(default_factory=list)
    # (rule, turn ID of the candidate's first batch user source or None), one per refused candidate
    refusals: list[tuple[str, str | None]] = field(default_factory=list)
    adjusted: Counter[str] = field(default_factory=Counter)
    # the refused candidates themselves, for rescue (`refused_store`): (rule, turn ID, candidate)
    refused: list[tuple[str, str | None, CandidateOut]] = field(default_factory=list)
    # (rule, turn) where the gate and the model's own reading disagree (`model_reading.py`)
    disagreements: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def rejected(self) -> Counter[str]:
        return Counter(rule for rule, _ in self.refusals)

    def refuse(self, rule: str, cand: CandidateOut, inp: ExtractionInput) -> None:
        turn = _turn_of(cand, inp)
        self.refusals.append((rule, turn))
        self.refused.append((rule, turn, cand))

    def disagree(self, rule: str, cand: CandidateOut, inp: ExtractionInput) -> None:
        self.disagreements.append((rule, _turn_of(cand, inp)))

    def safe_summary(self, limit: int = 64) -> str | None:
        return safe_summary(self.rejected, limit)

    def by_turn(self) -> dict[str | None, Counter[str]]:
        """Refusal counts per turn ID (None: a candidate without a batch user source)."""
        return _per_turn(self.refusals)

    def disagreements_by_turn(self) -> dict[str | None, Counter[str]]:
        """The readers' disagreements per turn ID, as `by_turn`."""
        return _per_turn(self.disagreements)

    def blocking(self) -> list[Violation]:
        return self.violations


def _turn_of(cand: CandidateOut, inp: ExtractionInput) -> str | None:
    """The turn of the candidate's first batch user source (None when it has none)."""
    return next((s.turn_id for s in cand.sources if s.role == "user" and s.turn_id in inp.batch_ids), None)


def _per_turn(pairs: list[tuple[str, str | None]]) -> dict[str | None, Counter[str]]:
    out: dict[str | None, Counter[str]] = {}
    for rule, turn in pairs:
        out.setdefault(turn, Counter())[rule] += 1
    return out


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
        # a bare "ok"/"yes" answering a proposal in a chat turn adopts the proposed rule; in a repair
        # turn (applying a patch) it is about that change, like "apply"
        if all(M.is_apply_only(turns[s.turn_id].user, affirmatives=turns[s.turn_id].intent in C.REPAIR_INTENTS)
               for s in batch_user):
            return "apply_only"
        return None
    # explicit preference or decision: the user said it, in this batch, not just "apply"
    if all(M.is_apply_only(turns[s.turn_id].user) for s in batch_user):
        return "apply_only"
    return None


def _standing(cand: CandidateOut, verdict: Verdict) -> CandidateOut:
    """Strength and recall of a kept candidate: an explicit or adopted preference or decision the
    gate kept is a lasting statement (a limited, hedged, relayed, withdrawn … one is refused, never
    lowered): hard + always; an inferred repetition or a discussion: soft + on_match."""
    lasting = cand.origin != "inferred_repetition" and cand.kind != "discussion_context"
    want = {"strength": "hard" if lasting else "soft", "recall_mode": "always" if lasting else "on_match"}
    changes = {k: v for k, v in want.items() if getattr(cand, k) != v}
    for k in changes:
        verdict.adjusted[f"{k}_{'lasting' if lasting else 'not_lasting'}"] += 1
    return replace_candidate(cand, **changes) if changes else cand


def replace_candidate(cand: CandidateOut, **changes: object) -> CandidateOut:
    return cand.model_copy(update=changes)


def validate_extraction(out: ExtractionOut, inp: ExtractionInput, *, after_repair: bool = False) -> Verdict:
    verdict = Verdict()
    if not out.thread_checkpoint.strip():
        verdict.violations.append(Violation("checkpoint_empty", "thread_checkpoint"))
    turns = inp.turns_by_id()
    for i, cand in enumerate(out.candidates):
        if not _check_sources(i, cand, inp, turns, verdict):
            continue
        # a secret first: whatever else the candidate is, its text must never be stored
        rule = SECRET_RULE if candidate_has_secret(cand) else _policy(cand, inp, turns)
        judgement = None if rule else refuse_candidate(cand, inp, turns)
        rule = rule or (judgement.rule if judgement else None)
        # the model's own reading (`evidence`), beside the gate's: kept only when neither refuses
        second = second_reading(cand, rule, bool(judgement and judgement.lasting))
        if second.disagreement and rule != SECRET_RULE:  # a secret is no reading to disagree on
            verdict.disagree(second.disagreement, cand, inp)
        rule = rule or (MODEL_READING_RULE if second.refuses else None)
        if rule:
            verdict.refuse(rule, cand, inp)
            continue
        if judgement and cand.aliases and alias_adds(
                cand.aliases, [s.quote for s in cand.sources] + [cand.subject, cand.statement, cand.content]):
            verdict.refuse(ALIAS_ADDS_RULE, cand, inp)  # an alias states what the user did not ("1h TTL")
            continue
        if (cand.kind == "project_decision" and cand.origin != "inferred_repetition"
                and M.cjk_dominant(cand.statement)
                and not aliases_cover_decision(cand.subject, cand.statement, cand.content, cand.aliases)):
            if not after_repair:
                verdict.violations.append(Violation(ALIAS_RULE, f"candidates[{i}].aliases"))
                continue
            if _aliases_missing(cand):
                # the repair still gave no English alias at all: the user's explicit decision is kept
                # (losing it is worse than storing it without an English recall phrase), and noted
                verdict.adjusted[ALIAS_MISSING_NOTE] += 1
            else:  # the aliases are there but wrong: refused, never stored as they are
                verdict.refuse(ALIAS_RULE, cand, inp)
                continue
        # judgement None: the gate is switched off (bench/quality.py --baseline): the model's standing
        verdict.accepted.append(_standing(cand, verdict) if judgement else cand)
    return verdict


__all__ = ["ALIAS_MISSING_NOTE", "ALIAS_RULE", "Verdict", "Violation", "job_verdict", "safe_summary", "validate_extraction"]
