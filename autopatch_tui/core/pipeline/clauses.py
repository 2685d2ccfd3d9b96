"""Clause structure for the Memory gate: which part of a turn a quote belongs to, in a form the
readers (`reading.py`) can match.

A turn is cut into sentences (`。！？!?;；`, a newline, `. `, a spaced dash) and each sentence into
*segments* at contrast connectives ("but", "however", "但是", "不过", "而是"): "Skip the stubs this
time, but from now on every module ships them" holds two segments, and a quote is judged by the
segment(s) it overlaps, never by the whole turn. A segment is then normalized (`normalize`: NFKC,
case-folded, straight apostrophes, chat abbreviations spelled out) and *masked* (`mask`): phrases
whose words would mislead a reader are rewritten to what they mean —
- a start point or a negated limit is a lasting scope: "from here on", "not just for this PR",
  "even for one-line fixes", "从这里开始", "不只是这次" become the token `LASTING`;
- a deferral that holds a lasting word is a deferral: "以后再说" becomes `DEFER`;
- a kind or a manner is not a place: "this kind of error", "like this", "这种" become "such";
- a presentational "here's" is no place either.
`main_part` then drops reason and purpose clauses ("because it might be unsafe", "so that …",
"因为…", "以免…"): a reason does not weaken, scope or question the clause it supports.
`commas` cuts a segment into comma clauses (a hedge counts only before or in the directive's
clause: "Use tabs, it might read better" is a rule)."""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

LASTING = "⟪lasting⟫"
DEFER = "⟪defer⟫"
LOCAL = "⟪local⟫"  # a limit carried into a clause from the reason before it (`carry.reason_limit`)

_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "`", "\u201c": '"', "\u201d": '"'})
# a sentence ends at these (the dash and ". " keep `3.11`, `e.g.` inside a word and `foo.py` whole)
_SENTENCE_END = re.compile(r"[。！？!?;；\n]+|(?<=[.…])(?<![Nn]o\.)\s+|\s+[—–]+\s*|\s*[—–]+\s+|\s+--\s+")
# contrast connectives start a new segment (不但/但凡 are no contrast)
_CONTRAST = re.compile(r",?\s*\b(?:but|however|whereas|although|though)\b\s*,?|(?:但是|(?<!不)但(?!凡)|不过|可是|然而|而是)[，,]?"
                       # a start point after a comma opens a scope of its own: "这个分支的 print 先留着，and from
                       # now on 别在库代码里用 print" (the limit belongs to the first clause only)
                       r"|[,，;；]\s*(?:(?i:and|so)\s+)?(?=(?i:from now on|going forward|moving forward|from here on"
                       r"|henceforth|from today on)\b|(?:以后|今后|往后|从今以后|从今往后|从现在起|从现在开始)(?!再))")

# chat abbreviations and missing apostrophes, spelled out (on a normalized, lower-case text)
_ABBREVIATION_LIST = (
    (r"pl[sz]e?", "please"), (r"th(?:x|nx|nks)", "thanks"), (r"ty", "thank you"), (r"u", "you"), (r"ur", "your"),
    (r"dont", "don't"), (r"doesnt", "doesn't"), (r"didnt", "didn't"), (r"cant", "can't"), (r"wont", "won't"),
    (r"isnt", "isn't"), (r"arent", "aren't"), (r"shouldnt", "shouldn't"), (r"wouldnt", "wouldn't"),
    (r"couldnt", "couldn't"), (r"mustnt", "mustn't"), (r"neednt", "needn't"), (r"hasnt", "hasn't"),
    (r"havent", "haven't"), (r"hadnt", "hadn't"), (r"wasnt", "wasn't"), (r"werent", "weren't"), (r"aint", "ain't"),
    (r"youre", "you're"), (r"thats", "that's"), (r"theres", "there's"), (r"cannot", "can't"),
    (r"im", "i'm"), (r"ive", "i've"), (r"gonna", "going to"), (r"wanna", "want to"), (r"gotta", "have to"),
    (r"imo|imho", "in my opinion"), (r"tbh", "to be honest"), (r"btw", "by the way"), (r"fyi", "for your info"),
    (r"idk|dunno", "i don't know"), (r"nvm", "never mind"), (r"rn", "right now"), (r"atm", "at the moment"),
    (r"w/o", "without"), (r"w/", "with"), (r"b4", "before"), (r"tmrw?", "tomorrow"), (r"no probs?", "no problem"),
    (r"probs?", "probably"), (r"sgtm", "sounds good to me"), (r"lgtm", "looks good to me"), (r"ofc", "of course"),
    (r"kk?", "ok"), (r"ok(?:ay|ie)", "ok"), (r"ya|yea|ye", "yeah"), (r"asap", "soon"),
    (r"afaik|iirc", "i guess"), (r"thru", "through"), (r"fwd", "forward"), (r"til|'til|till", "until"), (r"lets(?= \w)", "let's"),
)
# one pass: each abbreviation is a group of one alternation; the group that matched names its spelling
_ABBREVIATIONS = re.compile(r"(?<![\w'])(?:" + "|".join(f"({a})" for a, _ in _ABBREVIATION_LIST) + r")(?![\w'])")
_SPELLED = {i + 1: b for i, (_, b) in enumerate(_ABBREVIATION_LIST)}


# one-slip typos of the closed-class words the readers key on ("alwasy", "plese", "shoudl", "becuase"):
# adjacent swaps, and for longer words one dropped letter; never a variant that is a word itself
_TYPO_TARGETS = ("always", "never", "please", "should", "forward", "because", "anymore", "probably", "perhaps",
                 "remember", "default", "decided", "settled", "instead", "future", "ensure", "prefer", "avoid",
                 "maybe")
_REAL_WORDS = frozenset("decide lease pleas ensue refer settle enure".split())


def _typos() -> dict[str, str]:
    out: dict[str, str] = {}
    for w in _TYPO_TARGETS:
        variants = {w[:i] + w[i + 1] + w[i] + w[i + 2:] for i in range(len(w) - 1)}
        if len(w) >= 6:
            variants |= {w[:i] + w[i + 1:] for i in range(len(w))}
        for v in variants - {w} - _REAL_WORDS:
            out[v] = w
    return out


_TYPO = _typos()
_WORD = re.compile(r"[a-z]{4,}")


# markdown form around a rule line (issue 29): a list bullet or number, a heading mark, bold/underline
# emphasis ("- **Testing:** run the suite before a PR" reads as "testing: run the suite before a PR")
_MARKDOWN = re.compile(r"^(?:[-*+•]|\d{1,2}[.)]|#{1,6})\s+|\*\*|__")


def normalize(text: str) -> str:
    """NFKC, zero-width characters removed, case-folded, straight apostrophes, whitespace collapsed,
    markdown bullets and emphasis dropped, chat abbreviations spelled out ("pls" → "please", "dont" →
    "don't", "rn" → "right now"), one-slip typos of the readers' key words corrected ("alwasy" → "always")."""
    text = _CONTROL.sub(" ", _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", text))).translate(_APOSTROPHES)
    text = _MARKDOWN.sub("", " ".join(text.casefold().split()))
    if text.isascii() or any(ch.isascii() and ch.isalpha() for ch in text):
        text = _ABBREVIATIONS.sub(lambda m: _SPELLED[m.lastindex or 0], text)
        text = _WORD.sub(lambda m: _TYPO.get(m.group(0), m.group(0)), text)
    return text


# ------------------------------------------------------------------------------------- masking

_NEG_COPULA = r"isn't|aren't|wasn't|weren't|ain't|is not|are not|was not|were not|'s not|'re not"
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), r) for p, r in (
    # code spans: words inside backticks are code, not scope or mood
    (r"`[^`]*`", " code "),
    # open-ended limits last: "until further notice", "until I say otherwise"
    (r"\buntil (?:further notice|(?:i|we) (?:say|decide|tell you) otherwise|told otherwise|(?:i|we) change "
     r"(?:it|this|that|my mind|our minds))\b", LASTING),
    # a start point: "from here on", "from this release onwards", "starting today"
    (r"\bfrom (?:here|there|this (?:point|moment|day|release|version|sprint|commit|pr)|today|now|"
     r"this point forward|the next (?:release|version|sprint))(?: on(?:wards?)?| forward| out)?\b"
     r"|\bstarting (?:today|now|from (?:today|now|here)|with (?:this|the next) \w+)\b"
     r"|\b(?:as of|in|with|from) (?:this|the next) (?:release|version|major|minor)(?: on(?:wards?)?)?\b", LASTING),
    # a negated limit, plain, contracted or copular: "not just for this PR", "this isn't only for the
    # login page", "that's not merely a style thing", "it ain't a one-time thing"
    (r"\b(?:not|" + _NEG_COPULA + r")\s+(?:only|just|merely|simply|solely|exclusively)\b[^,.;:!?]{0,40}", LASTING),
    (r"\b(?:not|" + _NEG_COPULA + r")\s+(?:meant as |intended as )?(?:a |just a |only a )?(?:one[- ]off|"
     r"one[- ]time(?: thing| exception| deal)?|temporary(?: thing| measure| rule)?|a temporary thing|"
     r"just (?:for )?(?:now|today|this time))\b", LASTING),
    # universality: "even for one-line fixes", "regardless of the size"
    (r"\b(?:even (?:for|in|on|when|if|with|during|inside)|regardless of|no matter)\b[^,.;:!?]{0,40}", LASTING),
    (r"\b(?:remember|note) (?:this|that)\b|\b(?:keep|bear) (?:this|that|it) in mind\b", LASTING),
    # emphasis: no exception admitted, and the locative of the emphasis with it ("no exceptions
    # here", "zero excuses on this one", "这里没有例外"): an emphasis says the rule holds, never where
    # (heading its clause or after a comma, not a statement's object: "there are no exceptions in the log")
    (r"(?<![a-z]\s)(?<![a-z])\b(?:no|zero|not a single|not one|without|with no|absolutely no)\s+(?:exceptions?|excuses|ifs|buts|"
     r"shortcuts|wiggle room|compromises?|special cases)\b(?:\s*(?:here|on (?:this|that)(?: one| point)?|"
     r"about (?:it|this|that)|whatsoever|at all|to (?:this|that)(?: rule)?))?", LASTING),
    (r"\b(?:non[- ]?negotiable|not negotiable|not (?:up )?for (?:debate|discussion))\b(?:\s*(?:here|on (?:this|that)"
     r"(?: one| point)?))?", LASTING),
    (r"(?:这里|这点|这一点|这件事|这条|这个)?上?\s*(?:没有|没|不接受|不允许|不能有|不存在|不许有|不搞)(?:任何)?例外|无一例外"
     r"|(?:这里|这点|这一点|这件事|这条|这个)?上?\s*没(?:有)?(?:商量|讨价还价)(?:的)?余地", LASTING),
    # a negated doubt or deliberation is finality: "no maybe about it", "not up for debate", "没得商量"
    (r"\b(?:no|not a|without (?:a )?)\s*(?:maybe|perhaps|doubt|question|ifs?(?:,? (?:ands|or) buts)?)\b(?: about it| here)?"
     r"|\b(?:not (?:up )?for (?:debate|discussion)|non[- ]negotiable|not negotiable|end of (?:the )?(?:discussion|story)|"
     r"no (?:debate|discussion|arguments?))\b", LASTING),
    (r"(?:没得|没什么好|没有什么好|不用|无需|不必|不需要|没有)再?(?:商量|讨论|考虑|犹豫|争论)(?:的)?|毫无疑问|没有疑问|不容置疑", LASTING),
    # a kind, a manner, a presentation: not a place
    (r"\b(?:this|that|these|those) (?:kinds?|types?|sorts?|class|classes|category) of\b", "such"),
    (r"\b(?:like this|like that|this way|that way|this style|this pattern|this format|this convention|"
     r"this approach|this rule|this naming|this layout|this structure|this idea|this plan|this proposal)\b", "such"),
    (r"\bhere(?:'s| is) (?:the|my|our) (?:call|deal|verdict)\b", "final call"),  # a decision frame, no place
    (r"\bhere(?:'s| is| are)\b", " "),
    (r"\bnever ?mind\b", "ok"),  # a cancellation, no prohibition
    # a rule in the shape of a complaint (issue 29): a complaint about having to repeat it says the rule
    # stands ("how many times do I have to say it…", "for the hundredth time,", "每次都要我提醒"), and a
    # rhetorical "why do you keep X-ing …?" is "stop X-ing …", no question
    (r"\bhow many (?:more )?times (?:do|must|should|have|did|will) (?:i|we) (?:have to |need to |got to )?(?:say|tell you|"
     r"repeat|ask|remind you|mention)(?: (?:this|it|that))?(?: again)?\b[?!.…]*"
     r"|\bfor the (?:\w+th|last|nth|umpteenth|\d+(?:st|nd|rd|th)) time\b"
     r"|\bwhy (?:do|must) (?:i|we) (?:always |still |keep )?(?:have to |having to )?(?:tell|remind|ask) you"
     r"(?: (?:this|that|again))*\b[?!.…]*"
     r"|\b(?:i've|i have) (?:told|asked|reminded) you (?:this |that )?(?:a (?:hundred|million|thousand) times|"
     r"(?:so )?many times|before|already|twice)\b", LASTING),
    (r"\bwhy (?:do|are|must|did) you (?:keep |always |still )+(?:on )?([a-z]+ing\b[^?]*)\?", LASTING + r" stop \1"),
    (r"(?:每次|老是|总是|还)都?(?:要|得)我(?:来)?(?:提醒|说|讲|强调)(?:一遍|一次|几遍|几次)?"
     r"|(?:说|讲|提醒|强调)了?(?:多少|几|无数|好多)(?:次|遍)了?", LASTING),
    # "we … here" is where the team works, not a place in the code: "we don't do that here", "not how we
    # do things around here" (a plain "here" stays local: "put the helper in here")
    (r"\b((?:we|we're|we are)(?: (?:don't|do not|never|always|usually|only|generally))?(?: do)? (?:that|this|it|things|"
     r"such)(?: that way| this way)?)\s(?:around |in )?here\b", r"\1"),
    # Chinese: a start point, a negated limit, universality, a deferral holding 以后, a kind or manner
    (r"从[^，。,、]{0,10}?(?:开始|起)(?!来)", LASTING),
    (r"(?:此后|今后|往后|自此)", "以后"),
    (r"(?:并?不只是|不仅仅是?|不仅是|不光是|不止是|不单是|不只|不仅|不光|不止|并非只|不是只有|不是只|不是一次性的?|不是临时的?)"
     r"[^，。,、]{0,12}", LASTING),
    (r"(?:即使是|就算是|哪怕是|即便是|即使|就算|哪怕|即便|无论|不管)[^，。,、]{0,16}", LASTING),
    (r"(?:以后|之后|回头|改天|有空)再(?:说|看|议|讨论|决定|聊|考虑|商量)", DEFER),
    (r"(?:这种|这类|这一类)", "此类"),
))


# A limit word as an attribute of the governed thing ("temporary branches must be deleted", "no more
# one-off scripts", "临时表必须删除") describes what the rule governs, not how long the rule holds.
# It is the attribute of a generic noun phrase: after a quantifier ("every temporary file", "所有临时
# 分支") or on a bare plural ("one-off scripts go in scratch/"); before a verb (临时关掉), after "a",
# "this" or "as a" ("a temporary workaround", "as a one-off"), it limits the clause.
_EN_LIMIT_ADJ = re.compile(r"\b(?:temporary|one[- ]off|one[- ]time|throw[- ]?away|interim|ad[- ]hoc)\s+(?=[a-z])")
_EN_QUANTIFIER = frozenset("every each any all no more our your new other such those these".split())
_EN_SINGLE = frozenset("a an this that as the".split())
_NOT_PLURAL = re.compile(r"(?:ss|us|is|was|has|does|goes)$")
_ZH_LIMIT_ATTR = re.compile(
    r"(?:(?<=所有)|(?<=每个)|(?<=任何)|(?<=凡是)|(?<=全部))(?:的)?(?:临时|一次性)(?:的)?"
    # the subject of a norm heading its clause: "临时方案必须有对应的 issue" (not a label: "临时方案：…")
    r"|(?:^|(?<=[，,。：:；;\s]))(?:临时|一次性)(?=(?:方案|措施|办法|修复|补丁)(?![的]?\s*[：:]))"
    r"|(?:临时|一次性)(?!\s*(?:把|先|用|改|关|开|加|去|删|禁|跳|注释|屏蔽|放|切|换|调|跑|写|打|起|停|不|别|一下|地|处理|应付|顶"
    r"|凑|绕|方案|措施|办法|修复|补丁|解决|决定|改动|变更|做|搞|弄|性|的\s*(?:[。！!，,]|$)|\s*(?:[。！!，,]|$)))")


def _attribute(m: re.Match[str]) -> str:
    before = m.string[:m.start()].split()
    prev = before[-1] if before else ""
    if prev in _EN_QUANTIFIER:
        return ""
    if prev in _EN_SINGLE or (len(before) > 1 and before[-2] in ("as", "is", "'s") and prev in ("a", "an")):
        return m.group(0)
    nxt = m.string[m.end():].split()[:2]
    return "" if any(w.endswith("s") and not _NOT_PLURAL.search(w) for w in nxt) else m.group(0)


_CJK = re.compile("[\u3400-\u9fff]")
_LATIN = re.compile("[a-z]")
# each mask with the script it reads (a text without that script skips it)
_SCRIPTED = tuple((pattern, f" {repl} " if repl.isascii() or repl in (LASTING, DEFER) else repl,
                   bool(_CJK.search(pattern.pattern)), bool(re.search(r"\\b|[a-z]{3}", pattern.pattern)))
                  for pattern, repl in _MASKS)


def mask(text: str) -> str:
    """`text` (normalized) with the misleading phrases rewritten (module doc)."""
    cjk, latin = bool(_CJK.search(text)), bool(_LATIN.search(text))
    for pattern, repl, zh, en in _SCRIPTED:
        if (zh and cjk) or (en and latin) or not (zh or en):
            text = pattern.sub(repl, text)
    if latin:
        text = _EN_LIMIT_ADJ.sub(_attribute, text)
    if cjk:
        text = _ZH_LIMIT_ATTR.sub("", text)
    return " ".join(text.split())


# reasons and purposes: "…, because X" / "Because X, …" / "so that X" / "因为…" / "以免…"
_REASON_TAIL = re.compile(
    r"[,，]?\s*\b(?:because|cause|cuz|coz|since(?! (?:\d|v\d|version|release|yesterday|last|the last|then))|"
    r"so that|in order to|as otherwise|otherwise|given that|due to|to avoid|to prevent)\b.*$"
    r"|[，,]?\s*(?:因为|由于|以免|免得|否则|不然|省得|以防|为了避免).*$")
_REASON_HEAD = re.compile(
    r"^(?:(?:because|since|given that|due to|to avoid|to prevent|now that|seeing (?:as|that))\s"
    r"|as (?=(?:i|i'm|we|we're|you|they|he|she|it|the|our|my|your|their|half|most|some|many|all|this|these|that|"
    r"those|everyone|nobody|people)\b)|因为|由于|为了|既然|鉴于)[^,，]*[,，]\s*")


def reason_head(text: str) -> tuple[str, str]:
    """(`text`'s fronted reason, the rest): "since these run from cron, log to syslog" → ("since
    these run from cron,", "log to syslog"); ("", text) when it has none."""
    head = _REASON_HEAD.match(text)
    if head and head.end() < len(text):
        return text[:head.end()], text[head.end():]
    return "", text


def main_part(text: str) -> str:
    """`text` (normalized, masked) without its reason and purpose clauses."""
    text = reason_head(text)[1]
    stripped = _REASON_TAIL.sub("", text).strip()
    return stripped or text


_COMMA = re.compile(r"\s*[,，:：]\s*")


def commas(text: str) -> list[str]:
    return [c for c in _COMMA.split(text) if c.strip()]


# ------------------------------------------------------------------------------------- segments


@dataclass(frozen=True)
class Segment:
    raw: str  # the segment's RAW text
    text: str  # normalized and masked
    start: int
    end: int
    sentence: int = 0  # index of its sentence in the turn (segments of a sentence are split by a contrast)


def _spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, sentence index) of every segment."""
    out: list[tuple[int, int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.start() + (1 if text[m.start()] in "?？" else 0)  # a question keeps its mark
        if end > pos:
            out += _contrast_spans(text, pos, end, len(out))
        pos = m.end()
    if pos < len(text):
        out += _contrast_spans(text, pos, len(text), len(out))
    return out


def _contrast_spans(text: str, a: int, b: int, sentence: int) -> list[tuple[int, int, int]]:
    out, pos = [], a
    for m in _CONTRAST.finditer(text, a, b):
        if m.start() > pos:
            out.append((pos, m.start(), sentence))
        pos = m.end()
    if pos < b:
        out.append((pos, b, sentence))
    return out


MAX_TEXT = 8000  # characters of a turn read when no quote narrows it (a pasted log stays cheap)
CONTEXT = 240  # characters read on each side of a quote: a word further away does not govern it


@functools.lru_cache(maxsize=512)  # a turn's text is read once per candidate source and per comment
def segments(text: str, quote: str | None = None) -> tuple[Segment, ...]:
    """The segments of `text` overlapping `quote`, cut to CONTEXT characters on each side of it
    (every segment of the first MAX_TEXT characters when `quote` is None; the quote alone when it
    is not in the text). Offsets are the segment's place in `text`."""
    if quote is None:
        base, window, start, end = 0, text[:MAX_TEXT], 0, min(len(text), MAX_TEXT)
    else:
        found = text.find(quote)
        if found < 0:
            raw = quote.strip()[:MAX_TEXT]
            return (Segment(raw, mask(normalize(raw)), 0, len(quote)),)
        base = max(0, found - CONTEXT)
        window = text[base:found + len(quote) + CONTEXT]
        start, end = found - base, found - base + len(quote)
    out = []
    for a, b, sentence in _spans(window):
        if a < end and b > start or (a == b == start):
            raw = window[a:b].strip(" \t,，")
            if raw:
                out.append(Segment(raw, mask(normalize(raw)), base + a, base + b, sentence))
    if not out:
        raw = (quote or window).strip()[:MAX_TEXT]
        out.append(Segment(raw, mask(normalize(raw)), base + start, base + end))
    return tuple(out)


@functools.lru_cache(maxsize=512)
def _turn_spans(text: str) -> tuple[tuple[int, int, int], ...]:
    return tuple(_spans(text[:MAX_TEXT]))


def _segment(text: str, a: int, b: int, sentence: int) -> Segment | None:
    raw = text[a:b].strip(" \t,，")
    return Segment(raw, mask(normalize(raw)), a, b, sentence) if raw else None


def adjacent(text: str, first: Segment, last: Segment) -> list[tuple[Segment, str, bool]]:
    """The segments of `text` right before `first` and right after `last` when they belong to
    another sentence: (segment, the text between them, True for the one after). Only these two
    are normalized and masked, whatever the length of the turn."""
    if last.end > MAX_TEXT:
        return []
    spans = _turn_spans(text)
    out: list[tuple[Segment, str, bool]] = []
    i = next((k for k, (a, b, _) in enumerate(spans) if a <= first.start < max(b, a + 1)), None)
    if i is not None and i > 0 and spans[i - 1][2] != spans[i][2]:
        seg = _segment(text, *spans[i - 1])
        if seg:
            out.append((seg, text[seg.end:first.start], False))
    j = next((k for k, (a, b, _) in enumerate(spans) if a < last.end <= b), None)
    if j is not None and j + 1 < len(spans) and spans[j + 1][2] != spans[j][2]:
        seg = _segment(text, *spans[j + 1])
        if seg:
            out.append((seg, text[last.end:seg.start], True))
    return out


__all__ = ["DEFER", "LASTING", "LOCAL", "Segment", "adjacent", "commas", "main_part", "mask", "normalize",
           "reason_head", "segments"]
