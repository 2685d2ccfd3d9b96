"""The Memory gate's reading of what a user (or the assistant) said: the evidence a candidate rests on.

`read_quote(text, quote)` reads the segment(s) of a turn that a quote belongs to (`clauses.py`) and
returns a `Reading`: the clause's *mood* (a directive, a commitment, a preference, a request, a
question, a request for information, an acknowledgement, or a plain declarative), whether it is
hedged or undecided, and its *scope* (lasting, local/one-off, or neither). `Reading.refusal()` is
the rule that refuses an explicit preference or decision resting on it, or None: a candidate is
kept only on a directive, commitment or preference of the user's own clause — everything else is
refused, there is no "lower it and keep it".

`confirmation_refusal` reads a reply to an assistant proposal (an adoption needs an affirmative
confirmation with no negation, deferral, doubt or time limit) and `proposal_refusal` an assistant
quote (a proposal, not a question or a report). Word classes live in `lexicon.py`."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from autopatch_tui.core.pipeline import carry
from autopatch_tui.core.pipeline import lexicon as L
from autopatch_tui.core.pipeline.clauses import (
    LOCAL,
    Segment,
    adjacent,
    commas,
    main_part,
    mask,
    normalize,
    reason_head,
    segments,
)
from autopatch_tui.core.pipeline.markers import is_acknowledgement
from autopatch_tui.core.recall.terms import content_terms

KEEPABLE = ("directive", "commitment", "preference")
_TRAIL = " .!。！~～…'\"”)）】"


@dataclass(frozen=True)
class Reading:
    mood: str  # directive | commitment | preference | question | info | ack | declarative
    hedged: bool = False
    undecided: bool = False
    local: bool = False
    lasting: bool = False
    fact: bool = False
    repair: bool = False  # the turn has a repair intent: only an explicitly lasting clause is durable

    def refusal(self) -> str | None:
        """The rule refusing an explicit preference or decision that rests on this clause, or None."""
        if self.undecided:
            return "undecided"
        if self.mood == "ack":
            return "acknowledgement_only"
        if self.mood == "info":
            return "request_for_info"
        if self.mood == "question":
            return "user_question"
        if self.hedged:
            return "hedged"
        if self.mood not in KEEPABLE:
            return "code_fact" if self.fact else "no_directive"
        if self.local or (self.repair and not self.lasting):
            return "one_off_scope"
        return None


_CJK = re.compile("[\u3400-\u9fff]")


def _cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def _strip_lead(c: str) -> str:
    prev = None
    while prev != c:
        prev = c
        c = L.EN_LEAD.sub("", c)
        c = L.ZH_LEAD.sub("", c)
    return c.strip(" ,，:：-")


def _imperative(head: str) -> bool:
    words = head.replace(",", " ").split()
    if not words:
        return False
    if words[0] not in L.BASE_VERBS and not _open_verb(words):
        return False
    if len(words) > 2 and words[1] in L.FREQUENCY and words[2].endswith("s"):
        return False  # "lint always runs before the tests": a noun, an adverb, a verb
    if len(words) > 1 and (words[1] in L.PAST_IRREGULAR or (words[1].endswith("ed") and (
            len(words) == 2 or words[2] in L.FUNCTION_WORDS or words[2] in ("twice", "thrice") or words[2].endswith("ly")))):
        return False  # "deploy failed again since …", "build broke on main": a noun and its past tense
    return not any(w in L.FINITE for w in words[1:4])


def _thing_requested(head: str) -> bool:
    """A verbless phrase naming one particular thing ("the stack trace", "your plan"), "please" aside."""
    words = L.EN_PLEASE.sub(" ", head).split()
    return bool(words) and words[0] in L.DETERMINERS and carry.verbless(" ".join(words[1:]) or "x")


_CONTRAST_TAIL = re.compile(r"^(?:not|never|no|instead of|rather than|over|vs\.?|versus|and not)\s")


def _terse_norm(content: list[str], moods: list[str]) -> str | None:
    """The mood of a terse norm across its comma clauses: "Tabs, not spaces." and "Snake case for
    columns, please." are directives; "The stack trace, please." a one-time request. A version
    ("Postgres 15, not 14.") or a determiner-led subject ("The staging DB, not prod.") is no norm."""
    head = _strip_lead(content[0].strip(_TRAIL))
    rest = [c.strip(_TRAIL) for c in content[1:]]
    if moods[0] != "declarative" or not rest:
        return None
    if any(L.EN_PLEASE.fullmatch(c) for c in rest):
        if _thing_requested(head):
            return "question"
        return "directive" if carry.verbless(head) else None
    if carry.verbless(head, participle=True) and all(
            _CONTRAST_TAIL.match(c) and carry.verbless(_CONTRAST_TAIL.sub("", c), participle=True) for c in rest):
        return "directive"
    return None


def _open_verb(words: list[str]) -> bool:
    """An open-class word heading the clause before its object: "narrate each step", "memoize the
    results" (not "sorry the build broke", "builds take long")."""
    w = words[0]
    return (len(words) > 1 and words[1] in L.OBJECT_START and w.replace("-", "").isalpha() and w not in L.FUNCTION_WORDS
            and not w.endswith(("s", "ed", "ing", "ly")))


def _unfronted(head: str) -> str:
    """`head` without a phrase fronted before its subject ("for the CLI I'd prefer click" → "i'd
    prefer click"; "for all new services we use X" → "we use X for all new services")."""
    m = L.EN_FRONTED.match(head)
    if not m:
        return head
    rest, fronted = head[m.end():], head[:m.end()].strip()
    if rest.startswith("we use ") and L.EN_QUANTIFIED.search(fronted):
        return f"{rest} {fronted}"  # read as "we use X for all …", a commitment
    return rest


def _verbless_norm(head: str) -> bool:
    """A short phrase with no verb and no determiner-led subject, under a constraint word."""
    return carry.verbless(head) and bool(L.EN_VERBLESS_NORM.search(head))


def _decided(c: str) -> bool:
    return any(not L.EN_DECIDED_NEGATED.search(c[max(0, m.start() - 24):m.start()])
               for m in L.EN_DECIDED.finditer(c))


def _clause_mood(c: str, lasting: bool) -> str:
    """The mood of one comma clause (normalized, masked)."""
    body = c.strip(_TRAIL)
    ends_q = body.endswith("?")
    tagged = False
    if ends_q:
        tag = L.QUESTION_TAG.search(body)
        untagged = body[:tag.start()].strip(_TRAIL + ",，") if tag else ""
        tagged = bool(untagged)
        if tagged:
            body, ends_q = untagged, False
        else:
            body = body.rstrip("?").strip()
    if not body or is_acknowledgement(body) or L.REASSURANCE.match(body):
        return "ack"  # a reassurance ("so don't worry about it") is a remark on the conversation
    head = _unfronted(_strip_lead(body))
    if _cjk(body):
        return _zh_mood(body, head, ends_q, lasting)
    polite = L.EN_POLITE.match(head)
    if polite:
        rest = _strip_lead(head[polite.end():].strip())
        if L.EN_INFO.match(rest) and not lasting:
            return "info"
        return "directive" if lasting or L.EN_HABIT_CHANGE.match(rest) else "question"
    if L.EN_INFO.match(head) and not lasting:
        return "info"
    if head.startswith(("no ", "there's no ", "there is no ")) and L.EN_STATE_ASPECT.search(body):
        return "declarative"  # "no Docker setup here yet": what the repo has, not a prohibition
    if ends_q or (L.EN_WH_START.match(head) and not lasting) or L.EN_INVERSION.match(head):
        return "question"
    if tagged and L.EN_QUESTION_START.match(head):
        return "question"
    if (L.EN_PROHIBITION.match(head) or L.EN_LETS.match(head) or L.EN_REMEMBER.match(head) or L.EN_YOU.match(head)
            or _imperative(head) or L.EN_ALWAYS_HEAD.match(body)):
        return "directive"
    if L.EN_PREFERENCE.match(head):
        return "preference"
    if L.EN_COMMIT.match(head) or _decided(body):
        return "commitment"
    if L.EN_PLEASE.search(body) and _thing_requested(head):
        return "question"  # "the stack trace please": a one-time request for that thing
    if L.EN_MODAL.search(body) or L.EN_PLEASE.search(body) or L.EN_NORM.match(head) or _policy(head):
        return "directive"
    return "commitment" if L.LASTING_START.search(body) else "declarative"


def _policy(head: str) -> bool:
    """A present-tense statement made normative by an exclusive, a passive "never" or "nobody …
    without" (`lexicon.EN_POLICY`), unless a quantity or time clause keeps it descriptive."""
    return bool(L.EN_POLICY.search(head)) and not L.EN_POLICY_DESCRIPTIVE.search(head)


def _zh_mood(body: str, head: str, ends_q: bool, lasting: bool) -> str:
    if L.ZH_INFO.match(head) and not lasting:
        return "info"
    if L.ZH_POLITE.match(head) and (ends_q or body.endswith(("吗", "么"))):
        return "directive" if lasting else "question"
    if ends_q or L.ZH_QUESTION.search(body) or L.ZH_CHOICE_QUESTION.search(body):
        return "question"
    if L.ZH_PREFERENCE.search(body):
        return "preference"
    if L.ZH_PAST.search(body):
        return "declarative"  # a report of what was done
    if (L.ZH_HABIT.search(head if head else body) or L.ZH_WILL.search(body)) and not L.ZH_NORM.search(body):
        return "declarative"
    if L.ZH_DIRECTIVE.search(body) or (L.ZH_VERB_HEAD.search(head) and not L.ZH_COPULA.search(head)):
        return "directive"
    if L.EN_PLEASE.search(body) or L.EN_PROHIBITION.match(head) or _imperative(head):
        return "directive"
    if L.ZH_USE.search(body) and not L.ZH_FACT.search(body):
        return "directive"  # "这次回答用表格": a bare "use" with no state marker is an instruction
    if L.ZH_POLICY.search(body) and not L.ZH_POLICY_DESCRIPTIVE.search(body):
        return "directive"  # "配置只从环境变量读": an exclusive states the rule ("服务只在启动时读取配置" describes)
    return "commitment" if L.LASTING_START.search(body) else "declarative"


def _hedge(c: str) -> bool:
    return bool(L.EN_HEDGE.search(c) or L.ZH_HEDGE.search(c))


def _hedge_only(c: str) -> bool:
    """A clause that is nothing but a hedge or a doubt ("probably?", "I think", "或许吧")."""
    return _hedge(c) and len(c.strip(_TRAIL + "?").split()) <= 2 and len(c) <= 16


def _one_off_xian(text: str, lasting: bool) -> bool:
    """先 as "for now": not in a lasting clause, not a step order ("先写测试再写实现", "提交前先跑 lint"),
    not negated ("不用先解释背景")."""
    m = L.XIAN.search(text)
    return (bool(m) and not lasting and not L.XIAN_SEQUENCE.search(text, m.end())
            and not L.XIAN_CONDITION.search(text, 0, m.end())
            and not L.XIAN_NEGATED.search(text, 0, m.end()))  # "不要先改代码，先写测试": an order


def _segment_question(main: str, lasting: bool) -> str | None:
    """The mood of a segment that ends with a question mark, or None when it is no question: a tag
    after an assertion ("Always use tabs, OK?") or a polite request for a lasting behaviour ("Could
    you always cite the file?"). The mark belongs to the whole sentence, not its last comma clause:
    "do we always run migrations before the deploy, or after?" is a question."""
    body = main.strip(_TRAIL)
    if not body.endswith("?"):
        return None
    tag = L.QUESTION_TAG.search(body)
    untagged = body[:tag.start()].strip(_TRAIL + ",，") if tag else ""
    if untagged and not (L.EN_QUESTION_START.match(untagged) or L.ZH_QUESTION.search(untagged)):
        return None
    head = _strip_lead(body.rstrip("?"))
    if L.EN_POLITE.match(head) or L.ZH_POLITE.match(head):
        return None  # judged by its clause: a lasting request is a directive, else a task or a question
    return "question"


def _keeps(text: str) -> bool:
    """A comma clause of `text` is a directive, a commitment or a preference."""
    lasting = bool(L.LASTING_SCOPE.search(text))
    return any(_clause_mood(c, lasting) in KEEPABLE for c in commas(text) or [text])


def _main(text: str) -> str:
    """The part of a segment that carries its meaning: reasons and purposes dropped
    (`clauses.main_part`), and of "<context>, so <directive>" / "<context>，所以<directive>" the
    directive — with `LOCAL` in front when the context limits it (`carry.reason_limit`)."""
    head, rest = reason_head(text)
    main = main_part(rest)
    carried = bool(head) and carry.reason_limit(head, main)
    m = carry.SO.search(main)
    if m and main[m.end():].strip(_TRAIL):
        reason, consequent = main[:m.start()], main[m.end():]
        if L.REASSURANCE.match(consequent.strip()):
            main = reason  # "…, so don't worry about it": the consequent is a remark, the reason the statement
        elif _keeps(reason) and not _keeps(consequent):
            main = reason  # "Keep functions short, so reviews stay quick": the result is a remark
        elif _keeps(consequent) and not _keeps(reason):
            main, carried = consequent, carried or carry.reason_limit(reason, consequent)
    return f"{LOCAL} {main}" if carried else main


@functools.lru_cache(maxsize=1024)
def read_segment(text: str, *, repair: bool = False) -> Reading:
    """The reading of one segment (normalized and masked, `clauses.segments`)."""
    main = _main(text)
    if L.COMMAND_LISTING.match(main):
        return Reading("declarative", fact=True, repair=repair)  # "Lint: `ruff check .`": how the repo is run
    lasting = bool(L.LASTING_SCOPE.search(main))
    local = (bool(L.LOCAL_SCOPE.search(main)) or _one_off_xian(main, lasting)
             or (not lasting and bool(L.EVENT_SCOPE.search(main) or L.REVERSAL.search(main))))
    undecided = bool(L.EN_UNDECIDED.search(main) or L.ZH_UNDECIDED.search(main))
    parts = commas(main) or [main]
    if _segment_question(main, lasting):
        hedged = any(_hedge(c) for c in parts)
        return Reading("question", hedged=hedged, undecided=undecided, local=local, lasting=lasting, repair=repair)
    # a clause that is nothing but a scope ("…, always.", "no exceptions here: …") is no clause of
    # its own: it lends its scope to the rest (`carry`)
    kinds = [carry.scope_fragment(c) for c in parts]
    if len(parts) > 1:  # a decision frame lends to the clause it announces ("house rule: …", "as a rule, …")
        kinds = [k or ("frame" if carry.frame(c) else None) for c, k in zip(parts, kinds)]
    lent = next((k for k in ("start", "frame", "emphasis", "lasting") if k in kinds), None)
    lasting = lasting or lent in ("frame", "emphasis")
    content = [c for c, k in zip(parts, kinds) if not k]
    if "frame" in kinds and content:  # a frame's "here" ("the standard here —") is no place of what it announces
        rest = " , ".join(content)
        local = (bool(L.LOCAL_SCOPE.search(rest)) or _one_off_xian(rest, lasting)
                 or (not lasting and bool(L.EVENT_SCOPE.search(rest))))
    if not content:
        return Reading("declarative", hedged=any(_hedge(c) for c in parts), undecided=undecided, local=local,
                       lasting=lasting, repair=repair)
    moods = [_clause_mood(c, lasting) for c in content]
    if moods[0] == "declarative" and _verbless_norm(_strip_lead(content[0].strip(_TRAIL))):
        moods[0] = "directive"  # "One assertion per test." (a fragment after a clause is no norm)
    _continue_description(content, moods)
    terse = _terse_norm(content, moods)
    if terse:
        moods[0] = terse
    keep = next((i for i, m in enumerate(moods) if m in KEEPABLE), None)
    if keep is None and lent and "declarative" in moods:
        i = moods.index("declarative")
        lifted = carry.lift(_strip_lead(content[i].strip(_TRAIL)), lent)
        if lifted:
            moods[i], keep = lifted, i
    if keep is not None:
        mood = moods[keep]
        # a hedge counts before or in the directive's clause, or as a clause of its own anywhere
        # ("…, always, probably?"); a later clause with its own content is a reason or a remark
        hedged = any(_hedge(c) for c in content[:keep + 1]) or any(_hedge_only(c) for c in parts)
    else:
        mood = next((m for m in ("question", "info", "declarative", "ack") if m in moods), "declarative")
        hedged = any(_hedge(c) for c in parts)
    fact = False
    if mood == "declarative":
        first = next((_unfronted(_strip_lead(c)) for c, m in zip(content, moods) if m == "declarative"), main)
        fact = not (L.PERSON_SUBJECT.match(first) or L.SMALL_TALK.match(first) or L.OPINION.match(main)
                    or ("ack" in moods and L.PRONOUN_REMARK.match(first)))
    return Reading(mood, hedged=hedged, undecided=undecided, local=local, lasting=lasting, fact=fact, repair=repair)


def _continue_description(content: list[str], moods: list[str]) -> None:
    """A Chinese sentence opening with a copular description ("线上数据库是一主两从，读请求都走从库")
    goes on describing: a later clause whose only directive mark is a verb at its head or a distributive
    都 before it, with no norm word (要, 必须, 一律, 统一, 只, 以后 …), is part of the description."""
    first = content[0].strip()
    if (len(content) < 2 or moods[0] != "declarative" or not _cjk(first) or not L.ZH_COPULA.search(first)
            or first.startswith(("这", "那", "它", "我", "你"))):  # "这只是为了这次演示，…" states the request's limit
        return
    for i in range(1, len(moods)):
        c = content[i]
        if moods[i] == "directive" and _cjk(c) and "把" not in c and not (L.ZH_NORM.search(c) or L.ZH_POLICY.search(c)):
            moods[i] = "declarative"


def _combine(readings: list[Reading]) -> Reading:
    """Several segments carry the meaning equally: kept on a keepable one unless another limits,
    hedges or questions it (a limit or a doubt beside a rule is never ignored)."""
    meaningful = [r for r in readings if r.mood != "ack"] or readings
    keeping = [r for r in meaningful if r.refusal() is None]
    limiting = [r for r in meaningful if r.refusal() in ("one_off_scope", "hedged", "undecided", "user_question")]
    if keeping and not limiting:
        return replace(keeping[0], lasting=any(r.lasting for r in keeping))
    return limiting[0] if limiting else meaningful[0]


def read_quote(text: str, quote: str, *, repair: bool = False, meaning: Iterable[str] | None = None) -> Reading:
    """The reading of `quote` within `text` (a user turn). When the quote spans several segments
    the ones sharing most of `meaning` (the candidate's terms) decide; ties are combined. The
    sentences right around them lend what they carry (`_lend`): a short comment that only doubts,
    hedges or limits ("not 100% sure yet", "just for today"), a scope fragment ("Never.", "this
    isn't just for the login page —"), a directive keeping what was described ("Keep it that way")."""
    segs = list(segments(text, quote))
    lenders = [s for s in segs if _lender(s.text)]
    content = [s for s in segs if s not in lenders]
    if not content:
        if len(segs) > 1 and len({s.sentence for s in segs}) == 1:  # "就按这个来，以后都这样": one sentence of fragments
            return read_segment(" , ".join(s.text for s in segs), repair=repair)
        content, lenders = segs, []
    if len(content) > 1 and meaning:
        content = _best(content, set(meaning))
    reading = _combine([read_segment(s.text, repair=repair) for s in content])
    for s in lenders:  # quoted with it: lent whatever the sentence
        after = s.start >= content[-1].end
        following = next((c for c in content if c.start >= s.end), content[0])
        gap = text[content[-1].end:s.start] if after else text[s.end:following.start]
        reading = _lend(reading, content, s, gap, after, repair)
    for neighbour, gap, after in adjacent(text, content[0], content[-1]):
        if neighbour not in lenders:
            reading = _lend(reading, content, neighbour, gap, after, repair)
    if reading.mood == "commitment" and carry.undone(text, segs, content[-1]):
        return replace(reading, mood="declarative", fact=True, lasting=False)  # a decision since undone: history
    return reading


def _lender(text: str) -> bool:
    """A segment with no proposition of its own that lends to its neighbour: a scope fragment, a
    maintaining directive, a short comment that limits, hedges or doubts ("just here", "not sure
    yet"), a statement of the request's limit ("this is only for the staging push")."""
    if carry.scope_fragment(text) or carry.maintains(text) or carry.frame(text):
        return True
    if not (_short(text) or L.LIMIT_STATEMENT.match(text)):
        return False
    r = read_segment(text)
    return r.mood not in KEEPABLE and (r.local or r.hedged or r.undecided)


_DASH = re.compile(r"[—–]|\s-{1,2}\s")


def _lend(reading: Reading, chosen: list[Segment], other: Segment, gap: str, after: bool, repair: bool) -> Reading:
    """`reading` with what the neighbouring segment `other` lends it (`gap`: the text between them)."""
    kind = carry.scope_fragment(other.text) or ("frame" if not after and carry.frame(other.text) else None)
    if kind and (after or _DASH.search(f" {gap} ")):
        # read as one sentence: "Tabs. Always." is "Tabs, always"; "not just here — every X…" one clause
        joined = [f"{s.text} , {other.text}" if after else f"{other.text} : {s.text}" for s in chosen]
        return replace(_combine([read_segment(j, repair=repair) for j in joined]), lasting=True)
    if (after and carry.extends(other.text) and reading.mood in KEEPABLE and not reading.local
            and not other.raw.rstrip().endswith(("?", "？"))):
        return replace(reading, lasting=True)  # "Use zod. Going forward that applies to the admin app as well."
    if after and carry.maintains(other.text) and reading.mood == "ack" and not other.raw.rstrip().endswith(("?", "？")):
        return replace(reading, lasting=True)  # "没问题，以后就按这个来": an acknowledgement said to last
    if (after and carry.maintains(other.text) and not other.raw.rstrip().endswith(("?", "？"))
            and reading.mood in KEEPABLE + ("declarative",)):
        kept = read_segment(other.text, repair=repair)
        return replace(reading, mood=reading.mood if reading.mood in KEEPABLE else "directive", fact=False,
                       lasting=True, local=reading.local or kept.local, hedged=reading.hedged or kept.hedged,
                       undecided=reading.undecided or kept.undecided)
    if (not after and reading.mood in KEEPABLE and _DASH.search(f" {gap} ")
            and L.EN_REMEMBER.match(_strip_lead(other.text)) and not reading.local):
        return replace(reading, lasting=True)  # "keep in mind that I review on mobile — wrap lines at 80"
    if (after and (reading.fact or reading.mood in KEEPABLE) and carry.names_alternative(chosen[-1].text, other.text)
            and not other.raw.rstrip().endswith(("?", "？"))):
        # "we use httpx for HTTP, not requests — don't suggest requests again": a prohibition naming
        # the contrasted alternative makes the description a commitment, and a lasting one
        kept = read_segment(other.text, repair=repair)
        if kept.mood == "directive" and kept.refusal() is None:
            mood = reading.mood if reading.mood in KEEPABLE else "commitment"
            return replace(reading, mood=mood, fact=False, lasting=True)
    if _short(other.text) or L.LIMIT_STATEMENT.match(other.text):
        r = read_segment(other.text)
        if after and r.mood == "question" and carry.ANAPHOR_DOUBT.search(other.text):
            return replace(reading, undecided=True)  # "…. Is that right?": the user doubts what they described
        if r.mood not in KEEPABLE and (r.undecided or r.hedged or r.local):
            return replace(reading, undecided=reading.undecided or r.undecided, hedged=reading.hedged or r.hedged,
                           local=reading.local or r.local)
    return reading


def _short(text: str) -> bool:
    """A fragment without a proposition of its own: a few words, no content verb, no Chinese
    directive or "use" ("not 100% sure yet", "just for today", "还不确定" — not "Should we use tabs?")."""
    if len(text.split()) > 5 or len(text) > 32:
        return False
    words = text.replace("?", " ").replace(",", " ").split()
    if any(w in L.BASE_VERBS and w not in L.COMMENT_VERBS for w in words):
        return False
    return not (L.ZH_DIRECTIVE.search(text) or L.ZH_USE.search(text))


def _best(segs: list[Segment], meaning: set[str]) -> list[Segment]:
    scored = [(len(set(content_terms(s.raw)) & meaning), s) for s in segs]
    top = max(n for n, _ in scored)
    return [s for n, s in scored if n == top]


# ------------------------------------------------------------------------------ adoption


def _limited(text: str) -> bool:
    """A time or place limit on a confirmation ("ok, for this release only", "行，这次先这么做")."""
    return bool(L.CONFIRM_LIMIT.search(text)) or _one_off_xian(text, False)


def confirmation_refusal(text: str) -> str | None:
    """Why a user's reply does not adopt the proposal before it, or None (it affirms)."""
    segs = segments(text)
    n = L.ATTRIBUTIVE_LATER.sub(" ", L.AFFIRM_IDIOMS.sub(" ok ", " ".join(s.text for s in segs)))
    first = L.AFFIRM_IDIOMS.sub(" ok ", segs[0].text).strip(_TRAIL)
    if first.endswith("?") or L.NOT_CONFIRMED.search(n):
        return "not_confirmed"
    if _limited(n):
        return "one_off_scope"
    if not L.AFFIRMATIVE.search(first):
        return "not_confirmed"
    return None


def proposal_refusal(text: str) -> str | None:
    """None when an assistant quote proposes something, else `not_a_proposal` (a question, a
    report of what the code is or of what was done)."""
    n = mask(normalize(text)).strip(_TRAIL)
    if L.REPORT.match(_strip_lead(n)):
        return "not_a_proposal"
    if L.PROPOSAL.search(n):
        return None
    tentative = L.TENTATIVE_HEAD.sub("", n).rstrip("?").strip()  # "Maybe use Celery for the queue?"
    if tentative != n and read_segment(tentative).mood == "directive":
        return None
    if n.endswith("?"):
        return "not_a_proposal"
    return None if read_segment(n).mood == "directive" else "not_a_proposal"


def is_open_point(text: str, quote: str) -> bool:
    """The user's clause raises an open point (a question, an undecided or hedged choice, a wish to
    discuss it): what a discussion rests on."""
    segs = segments(text, quote)
    for s in segs:
        r = read_segment(s.text)
        if r.undecided or r.mood == "question" or r.hedged or L.DELIBERATION.search(s.text):
            return True
    # the sentence right after says the user has not decided: "A 是产品想要的，B 是我们养得起的。我还没想好。"
    return any(after and read_segment(n.text).undecided for n, _, after in adjacent(text, segs[0], segs[-1]))


__all__ = ["KEEPABLE", "Reading", "confirmation_refusal", "is_open_point", "proposal_refusal", "read_quote",
           "read_segment"]
