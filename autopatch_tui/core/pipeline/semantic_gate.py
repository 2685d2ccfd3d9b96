"""The semantic gate: the evidence every extraction candidate rests on (after the provenance checks
of `extraction_rules.py`), and the meaning rules of every consolidation operation.

A model is fallible; the program is the guard. A preference or decision is kept only on evidence —
the user's own quoted clause is a directive, a commitment or a preference (`reading.py`) — and is
refused otherwise, with a named rule; nothing is kept in a weaker form ("kept but lowered"): a kept
explicit or adopted candidate is stored hard + always (`extraction_rules._standing`), since a rule
the user states without a limit lasts and a limited one is refused (`one_off_scope`).
`Judgement.lasting` is what the clause itself says (a lasting word, a frame), kept for the record. Rules and their reasoning: docs/memory.md ("The semantic
gate"); every rule name is in `RULES`.

Extraction (`refuse_candidate`, first broken rule wins):
- `empty_identity`, `quote_without_word`, `discussion_origin`, `inferred_counter_example`;
- an explicit preference/decision: a batch user quote that is the user's own standing word
  (`speech.py`: not someone else's words, `relayed`; not taken back later in the message or in a
  later turn, `withdrawn`; not ironic, `ironic`) whose clause reads as a directive, commitment
  or preference and shares the candidate's terms; otherwise the most specific of `code_fact`,
  `undecided`, `user_question`, `request_for_info`, `hedged`, `acknowledgement_only`,
  `one_off_scope`, `no_directive`, `off_meaning` (or `assistant_conclusion` when only the
  assistant concluded it);
- an adopted proposal: the reply affirms (`not_confirmed`, `ironic`, or `one_off_scope` for a time or
  place limit) and is not taken back by a later turn (`withdrawn`), the assistant quote proposes (`not_a_proposal`) and is not local (`one_off_scope`);
- a discussion: an open point the user raised (`discussion_not_open`), without code facts
  (`code_fact`) or a conclusion the user did not draw (`assistant_conclusion`).
Consolidation rules (`check_operation`, raised as MemoryContractError): `empty_identity`,
`origin_escalation`, `adopted_needs_assistant_and_user`, `code_fact`, `assistant_conclusion`. An
operation may write only an origin one of its candidates has, except that merging topic candidates
(`stores.topic_merge`) into a related item may keep that item's origin (`allowed_origins`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.pipeline import markers as M
from autopatch_tui.core.pipeline import speech
from autopatch_tui.core.pipeline.clauses import segments
from autopatch_tui.core.pipeline.contracts import CandidateOut, OperationOut
from autopatch_tui.core.pipeline.extraction_payload import ExtractionInput, TurnView
from autopatch_tui.core.pipeline.reading import (
    confirmation_refusal,
    is_open_point,
    proposal_refusal,
    read_quote,
)
from autopatch_tui.core.recall.terms import content_terms, normalize_phrase, query_terms

RULES = (
    "empty_identity", "quote_without_word", "discussion_origin", "inferred_counter_example", "code_fact", "undecided",
    "user_question", "request_for_info", "hedged", "acknowledgement_only", "one_off_scope", "no_directive",
    "off_meaning", "assistant_conclusion", "not_confirmed", "not_a_proposal", "discussion_not_open",
    "origin_escalation", "adopted_needs_assistant_and_user", "withdrawn", "relayed", "ironic",
)
# Whole-turn texts the gate compares against (assistant replies, user turns) are read up to this
# many characters from the start: enough for any conversational turn, bounded for a pasted log.
MAX_TURN_TEXT = 8000
# When no batch user quote carries the meaning, the reported rule is the most specific one found.
_PRIORITY = ("withdrawn", "relayed", "ironic", "code_fact", "undecided", "user_question", "request_for_info", "hedged", "one_off_scope",
             "acknowledgement_only", "no_directive", "off_meaning")


@dataclass(frozen=True)
class Judgement:
    """The gate's verdict on one candidate: the refusing rule (None = kept) and, for a kept
    preference or decision, whether its evidence says it lasts (hard + always)."""

    rule: str | None
    lasting: bool = False


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
    """Why this user clause does not carry an intent, or None when it does (its own reading)."""
    return read_quote(clause, clause).refusal()


def _pick(labels: Sequence[str]) -> str:
    return min(labels, key=lambda r: _PRIORITY.index(r) if r in _PRIORITY else len(_PRIORITY))


def aliases_cover_decision(subject: str, statement: str, content: str, aliases: Sequence[str]) -> bool:
    """A Chinese decision's English aliases cover the decided object AND the action, constraint or
    trade-off (the spec's "同时覆盖决定对象以及动作、约束或取舍"): an alias word naming an action,
    constraint or trade-off (`markers.alias_action_words`: "drop", "compatibility", "store … in UTC",
    "api returns json") that is not copied from the decision's own text, beside an English object
    term, new or copied, that is neither such a word nor generic ("old", "legacy")."""
    copied = set(content_terms(f"{subject} {statement} {content}"))
    english_copied = {t for t in copied if t.isascii() and any(ch.isalpha() for ch in t)}
    new: set[str] = set()
    actions: set[str] = set()
    named: set[str] = set()  # the concepts an alias names on its own: the decided object
    for alias in aliases:
        terms = {t for t in query_terms(alias) if t.isascii() and any(ch.isalpha() for ch in t)}
        new |= terms - copied
        if len(terms) == 1 and not any(M.is_alias_action(t) for t in terms):
            named |= {M.concept(t) for t in terms}  # a lone word names a thing ("caching", "cache")
            continue
        actions |= {t for w in M.alias_action_words(alias) for t in query_terms(w)} - copied
    # two words sharing a stem are one concept: an "action" restating the object an alias names on
    # its own ("cache layer" beside "caching") is the object said again, no action
    actions = {t for t in actions if M.concept(t) not in named}
    if not actions:
        return False
    return any(t not in actions and not M.is_alias_action(t) and t not in M.ALIAS_GENERIC_TERMS
               for t in new | english_copied)


# --------------------------------------------------------------------------- extraction


def refuse_candidate(cand: CandidateOut, inp: ExtractionInput, turns: Mapping[str, TurnView]) -> Judgement:
    """The gate's judgement of `cand`. Provenance was checked before."""
    if empty_identity(cand.subject, cand.statement):
        return Judgement("empty_identity")
    if any(not M.has_word(s.quote) and not _emoji_confirmation(cand, s) for s in cand.sources):
        return Judgement("quote_without_word")
    if cand.kind == "discussion_context" and cand.origin != "explicit":
        return Judgement("discussion_origin")
    if cand.origin == "inferred_repetition":
        return Judgement("inferred_counter_example" if _counter_example(cand, turns) else None)
    batch_user = [s for s in cand.sources if s.role == "user" and s.turn_id in inp.batch_ids]
    if cand.kind == "discussion_context":
        return Judgement(_discussion(cand, turns, batch_user))
    if M.is_file_name(cand.subject):
        return Judgement("code_fact")
    if cand.origin == "adopted_proposal":
        return _adopted(cand, turns, batch_user)
    return _explicit(cand, turns, batch_user)


def _emoji_confirmation(cand: CandidateOut, source: Any) -> bool:
    """A user's reply adopting a proposal with an affirmative sign alone ("👍", "✅"): a confirmation
    needs no word (issue 29); any other source does."""
    return (cand.origin == "adopted_proposal" and source.role == "user"
            and confirmation_refusal(source.quote) is None)


def _candidate_text(cand: CandidateOut) -> str:
    return f"{cand.subject} {cand.statement} {cand.content}"


def _meaning(cand: CandidateOut) -> set[str]:
    return meaning_terms(cand.subject, cand.statement, cand.content, cand.aliases, cand.keywords)


def _explicit(cand: CandidateOut, turns: Mapping[str, TurnView], batch_user: list) -> Judgement:
    meaning = _meaning(cand)
    labels: list[str] = []
    for s in batch_user:
        turn = turns[s.turn_id]
        voice = _voice(turn, s.quote, turns, meaning)
        if voice:
            labels.append(voice)
            continue
        reading = read_quote(turn.user, s.quote, repair=turn.intent in C.REPAIR_INTENTS, meaning=meaning)
        if reading.refusal() and speech.reported(turn.user[:MAX_TURN_TEXT], s.quote):
            # endorsed words of another speaker ("my lead says X, and she's right"): the user adopts X,
            # read X itself, not the report around it
            reading = read_quote(s.quote, s.quote, repair=turn.intent in C.REPAIR_INTENTS, meaning=meaning)
        label = reading.refusal()
        if label is None and not shares_meaning(s.quote, meaning, _candidate_text(cand)):
            label = "off_meaning"
        if label is None:
            return Judgement(None, reading.lasting)  # one quote of the user's own words carries it
        labels.append(label)
    if _assistant_concluded(cand, turns, meaning):
        return Judgement("assistant_conclusion")
    return Judgement(_pick(labels))


def _voice(turn: TurnView, quote: str, turns: Mapping[str, TurnView], meaning: set[str]) -> str | None:
    """Why the quoted words are not the user's standing word (`speech.py`), or None."""
    text = turn.user[:MAX_TURN_TEXT]
    if speech.relayed(text, quote):
        return "relayed"
    if speech.withdrawn(text, quote) or _withdrawn_later(turn, turns, meaning):
        return "withdrawn"
    if speech.ironic(text, quote):
        return "ironic"
    return None


def _withdrawn_later(turn: TurnView, turns: Mapping[str, TurnView], meaning: set[str]) -> bool:
    """The next user turn of the payload takes back what this turn said."""
    later = sorted((t for t in turns.values() if t.sequence > turn.sequence and t.user), key=lambda t: t.sequence)
    return bool(later) and speech.withdraws(later[0].user, meaning)


def _assistant_concluded(cand: CandidateOut, turns: Mapping[str, TurnView], meaning: set[str]) -> bool:
    """A cited turn's assistant text claims a conclusion about the candidate's terms."""
    for tid in dict.fromkeys(s.turn_id for s in cand.sources):
        text = turns[tid].assistant[:MAX_TURN_TEXT]
        if text and M.claims_conclusion(text) and set(content_terms(text)) & meaning:
            return True
    return False


def _adopted(cand: CandidateOut, turns: Mapping[str, TurnView], batch_user: list) -> Judgement:
    """An adopted proposal: an affirmative reply to an assistant proposal (both cited, the proposal
    first: `extraction_rules` checked the order). Lasting when the proposal or the reply says so."""
    meaning = _meaning(cand)
    replies = [(s, turns[s.turn_id]) for s in batch_user]
    offers = [s.quote for s in cand.sources if s.role == "assistant"]
    refusals = [("ironic" if speech.ironic(t.user[:MAX_TURN_TEXT]) or speech.mocks(t.user, offers) else None)
                or ("withdrawn" if _withdrawn_later(t, turns, meaning) else None)
                or confirmation_refusal(t.user[:MAX_TURN_TEXT]) for _, t in replies]
    if all(refusals):
        return Judgement(_pick(refusals) if set(refusals) <= set(_PRIORITY) else refusals[0])
    last = max(t.sequence for _, t in replies)
    proposals = [s for s in cand.sources if s.role == "assistant" and turns[s.turn_id].sequence < last]
    if proposals and all(proposal_refusal(_quote_text(turns[s.turn_id].assistant, s.quote)) for s in proposals):
        return Judgement("not_a_proposal")
    offered = [read_quote(turns[s.turn_id].assistant, s.quote, meaning=meaning) for s in proposals]
    if any(r.local for r in offered):
        return Judgement("one_off_scope")  # adopting a proposal limited to this place/patch stays local
    lasting = any(r.lasting for r in offered) or any(
        read_quote(t.user, s.quote, meaning=meaning).lasting for s, t in replies)
    if not lasting and any(t.intent in C.REPAIR_INTENTS for _, t in replies):
        return Judgement("one_off_scope")  # a review's agreement is about this patch unless it says it lasts
    if not any(shares_meaning(s.quote, meaning, _candidate_text(cand)) for s in cand.sources):
        return Judgement("off_meaning")
    return Judgement(None, lasting)


def _quote_text(text: str, quote: str) -> str:
    """The sentence(s) of an assistant text around a quote: "Here is my proposal: every error
    response uses RFC 7807" proposes even when only its second half is quoted."""
    return " ".join(s.raw for s in segments(text[:MAX_TURN_TEXT], quote))


def _discussion(cand: CandidateOut, turns: Mapping[str, TurnView], batch_user: list) -> str | None:
    fields = (cand.subject, cand.statement, cand.content)
    readings = [read_quote(turns[s.turn_id].user, s.quote) for s in batch_user]
    if readings and all(r.mood == "ack" for r in readings):
        return "acknowledgement_only"
    if M.is_file_name(cand.subject) or any(M.is_code_fact_clause(f) for f in fields if f):
        return "code_fact"
    if any(turns[s.turn_id].intent in C.REPAIR_INTENTS and r.local for s, r in zip(batch_user, readings)):
        return "one_off_scope"
    user_clauses = [c for s in cand.sources if s.role == "user"
                    for c in M.clauses_around(turns[s.turn_id].user, s.quote)]
    # the user drew the conclusion only in a clause that is no open point ("要不要改用 X？" concludes nothing)
    concluded = any(M.claims_conclusion(c) and not is_open_point(c, c) for c in user_clauses)
    if any(M.claims_conclusion(f) for f in fields) and not concluded:
        return "assistant_conclusion"
    if not any(is_open_point(turns[s.turn_id].user, s.quote) for s in batch_user):
        facts = [r for r in readings if r.refusal() == "code_fact"]
        return "code_fact" if facts and len(facts) == len(readings) else "discussion_not_open"
    user_texts = [turns[tid].user[:MAX_TURN_TEXT] for tid in dict.fromkeys(s.turn_id for s in cand.sources)]
    if M.cjk_dominant(" ".join(fields)) != M.cjk_dominant(" ".join(user_texts)):
        return None  # the user's words and the discussion are in different scripts: not comparable
    own = set(content_terms(" ".join(fields)))
    said = set(content_terms(" ".join(user_texts))) | {t for u in user_texts for t in query_terms(u)}
    replies = [turns[tid].assistant[:MAX_TURN_TEXT] for tid in dict.fromkeys(s.turn_id for s in cand.sources)]
    # a reply that only takes note of both sides lends the user's point words, it concludes nothing
    assistant = set(content_terms(" ".join(r for r in replies if not M.only_takes_note(r))))
    only_assistant = (own & assistant) - said
    if len(only_assistant) >= 2 and len(only_assistant) >= len(own & said):
        return "assistant_conclusion"
    return None


def _counter_example(cand: CandidateOut, turns: Mapping[str, TurnView]) -> bool:
    """A repair turn in the bounded payload, later than the first cited review and not cited
    itself, whose user text concerns the candidate and keeps the original behaviour."""
    cited = {s.turn_id for s in cand.sources}
    first = min(turns[t].sequence for t in cited)
    meaning = _meaning(cand)
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


__all__ = ["RULES", "Judgement", "aliases_cover_decision", "allowed_origins", "check_operation",
           "classify_user_clause", "empty_identity", "refuse_candidate"]
