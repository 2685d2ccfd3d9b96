"""The semantic gate: deterministic meaning checks on every extraction candidate (after the
provenance checks of `extraction_rules.py`) and on every consolidation operation.

A model is fallible; the program is the guard. Each refusal is a named rule (the names are listed
in `RULES` and documented with their reasoning in docs/memory.md, "The semantic gate"); the word
lists live in `markers.py`. Matching runs on the normalized clauses around each quote, never on the
whole turn, in Chinese, English and mixed text.

Extraction rules (`refuse_candidate`, first broken rule wins):
- `empty_identity`: subject or statement normalizes to nothing ("\\u200b", "???", "---", "   ");
- `quote_without_word`: a source quote without a letter or digit;
- `discussion_origin`: a discussion is the user's own open question: origin `explicit` only;
- `inferred_counter_example`: a later repair review in the payload where the user kept the
  original behaviour contradicts an inferred repetition;
(`one_off_scope` — "for this answer", "this time", "这次", "先…" — is checked before, with the
policy rules of extraction_rules.py, on the same clauses and `markers.is_one_off`.)
- `code_fact`: support (or a discussion's fields) stating what the code/config currently is;
- `undecided`, `user_question`, `request_for_info`, `hedged`, `acknowledgement_only`,
  `off_meaning`: no batch user quote of an explicit preference/decision asserts an intent that
  shares the candidate's terms; an adopted proposal's confirmation must not be a question, hedge or
  open point;
- `assistant_conclusion`: a conclusion only the assistant drew (a decision claimed from the user's
  question, a discussion whose fields carry the assistant's verdict).
Consolidation rules (`check_operation`, raised as MemoryContractError): `empty_identity`,
`origin_escalation`, `adopted_needs_assistant_and_user`, `code_fact`, `assistant_conclusion`. An
operation may write only an origin one of its candidates has, except that merging topic candidates
(`stores.topic_merge`) into a related item may keep that item's origin (`allowed_origins`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.pipeline import markers as M
from autopatch_tui.core.pipeline.contracts import CandidateOut, OperationOut
from autopatch_tui.core.pipeline.extraction_payload import ExtractionInput, TurnView
from autopatch_tui.core.recall.terms import content_terms, normalize_phrase, query_terms

RULES = (
    "empty_identity", "quote_without_word", "discussion_origin", "inferred_counter_example", "code_fact", "undecided", "user_question", "request_for_info", "hedged", "acknowledgement_only",
    "off_meaning", "assistant_conclusion", "origin_escalation", "adopted_needs_assistant_and_user",
)
# Whole-turn texts the gate compares against (assistant replies, user turns) are read up to this
# many characters from the start: enough for any conversational turn, bounded for a pasted log.
MAX_TURN_TEXT = 8000
# When no batch user quote carries the meaning, the reported rule is the most specific one found.
_PRIORITY = ("code_fact", "undecided", "user_question", "request_for_info", "hedged", "acknowledgement_only",
             "off_meaning")


# --------------------------------------------------------------------------- helpers


def empty_identity(subject: str, statement: str) -> bool:
    return not normalize_phrase(subject) or not normalize_phrase(statement)


def meaning_terms(subject: str, statement: str, content: str, aliases: Iterable[str] = (),
                  keywords: Iterable[str] = ()) -> set[str]:
    return set(content_terms(" ".join([subject, statement, content, *aliases, *keywords])))


def shares_meaning(quote: str, meaning: set[str], candidate_text: str) -> bool:
    """The quote shares a term with the candidate. A quote in another script than the candidate
    (a Chinese quote, an English statement) cannot be compared without translation: accepted."""
    if set(query_terms(quote)) & meaning or set(content_terms(quote)) & meaning:
        return True
    return M.cjk_dominant(quote) != M.cjk_dominant(candidate_text)


def classify_user_clause(clause: str) -> str | None:
    """Why this user clause does not assert an intent, or None when it does."""
    if M.is_code_fact_clause(clause):
        return "code_fact"
    if M.is_undecided(clause):
        return "undecided"
    if M.is_question(clause):
        return "user_question"
    if M.is_info_request(clause):
        return "request_for_info"
    if M.is_hedged(clause):
        return "hedged"
    if M.is_acknowledgement(clause) or M.is_apply_only(clause):
        return "acknowledgement_only"
    return None


def _clauses(turn: TurnView, role: str, quote: str) -> list[str]:
    return M.clauses_around(turn.user if role == "user" else turn.assistant, quote)


def _label(turn: TurnView, quote: str) -> str | None:
    """The first non-intent label among the clauses around a user quote (all must assert)."""
    for clause in _clauses(turn, "user", quote):
        label = classify_user_clause(clause)
        if label:
            return label
    return None


def _pick(labels: Sequence[str]) -> str:
    return min(labels, key=_PRIORITY.index)


def aliases_cover_decision(subject: str, statement: str, content: str, aliases: Sequence[str]) -> bool:
    """A Chinese decision's English aliases cover the decided object AND the action, constraint or
    trade-off with English terms of their own: at least two new English terms that are not all
    generic ("old", "legacy"), or one new action term next to an English object term."""
    copied = set(content_terms(f"{subject} {statement} {content}"))
    english_copied = {t for t in copied if t.isascii() and any(ch.isalpha() for ch in t)}
    new: set[str] = set()
    for alias in aliases:
        new |= {t for t in query_terms(alias) if t.isascii() and any(ch.isalpha() for ch in t)} - copied
    if len(new) >= 2 and new - M.ALIAS_GENERIC_TERMS:
        return True
    return bool(new & M.ALIAS_ACTION_TERMS) and bool(english_copied | (new - M.ALIAS_ACTION_TERMS))


# --------------------------------------------------------------------------- extraction


def refuse_candidate(cand: CandidateOut, inp: ExtractionInput, turns: Mapping[str, TurnView]) -> str | None:
    """The first semantic rule `cand` breaks, or None. Provenance was checked before."""
    if empty_identity(cand.subject, cand.statement):
        return "empty_identity"
    if any(not M.has_word(s.quote) for s in cand.sources):
        return "quote_without_word"
    if cand.kind == "discussion_context" and cand.origin != "explicit":
        return "discussion_origin"
    if cand.origin == "inferred_repetition":
        return "inferred_counter_example" if _counter_example(cand, turns) else None
    batch_user = [s for s in cand.sources if s.role == "user" and s.turn_id in inp.batch_ids]
    if cand.kind == "discussion_context":
        return _discussion(cand, turns, batch_user)
    if M.is_file_name(cand.subject):
        return "code_fact"
    if cand.origin == "adopted_proposal":
        return _adopted(cand, turns, batch_user)
    return _explicit(cand, turns, batch_user)


def _candidate_text(cand: CandidateOut) -> str:
    return f"{cand.subject} {cand.statement} {cand.content}"


def _explicit(cand: CandidateOut, turns: Mapping[str, TurnView], batch_user: list) -> str | None:
    meaning = meaning_terms(cand.subject, cand.statement, cand.content, cand.aliases, cand.keywords)
    labels: list[str] = []
    for s in batch_user:
        label = _label(turns[s.turn_id], s.quote)
        if label is None and not shares_meaning(s.quote, meaning, _candidate_text(cand)):
            label = "off_meaning"
        if label is None:
            return None  # one quote of the user's own words carries the meaning
        labels.append(label)
    if _assistant_concluded(cand, turns, meaning):
        return "assistant_conclusion"
    return _pick(labels)


def _assistant_concluded(cand: CandidateOut, turns: Mapping[str, TurnView], meaning: set[str]) -> bool:
    """A cited turn's assistant text claims a conclusion about the candidate's terms."""
    for tid in dict.fromkeys(s.turn_id for s in cand.sources):
        text = turns[tid].assistant[:MAX_TURN_TEXT]
        if text and M.claims_conclusion(text) and set(content_terms(text)) & meaning:
            return True
    return False


def _adopted(cand: CandidateOut, turns: Mapping[str, TurnView], batch_user: list) -> str | None:
    labels = []
    for s in batch_user:
        label = _label(turns[s.turn_id], s.quote)
        if label in ("acknowledgement_only", "off_meaning"):
            label = None  # a short confirmation is exactly what adoption looks like
        if label is None:
            break
        labels.append(label)
    else:
        return _pick(labels)
    meaning = meaning_terms(cand.subject, cand.statement, cand.content, cand.aliases, cand.keywords)
    quotes = [s.quote for s in cand.sources]
    if not any(shares_meaning(q, meaning, _candidate_text(cand)) for q in quotes):
        return "off_meaning"
    return None


def _discussion(cand: CandidateOut, turns: Mapping[str, TurnView], batch_user: list) -> str | None:
    fields = (cand.subject, cand.statement, cand.content)
    if all(M.is_acknowledgement(c) or M.is_apply_only(c)
           for s in batch_user for c in _clauses(turns[s.turn_id], "user", s.quote)):
        return "acknowledgement_only"
    if M.is_file_name(cand.subject) or any(M.is_code_fact_clause(f) for f in fields if f):
        return "code_fact"
    user_texts = [turns[tid].user[:MAX_TURN_TEXT] for tid in dict.fromkeys(s.turn_id for s in cand.sources)]
    user_clauses = [c for s in cand.sources if s.role == "user" for c in _clauses(turns[s.turn_id], "user", s.quote)]
    if any(M.claims_conclusion(f) for f in fields) and not any(M.claims_conclusion(c) for c in user_clauses):
        return "assistant_conclusion"
    if M.cjk_dominant(" ".join(fields)) != M.cjk_dominant(" ".join(user_texts)):
        return None  # the user's words and the discussion are in different scripts: not comparable
    own = set(content_terms(" ".join(fields)))
    said = set(content_terms(" ".join(user_texts))) | {t for u in user_texts for t in query_terms(u)}
    assistant = set(content_terms(" ".join(turns[tid].assistant[:MAX_TURN_TEXT] for tid in dict.fromkeys(
        s.turn_id for s in cand.sources))))
    only_assistant = (own & assistant) - said
    if len(only_assistant) >= 2 and len(only_assistant) >= len(own & said):
        return "assistant_conclusion"
    return None


def _counter_example(cand: CandidateOut, turns: Mapping[str, TurnView]) -> bool:
    """A repair turn in the bounded payload, later than the first cited review and not cited
    itself, whose user text concerns the candidate and keeps the original behaviour."""
    cited = {s.turn_id for s in cand.sources}
    first = min(turns[t].sequence for t in cited)
    meaning = meaning_terms(cand.subject, cand.statement, cand.content, cand.aliases, cand.keywords)
    for t in turns.values():
        if t.turn_id in cited or t.intent not in C.REPAIR_INTENTS or t.sequence <= first:
            continue
        user = t.user[:MAX_TURN_TEXT]
        if set(query_terms(user)) & meaning and M.keeps_original(user):
            return True
    return False


# --------------------------------------------------------------------------- consolidation


class UsedCandidate(Protocol):
    """What consolidation knows of a validated candidate (`consolidation.Candidate`). A `linked`
    attribute (absent: False) marks a topic candidate: one linked to an imported active item
    (`stores.topic_merge`), whose operation merges that item into the target."""

    fields: dict[str, object]
    sources: list[dict[str, str]]


class TargetItem(Protocol):
    """The related item an operation revises or supersedes (a `memory_items` row)."""

    def __getitem__(self, key: str) -> Any: ...


def _topic_merge(used: Sequence[UsedCandidate], target: TargetItem | None) -> bool:
    """The operation merges topic candidates (every one it uses) into the item it revises or supersedes."""
    return target is not None and bool(used) and all(getattr(c, "linked", False) for c in used)


def allowed_origins(used: Sequence[UsedCandidate], target: TargetItem | None = None) -> set[object]:
    """The origins an operation may write: its candidates' own; an operation merging topic
    candidates into `target` (the related item it revises or supersedes) may also keep the target's,
    which passed the gate when it was written. Never an origin neither had."""
    origins = {c.fields["origin"] for c in used}
    if _topic_merge(used, target):
        assert target is not None
        origins.add(target["origin"])
    return origins


def check_operation(op: OperationOut, used: Sequence[UsedCandidate],
                    target: TargetItem | None = None) -> None:
    """Semantic rules of one create/revise/supersede operation against the validated candidates it
    uses (and `target`, the related item it revises or supersedes, if any). Raises MemoryContractError(rule)."""
    assert op.subject is not None and op.statement is not None
    if empty_identity(op.subject, op.statement):
        raise MemoryContractError("empty_identity")
    if op.origin not in allowed_origins(used, target):
        raise MemoryContractError("origin_escalation")
    if op.origin == "adopted_proposal" and not any(
            c.fields["origin"] == "adopted_proposal" and {s["role"] for s in c.sources} >= {"user", "assistant"}
            for c in used) and not (_topic_merge(used, target) and target is not None
                                    and target["origin"] == "adopted_proposal"):
        raise MemoryContractError("adopted_needs_assistant_and_user")
    if op.kind == "discussion_context":
        fields = (op.subject, op.statement, op.content or "")
        if M.has_code_fact(" ".join(fields)) or any(M.is_code_fact_clause(f) for f in fields if f):
            raise MemoryContractError("code_fact")
        if any(M.claims_conclusion(f) for f in fields) and not _candidates_conclude(used):
            raise MemoryContractError("assistant_conclusion")


def _candidates_conclude(used: Sequence[UsedCandidate]) -> bool:
    """A candidate's own fields or user quotes already claim the conclusion."""
    texts = [str(c.fields[k]) for c in used for k in ("subject", "statement", "content")]
    texts += [s["quote"] for c in used for s in c.sources if s["role"] == "user"]
    return any(M.claims_conclusion(t) for t in texts)


__all__ = ["RULES", "aliases_cover_decision", "allowed_origins", "check_operation", "classify_user_clause", "empty_identity",
           "refuse_candidate"]
