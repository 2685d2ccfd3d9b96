"""Who is speaking and what still stands: the Memory gate's reading of a message's structure around a
quote (issue 29), before the clause itself is read (`reading.py`).

- *Someone else's words* (`relayed`): a quote inside a block quote (`> …`) or a fenced block (a
  pasted log, tool output, a pasted chat message), or the complement of another speaker's verb of
  saying ("the style guide says …", "my lead said …", "according to …,", "他说…", "听说…") is not
  the user's decision, unless the user endorses it right after ("…, and I agree", "+1 to that",
  "我同意") — a doubt ("not sure I agree") is no endorsement; "as the docs say, …" is the user's.
- *Taken back* (`withdrawn`): a later clause of the same message withdraws it ("— hmm no, forget
  that", "scratch that", "never mind", "on second thought", "算了", "当我没说"), or a later user turn
  does ("ignore what I said about X": about something else, it withdraws nothing).
- *Irony* (`ironic`): a marker of irony around the quote or in a reply to a proposal ("what could
  go wrong", "yeah right", "🙃", "/s", "呵呵"); and without a marker word, a reply that praises a
  proposal and then mocks it by exaggeration, a counterexample or a scare-quoted echo (`mocks`).

Word classes are closed classes of form only: pronouns and determiners of a speaker, verbs of
saying, withdrawal formulas (an imperative of dismissal over an anaphor of what was said), irony
markers. Texts are normalized (`clauses.normalize`) and read in a bounded window around the quote."""

from __future__ import annotations

import re

from autopatch_tui.core.pipeline.clauses import normalize
from autopatch_tui.core.recall.terms import content_terms

WINDOW = 240  # characters read on each side of a quote (a word further away does not govern it)
# characters read from the start of a later turn (a withdrawal) or of a reply (irony): what takes back
# or mocks is said first; a pasted log after it stays cheap
HEAD = 400

_END = r"(?=$|[\s,.;:!?…—–-])"
# a dismissal over an anaphor of what was just said ("forget that", "scratch my last message")
_DISMISS = (r"(?:forget|scratch|ignore|disregard|drop|strike|cancel|undo)\s+(?:that|this|it|all that|"
            r"what i (?:just )?(?:said|wrote|asked)|the above|everything (?:above|i (?:just )?said)|"
            r"my (?:last|previous|earlier) (?:message|point|comment|request|note))")
_WITHDRAW_AFTER = re.compile(
    # a clause of its own: at a boundary or after a discourse marker ("— hmm no, forget that"), not a
    # conjunct or a negated verb ("log it and ignore it", "don't forget that the linter checks it")
    r"(?:^|[,.;:!?…—–-]\s*|(?<![a-z'])(?:no|hmm+|hm+|actually|wait|oh|ok|nah|nope|so|just|uh+|um+)\s+)(?:"
    + _DISMISS + _END + r"|never ?mind(?: that| what i said)?(?=$|[,.;:!?…—–-])"
    r"|on second thought|i take (?:that|it|this) back|(?:that's|that is) not what i (?:meant|want)"
    r"|(?:no|nah|nope),? (?:wait|actually)\b|actually,? no(?=$|[,.;:!?…—–-]))"
    r"|算了(?![一下个])|当我没说|收回(?:刚才|前面|上面)?(?:的话|说的|那句)|(?:刚才|上面|前面)(?:说的|那句|那条)(?:不算|作废)"
    r"|不对不对|(?:忽略|别管)(?:我)?(?:刚才|上面|前面)(?:说的|那句|那条)")
# a later turn withdrawing what the user said before, optionally naming what ("… about yarn")
_WITHDRAW_TURN = re.compile(
    r"(?<![a-z'])(?<!don't )(?<!do not )(?<!never )(?:(?:forget|scratch|ignore|disregard|drop|strike|cancel)\s+(?:what i (?:just |had )?(?:said|wrote|asked)"
    r"(?: (?:earlier|before|above))?|my (?:last|previous|earlier) (?:message|point|comment|request|note)|"
    r"that last (?:bit|part|one|message|point)|the (?:last|previous) (?:message|one|bit|point)|everything i said)"
    r"(?:\s+(?:about|regarding|on|re)\s+(?P<about>[^,.;!?]{1,60}))?"
    r"|i take (?:that|it|this) back|i take back what i said(?:\s+(?:about|on)\s+(?P<about2>[^,.;!?]{1,60}))?)"
    r"|(?:刚才|之前|上面|前面)(?:说的|那句|那条|讲的|提的)(?P<about3>[^。！？]{0,20}?)(?:不算|作废|收回|忽略|别管|撤回)"
    r"|当我没说|收回(?:刚才|前面|上面)(?:的话|说的|那句)?|(?:忽略|别管)(?:我)?(?:刚才|之前|上面|前面)(?:说的|那句|那条|讲的)")
# a turn that opens with a bare dismissal ("scratch that.", "never mind", "算了") withdraws the turn before
_WITHDRAW_OPEN = re.compile(r"^(?:(?:hmm+|hm+|uh+|um+|wait|actually|no|nah|nope|oh|ok)[\s,.!…—-]*)*(?:"
                            + _DISMISS + _END + r"|never ?mind(?=$|[,.;:!?…—–-])|on second thought)|^算了(?![一下个])")

# another speaker's verb of saying, heading the quote's sentence: a subject led by a determiner or a
# possessive ("the Go wiki", "my lead", "our style guide"), a third-person pronoun, or one name
_SAY = (r"(?:says|said|say|wrote|writes|suggests|suggested|recommends|recommended|claims|claimed|argues|argued|"
        r"thinks|insists|insisted|keeps saying|told (?:me|us)|mentioned|posted|commented|states|stated|reckons|"
        r"swears)")
_RELAY_EN = re.compile(
    r"^(?:(?:so|and|but|also|btw|fyi|fwiw|ok|well)[\s,]+)*"
    r"(?:according to [^,:]{1,40}[,:]"
    r"|(?!(?:i|we|you|i've|we've|i'd|we'd|i'll|we'll|as|like|whatever|whoever|no|if|when|unless|even|despite|unlike|"
    r"what|how)\b)(?:(?:the|my|our|a|an|some|this|that|his|her|their|one of (?:the|our|my))\s(?:[\w.'@#/+-]+\s){0,3}"
    r"|(?:someone|somebody|people|everyone|he|she|they|it)\s|[\w.@#+-]+\s)" + _SAY + r"(?: that)?\b"
    # "the PR description says which issue it closes": a wh-complement is what a text must say, a rule
    r"(?!\s+(?:what|which|why|how|who|where|when|whether|if)\b))")
_RELAY_ZH = re.compile(
    r"^(?:(?:[^，。！？\s]{0,8}?(?:他|她|他们|她们|别人|有人|人家|同事|领导|老板|文档|官方|网上|博客|文章|群里)[^，。！？\s]{0,6}?)"
    r"(?:说|说过|认为|建议|提到|写道|写着|讲|觉得|表示)|据说|听说)")
_ENDORSE = re.compile(
    r"(?<![a-z'])(?:(?:i|we) (?:fully |totally |completely |do |also )?(?:agree|concur)|\+1|agreed|i'm on board|"
    r"we're on board|let's (?:do|follow|go with|adopt) (?:that|it|this)|so (?:do|follow) (?:that|it|this)|"
    r"that's (?:right|our rule|the rule)|we follow (?:it|that|this)|(?:please )?(?:follow|stick to|do) (?:it|that|this)"
    r"(?: too| as well)?(?=$|[\s,.;:!]))(?![a-z])"
    # the speaker judged right: "she's right", "good call", "说得对", "有道理", and a decision on it: "就这么定"
    r"|(?<![a-z'])(?:(?:he|she|they|you)(?:'s|'re| is| are)|(?:is|are)) (?:(?:totally|absolutely|dead) )?right(?![a-z])"
    r"|(?<![a-z])good call(?![a-z])"
    r"|我(?:也)?同意|赞同|照(?:这个|这条|此)(?:来|做|办)|就按(?:这个|这条)(?:来|做|办)?|说得(?:对|没错|在理)|有道理|"
    r"就这么(?:定|办|做|来)")
_NEGATED = re.compile(r"(?:\bnot|n't|\bnever|\bno|\bhardly|不|没)\s*(?:\S+\s*){0,2}$")
_SENTENCE_START = re.compile(r"[.!?。！？;；\n]\s*|(?<=[…])\s+")

# irony: closed markers of form (emoji, "/s", set phrases of mock agreement)
_IRONY = re.compile(
    r"🙃|🙄|😒|😑|🤡|(?<![\w/])/s(?![\w/])|what could (?:possibly )?go wrong(?!\s*(?:with|in|on|at|for|if|when|here|there)\b)|(?<![a-z])yeah right(?![a-z])|"
    r"(?:because|cause|'cause) that (?:worked|went) (?:out )?(?:so |really |super )?(?:well|great)|said no one ever|"
    r"good luck with that|呵呵|真是(?:个)?好主意(?:呢|啊)")


# irony without a marker word (issue 29, round two): a reply to a proposal that opens with praise and
# then, in the same message, mocks the proposal — by exaggerating it (an escalation formula with an
# exclamative or a universal: "…, let's also X while we're at it, what a time saver", "why stop
# there"), by a counterexample ("like the one that locked …", "就像上次那个…"), or by echoing the
# proposal's own word in scare quotes ("love it — 'tiny' migrations"). Praise alone, repeated
# agreement ("yes yes, do it", "可以可以 👍") or a plain addition ("great, let's also add a test") adopts.
_PRAISE = re.compile(
    r"^(?:(?:oh|wow|ah|yes|yeah|well|ok|okay|哇|哦)[\s,!.…—-]+)*(?:perfect|great(?: idea| plan| call)?|brilliant|genius|"
    r"amazing|wonderful|fantastic|awesome|excellent|superb|splendid|lovely|beautiful|(?:i )?love (?:it|this|that)|"
    r"sounds (?:great|perfect|amazing|lovely)|what a (?:great|brilliant|fantastic) (?:idea|plan)|好主意|太好了|完美|妙啊|"
    r"绝了|好极了|真棒|太棒了|高明)(?![a-z])")
_ESCALATE = re.compile(r"while we'?re at it|why stop there|might as well|and why not|顺便|干脆|索性|要不(?:连|把)")
_HYPERBOLE = re.compile(r"(?<![a-z])(?:what an? |such an? )[a-z]+(?: [a-z]+)?(?: saver| idea| plan| win)?[.!…]*$|"
                        r"\b(?:the (?:whole|entire)|everything|every single|all of (?:it|them)|the rest of)\b|"
                        r"(?:全部|所有|整个|统统|全都)|(?:真是|多么|多)[^，。！？]{0,8}(?:啊|呢)[!！。]*$")
# the irregular past tense (a closed class of form)
_IRREGULAR_PAST = (r"took|broke|went|brought|made|ran|blew|caught|froze|ate|cost|hit|sank|shot|stole|tore|threw|wrote|"
                   r"kept|left|lost|fell|got|gave|held|hung|led|let|put|sent|shut|spent|split|stood|stuck|struck|"
                   r"swept|woke|wore|began|drove|forgot|hid|knew|rose|shook|slid|spun|spread|dragged|did|had|was|were")
# a counterexample: a comparison with a past event ("like the one that locked …"; "like the one we
# shipped" is a precedent, not a counterexample), "就像上次那个…了…"
_COUNTER = re.compile(r"\b(?:just )?like (?:the one|that one|the time|last time|that time)\b (?:that|when|where|which) "
                      r"(?:\w+ )?(?:[a-z]+ed|" + _IRREGULAR_PAST + r")\b|(?:就像|跟|和)上次[^，。！？]{0,20}了")
_SCARE = re.compile(r"['\"‘“「]([^'\"’”」\n]{1,30})['\"’”」]")


def mocks(reply: str, proposals: list[str]) -> bool:
    """A reply that praises a proposal and then mocks it by exaggeration, a counterexample or a scare-quoted
    echo of the proposal's word (`_PRAISE` comment): no adoption."""
    n = normalize(reply[:HEAD])
    praise = _PRAISE.match(n)
    if not praise:
        return False
    rest = n[praise.end():]
    if _ESCALATE.search(rest) and (_HYPERBOLE.search(rest) or "why stop there" in rest):
        return True
    if _COUNTER.search(rest):
        return True
    # the proposal's own word in scare quotes, mocked by an exaggeration ("'tiny', sure, the whole schema");
    # quoting it back to agree ("keep them 'tiny' as you said") adopts
    said = normalize(" ".join(proposals))
    return bool(_HYPERBOLE.search(rest)) and any(q.strip() and q.strip() in said for q in _SCARE.findall(rest))


def _span(text: str, quote: str) -> tuple[int, int]:
    start = text.find(quote)
    return (start, start + len(quote)) if start >= 0 else (0, len(text))


def _in_block(text: str, start: int) -> bool:
    """The position lies in a block quote line (`> …`) or inside a fenced block (```)."""
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start + 1].lstrip().startswith(">"):
        return True
    return text.count("```", max(0, start - 4 * WINDOW), start) % 2 == 1


def _endorsed(after: str) -> bool:
    for m in _ENDORSE.finditer(after):
        if not _NEGATED.search(after[max(0, m.start() - 24):m.start()]):
            return True
    return False


def reported(text: str, quote: str) -> bool:
    """The quote is in a block quote, a fenced block or the complement of another speaker's verb of
    saying (endorsed or not)."""
    start, _ = _span(text, quote)
    if _in_block(text, start):
        return True
    before = text[max(0, start - WINDOW):start]
    cut = [m.end() for m in _SENTENCE_START.finditer(before)]
    sentence = normalize(before[cut[-1] if cut else 0:] + quote)
    return bool(_RELAY_EN.match(sentence) or _RELAY_ZH.match(sentence))


def relayed(text: str, quote: str) -> bool:
    """The quote is someone else's words (module doc), not endorsed by the user right after."""
    if not reported(text, quote):
        return False
    _, end = _span(text, quote)
    return not _endorsed(normalize(text[end:end + WINDOW]))


def withdrawn(text: str, quote: str) -> bool:
    """A later clause of the same message takes the quoted statement back."""
    _, end = _span(text, quote)
    return bool(_WITHDRAW_AFTER.search(normalize(text[end:end + WINDOW])))


def withdraws(later: str, meaning: set[str]) -> bool:
    """A later user turn takes back what was said before: opening with a dismissal, or a withdrawal
    naming what it withdraws that shares the candidate's terms (`meaning`), or naming nothing."""
    n = normalize(later[:HEAD])
    for m in _WITHDRAW_TURN.finditer(n):
        about = next((g for g in m.group("about", "about2", "about3") if g and g.strip()), None)
        # "ignore what I said about the logger" withdraws the logger rule, not another one
        return about is None or bool(set(content_terms(about)) & meaning)
    return bool(_WITHDRAW_OPEN.match(n))


def ironic(text: str, quote: str | None = None) -> bool:
    """An irony marker in the quote's sentence or the one right after it (the whole text without a quote)."""
    if quote is None:
        return bool(_IRONY.search(normalize(text[:HEAD])))
    start, end = _span(text, quote)
    return bool(_IRONY.search(normalize(text[max(0, start - 80):end + 120])))


__all__ = ["ironic", "mocks", "relayed", "reported", "withdrawn", "withdraws"]
