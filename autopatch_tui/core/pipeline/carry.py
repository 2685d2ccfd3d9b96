"""What one clause of a turn lends to its neighbour: the Memory gate's reading across clause and
sentence boundaries (used by `reading.py`; text is normalized and masked, `clauses.py`).

- A *scope fragment* is a clause or a sentence with no proposition of its own, only a scope:
  "Always.", "Never.", "No exceptions.", "永远。", "以后也是。" (lasting), or a start point or negated
  limit, "from now on —", "this isn't just for the login page —" (a start). It is no directive
  itself; it lends its scope to the clause it belongs to: a trailing one to the sentence before it
  ("No force pushes to main. Never."), a leading one to what follows a dash or a colon.
- `lift` is what the lent scope makes of a declarative: a start point makes any statement a
  commitment about the future ("from now on the build targets Java 21"); a lasting adverb makes a
  verbless phrase a norm ("Tabs. Always.") and a first-person-plural habit a commitment ("We squash.
  Always."), but leaves a statement about the system a fact ("CI is green. Always.").
- A *maintaining directive* points back to a description and tells to keep it ("Keep it that way.",
  "stick with that", "don't change that", "保持这样", "以后也照这个来"): the description becomes a
  decision, and a lasting one.
- A *fronted reason* ("I read these on my phone, so keep …", "since these run in cron, …", "这些
  脚本在 CI 里跑，所以…") is context: its demonstratives do not limit the directive that follows. A
  limit in time does carry ("I'm on my phone today, so keep it short"), and so does a local one the
  directive points back to ("since this module is generated, don't edit it").
- Round three (issue #19): a *decision frame* ("house rule —", "rule no. 3 for this repo:", "we
  decide:", "as a rule,", "规矩是：") and an *interjection* with a lasting word ("— and I mean always
  —") make the clause they announce a lasting commitment; a sentence *pointing back* as one of its
  conjuncts ("we settled that and I want you to stick to it", "That's final.", "consider it done")
  makes a description a lasting decision, a weaker one *extending* it ("same for the CLI going
  forward") only makes a directive last; a prohibition naming the *contrasted alternative* ("we use
  X, not Z — don't suggest Z again") makes "we use X" a commitment; a decision later *undone* ("…
  but it got dropped") is history."""

from __future__ import annotations

import re
from collections.abc import Sequence

from autopatch_tui.core.pipeline import lexicon as L
from autopatch_tui.core.pipeline.clauses import (
    LASTING,
    LOCAL,
    Segment,
    adjacent,
    main_part,
    segments,
)

MAX_REVERSAL = 2000  # characters of a turn searched for the rest of a quoted sentence

_TRAIL = " .!。！~～…'\"”)）】,，:：;；-—–"

# words that carry nothing once the scope words are gone ("Always, period.", "It applies everywhere.", "以后都这样。")
_FILLER = re.compile(
    r"(?<![a-z])(?:and|also|just|yes|yeah|please|seriously|really|ok|okay|so|it's|that's|this is|this|that|it|is|are|"
    r"(?:the|this|that|our|the same) (?:rule|policy|convention|one)|such|"
    r"applies|apply|holds|hold|counts|goes|too|as well|again|period|full stop|no matter what|i mean it|"
    r"everywhere|anywhere|to everything|for everything|for all|for everyone|across the board|here and everywhere|"
    r"same|the same|like always)(?![a-z])"
    r"|也|都|是|这样|如此|一样|同样|的|了|吧|啊|哦|嘛|呀|哈|照旧|适用")
_PUNCT = re.compile(r"[\s" + re.escape(_TRAIL) + r"?？]+")


# scope adverbs (not "settled", "must", "remember": a decision, a modal, a verb make a clause)
_SCOPE = L.rx(re.escape(LASTING), L.en(
    r"always", r"never(?: ever)?", r"ever(?: again)?", r"forever", r"from now on", r"going forward", r"moving forward",
    r"henceforth", r"hereafter", r"(?:in|for) (?:the )?future", r"every ?time", r"each time", r"by default",
    r"at all times", r"any ?more", r"no longer", r"for good", r"permanently", r"no exceptions?", r"without exception",
    r"consistently", r"everywhere", r"across the board", r"without fail", r"no matter what", r"in every case"),
    r"以后|今后|往后|日后|永远|始终|一直|一律|每次|从此|从今以后|从今往后|向来|一向|总是|长期|永久|到处|处处|任何时候")


def scope_fragment(text: str) -> str | None:
    """"start" or "lasting" when `text` (one clause or segment) is nothing but a lasting scope, else None."""
    if len(text) > 60:
        return None
    if emphasis(text):
        return "emphasis"
    if not _SCOPE.search(text):
        return None
    rest = _FILLER.sub(" ", _SCOPE.sub(" ", text))
    if _PUNCT.sub("", rest):
        return None
    return "start" if L.LASTING_START.search(text) else "lasting"


# a verbless phrase: no finite verb, no determiner-led subject, no version number ("Postgres 15")
_VERSION = re.compile(r"([a-z][\w.+-]*)\s+v?\d+(?:\.\d+)*(?![\w.]*\s*[a-z])|\d+\.\d+")
_COUNTING = frozenset("not no than over to of by at under max min maximum minimum about around per only exactly "
                      "least most up".split())


def _version(head: str) -> bool:
    """A name with a version or a number ("postgres 15", "node 20", "3.11"), not a count ("not 2", "max 100")."""
    return any(not m.group(1) or m.group(1) not in _COUNTING for m in _VERSION.finditer(head))


def verbless(head: str, *, participle: bool = False) -> bool:
    """No finite verb (a contracted "it's" is one; an -ed/-ing form is one too, unless `participle`
    and it modifies a following word: "nested ifs", "named exports"), no determiner-led subject, at
    most six words, no version number."""
    words = head.replace(",", " ").split()
    return (0 < len(words) <= 6 and words[0] not in L.DETERMINERS and not _version(head) and head.isascii()
            and not any(w in L.FINITE or w.endswith(("'s", "'re", "'m"))
                        or (w.endswith(("ed", "ing")) and not (participle and i < len(words) - 1))
                        for i, w in enumerate(words)))


_WE_HABIT = re.compile(r"^we (?!(?:were|was|had|did|used)\b)(?![a-z]+ed\b)")


def lift(head: str, kind: str) -> str | None:
    """The mood a declarative clause (its head, leading fillers stripped) takes under a lent scope
    of `kind`, or None when it stays a declarative."""
    if kind in ("start", "frame", "emphasis"):
        return "commitment"
    if verbless(head):
        return "directive"
    if _WE_HABIT.match(head) or head.startswith(("我们", "咱们")):
        return "commitment"
    return None


# "keep it that way" is masked to "keep it such"; "that's the rule" points back too
_EN_MAINTAIN = re.compile(
    r"^(?:(?:and|so|please|just|ok|okay|now|also|then|yes|yeah)\s+)*(?:let's\s+)?(?:"
    r"keep (?:it|them|things|that|this)(?: such| so| going| as it is| the same)?"
    r"|keep (?:doing|using|following) (?:it|that|this|them|such)"
    r"|(?:stick|stay|keep|hold) (?:to|with) (?:it|that|this|them|such)|stay (?:on|the course)(?: (?:it|that|this|them))?"
    r"|follow (?:it|that|this|them|such)"
    r"|(?:continue|carry on)(?: with| doing)? (?:it|that|this|them|such)"
    r"|(?:don't|do not|never) change (?:it|that|this|them)|maintain (?:it|that|this|them|such)|preserve (?:it|that|this|them)"
    r"|(?:the )?same (?:going forward|from now on|in future)"
    r"|(?:that|this|it)(?:'s| is| will be) (?:the|our) (?:rule|way|standard|convention|policy)"
    r"|(?:that|this|it)(?:'s| is) (?:final|settled|decided)|that's how (?:we do it|i want it|it stays))"
    r"(?:\s+(?:going forward|from now on|please|always|here|for now|for the time being|for the moment|"
    + re.escape(LASTING) + r"))*$")
_ZH_MAINTAIN = re.compile(
    r"^(?:请|就|那就)?(?:以后|今后|之后|往后|将来)?(?:也|都|就|还|继续|一直|始终)*(?:要|得)?"
    r"(?:(?:保持|坚持|沿用|维持|延续)(?:这样|这个|如此|下去|不变|原样|现状|着)?|(?:照|按|照着|按照)(?:这个|此|这样)(?:来|做|办|写)?"
    r"|(?:别|不要|不许)(?:改|动|变)|照旧|不变|这样|如此)(?:就好|就行|下去)?(?:吧|哈|啊|呀)?$")
_ZH_ANCHOR = re.compile(r"保持|坚持|沿用|维持|延续|照|按|以后|今后|往后|将来|继续|一直|始终|别改|不要改|别动|不要动|不变")


def _maintains(body: str) -> bool:
    if _EN_MAINTAIN.match(body):
        return True
    compact = body.replace(" ", "")
    return bool(_ZH_MAINTAIN.match(compact) and _ZH_ANCHOR.search(compact))


# A sentence pointing back at what was just said and making it a lasting decision, as one of its
# conjuncts: "we agreed on that in March and I want you to keep to it", "That's final.", "From here
# on that's how every service does it.", "Going forward that goes for the CLI too.", "consider that
# settled, don't reopen it" (not a report of the thing itself: "It always is.", "that was a good call")
_BACK = L.rx(
    r"^(?:we|the team|everyone|we all|our team|i)(?: all| both)?(?: \w+ly)? (?:agreed|settled|decided|aligned|voted|"
    r"signed off)(?: on| to| about)? (?:that|this|it)(?![a-z])",
    r"^(?:that|this|it)(?:'s| is| will be)? (?:how (?:we|you|every(?:one| \w+)|all (?:of )?(?:us|\w+)|each \w+|the team|"
    r"i) (?:\w+ )?(?:do|does|handle|handles|want|wants|like|likes|want it|work|works)(?: it| things| this| that)?|"
    r"final|settled|decided|non[- ]negotiable|set in stone|not up for debate)(?![a-z])",
    # a rule noun closes the sentence ("that's the rule (from now on)"; not "that's the default", "the way it works")
    r"^(?:that|this|it)(?:'s| is| will be)? (?:the|our|a) (?:rule|standard|norm|convention|policy|law)"
    r"(?: here| now| from now on| going forward| " + re.escape(LASTING) + r")?$",
    r"^(?:consider|treat|call|take) (?:that|this|it) (?:as )?(?:settled|done|final|decided|closed|the rule|law|agreed)",
    r"^(?:don't|do not|never|no need to) (?:reopen|revisit|relitigate|re-?litigate|question|argue about|second[- ]guess|"
    r"bring (?:it|that|this) up|debate|change your mind on)(?![a-z])",
    r"^(?:i|we)(?:'d| would)? (?:want|like|need|expect|ask)(?: you)? to (?:keep|stick|stay|hold) (?:to|with) "
    r"(?:it|that|this|them)(?![a-z])",
    r"^(?:i|we)(?:'d| would)? (?:want|like|need|expect) (?:it|this|that|them) (?:kept|to stay|to remain|left)(?![a-z])",
    r"^(?:这|那)(?:就|个|条)?(?:是)?(?:定了|定下来了|规矩|规定|最终的|不用再讨论)|^(?:别|不要|不用)再(?:讨论|争|改|提|议)了?",
)
_CONJUNCT = re.compile(r"\s*(?:[,;，；]\s*|\s(?:and|so|then)\s)\s*")
_BACK_LEAD = re.compile(r"^(?:(?:and|so|also|please|just|ok|okay|yes|yeah|then|" + re.escape(LASTING)
                        + r"|going forward|moving forward|from now on|always|以后|今后|往后)[,\s]+)+")


# A weaker pointer: it extends what was said to more places ("Going forward that applies to the admin
# app as well", "Same for the plugins."): a directive lasts, a description stays what it was
_EXTENDS = L.rx(
    r"^(?:that|this|it|the same(?: rule)?|same)(?: rule)? (?:goes|applies|holds|counts|stands)(?: (?:for|to)(?![a-z])|$)",
    r"^(?:the )?same (?:for|with|in|goes for|applies to)(?![a-z])",
    r"^(?:这|那)?(?:个|条)?(?:也|同样)(?:适用于|适用)",
)


def extends(text: str) -> bool:
    """A sentence extending what was just said elsewhere, with a lasting word (`_EXTENDS`)."""
    body = _BACK_LEAD.sub("", text.strip(_TRAIL + "?？"))
    return bool(_EXTENDS.search(body)) and bool(L.LASTING_SCOPE.search(text))


def maintains(text: str) -> bool:
    """A directive that only tells to keep what was just described, or a sentence pointing back at
    it as a lasting decision (`_BACK`, one of its conjuncts)."""
    body = text.strip(_TRAIL + "?？")
    if _maintains(body):
        return True
    for part in _CONJUNCT.split(body):
        part = _BACK_LEAD.sub("", part.strip(_TRAIL))
        if part and (_maintains(part) or _BACK.search(part)):
            return True
    return False


# a decision frame: a label announcing the rule or decision that follows a colon or a dash ("house
# rule —", "rule #2 for this repo:", "we decide:", "ok, we're going with this:", "as a rule,",
# "规矩是：", "定了："); a noun phrase whose head is the rule, not a thing named after one
# ("rule evaluation:", "the policy engine returns …")
_FRAME = L.rx(
    r"^(?:(?:ok|okay|so|alright|right|well|fine|and|then|yes|yeah)[,\s]+)*(?:"
    r"(?:(?:the|our|my|a|one|another|new|team|house|golden|hard|simple|standing|project|repo|first|second|third|only|"
    r"main|big|key|iron|ground|general|firm|strict|official|final|team's)\s+)*"
    r"(?:rule|policy|convention|decision|principle|guideline|standard|agreement|verdict|ruling|law|mandate|"
    r"plan|norm|practice|(?<=final )call|(?<=team )call|(?<=my )call|(?<=our )call)s?(?:\s*(?:#|no\.?|number)\s*\d+)?(?:\s+(?:made|taken|reached))?"
    r"(?:\s+(?:for|in|on|across|of|around) [^,:]{1,30}?)?"
    r"(?:\s+(?:from now|from here|going forward|" + re.escape(LASTING) + r"|here|then|now|of thumb|of the house))?"
    r"(?:\s+(?:is|are|here|stands|remains|reads|as follows|goes|going forward)(?:\s+(?:simple|this|clear|that|now))?)?"
    r"|we(?:'ve| have| all| just| hereby)?\s+(?:decide|decided|agree|agreed|settle|settled|conclude|concluded|rule|ruled)"
    r"(?: on (?:this|that|the following|it))?(?: then| now)?"
    r"|we(?:'re| are) (?:going with|doing|sticking with) (?:this|that|the following)"
    r"|(?:it's|it is|that's|this is) (?:decided|settled|official|final|agreed)"
    r"|as a (?:rule|policy|convention|principle|matter of (?:policy|principle))"
    r")$",
    r"^(?:那|好|行|嗯)?[，,]?\s*(?:我们|咱们|大家|团队|项目)?的?(?:规矩|约定|原则|规定|结论|决定|共识|口径|铁律|惯例|规则|纪律)"
    r"(?:是|就是|如下|一条|之一)?$|^(?:定了|说定了|说好了|决定了|就这么定了|拍板了)$",
)
# an interjection carrying a lasting word: "— and I really mean always —", ", and I mean for every service,"
_INTERJECTION = re.compile(r"^(?:and |but |yes |yeah )?(?:i|we) (?:really |truly |do |absolutely |seriously )?mean"
                           r"(?:t)?(?: it)?,?\s+(?:(?:this|it) (?:for|applies to)\s+)?(?P<rest>.+)$")


def frame(text: str) -> bool:
    """`text` (one clause) is a decision frame (`_FRAME`)."""
    return bool(_FRAME.search(text.strip(_TRAIL)))


def emphasis(text: str) -> bool:
    """`text` is an interjection carrying a lasting word (`_INTERJECTION`)."""
    m = _INTERJECTION.match(text.strip(_TRAIL))
    return bool(m and len(m.group("rest")) <= 40 and L.LASTING_SCOPE.search(m.group("rest")))


# a report that a decision was undone: "we decided on Kafka but it got dropped"
REVERSAL = L.rx(
    L.en(r"(?:got|was|were|has been|have been|is being) (?:dropped|reverted|abandoned|cancell?ed|scrapped|rolled back|"
         r"undone|killed|shelved|overruled|replaced|reversed|walked back)", r"never (?:happened|shipped|stuck|landed)",
         r"(?:we|they|the team|everyone) (?:dropped|reverted|abandoned|scrapped|undid|rolled back|moved off|"
         r"migrated off|went back|backed out|changed (?:our|their) minds?|gave up on|ditched|dumped|binned|killed|replaced|"
         r"walked away from|moved away from|switched away from|got rid of)",
         r"didn't (?:stick|happen|last|work out|go anywhere)", r"fell through"),
    r"后来(?:又)?(?:放弃|撤回|改回|取消|没用|没做|不用|作废)|已经(?:废弃|放弃|撤销|作废)|没(?:能)?落地|不了了之",
)


def undone(text: str, segs: Sequence[Segment], last: Segment) -> bool:
    """A quoted segment, the rest of the sentence of `last` or the next sentence reports that what
    was decided was undone ("we decided on Kafka last year, but it got dropped")."""
    later = list(segs)  # a comma clause of the decision's own segment too ("…, then we ditched it")
    later += [n for n, _, after in adjacent(text, last, last) if after]
    if last.end < MAX_REVERSAL:
        turn = segments(text[:MAX_REVERSAL])
        own = next((s.sentence for s in turn if s.start <= last.start < s.end), None)
        later += [s for s in turn if s.start >= last.end and s.sentence == own]
    return any(REVERSAL.search(main_part(s.text)) for s in later[:4])  # not in a reason: "because X got dropped"


# a contrasted alternative: "we use httpx, not requests" → "requests"
_ALTERNATIVE = re.compile(r"(?:[,，]\s*|\s)(?:not|instead of|rather than|over|而不是|不用|不是)\s*([^,，.;；:：]+)")
_WORD = re.compile(r"[a-z][a-z0-9_.+-]{2,}|[\u4e00-\u9fff]{2,}")


def names_alternative(description: str, directive: str) -> bool:
    """`directive` names the alternative `description` contrasts its choice with ("we use httpx for
    HTTP, not requests" / "don't suggest requests again")."""
    alternatives = {w for m in _ALTERNATIVE.finditer(description) for w in _WORD.findall(m.group(1))}
    alternatives -= {"the", "and", "for", "with", "any", "one", "this", "that"}
    return any(w in directive for w in alternatives)


# a fronted reason: the directive is what follows "so" / "所以"
SO = re.compile(r"\s*[,;，；]?\s+(?:and\s+)?(?:so|therefore|hence|thus|that's why|which is why)\b(?!\s+(?:that|far|much|"
                r"many|long|yeah|good|bad|slow|fast)\b)\s*,?\s*|\s*[,;，；]?\s*(?:所以|因此|因而|于是)[，,]?\s*")
# a limit of the present situation, carried from a reason into the directive after it
TEMPORAL = re.compile(
    L.en(r"today", r"tonight", r"tomorrow", r"this (?:week|weekend|morning|afternoon|evening|sprint)", r"right now",
         r"for now", r"at the moment", r"for the time being", r"just now",
         r"in (?:\d+|a few|a couple of|a|an|ten|five|twenty|thirty) (?:min(?:ute)?s?|hours?|h)")
    + r"|今天|今晚|明天|这两天|这几天|这周|本周|这会儿|眼下|暂时|这阵子")
# a short question about what was just said: "Is that right?", "这样合理吗？" (not a tag: "OK?")
ANAPHOR_DOUBT = re.compile(L.en(r"that", r"this", r"it", r"that one") + r"|这样|这个|那样|这么做|这么")
ANAPHOR = re.compile(L.en(r"it", r"them", r"that one", r"this one", r"there", r"its") + r"|它|它们|那里|这里")


def reason_limit(reason: str, directive: str) -> bool:
    """The reason before a directive limits it: a limit in time, or a local scope the directive
    points back to."""
    if TEMPORAL.search(reason):
        return True
    return bool(L.LOCAL_SCOPE.search(reason) and ANAPHOR.search(directive))


__all__ = ["ANAPHOR", "LOCAL", "REVERSAL", "SO", "TEMPORAL", "emphasis", "extends", "frame", "lift", "maintains",
           "names_alternative", "reason_limit", "scope_fragment", "undone", "verbless"]
