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
  directive points back to ("since this module is generated, don't edit it")."""

from __future__ import annotations

import re

from autopatch_tui.core.pipeline import lexicon as L
from autopatch_tui.core.pipeline.clauses import LASTING, LOCAL

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
    if len(text) > 60 or not _SCOPE.search(text):
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
    if kind == "start":
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
    r"|(?:stick|stay) (?:to|with) (?:it|that|this|them|such)|stay (?:on|the course)(?: (?:it|that|this|them))?"
    r"|(?:continue|carry on)(?: with| doing)? (?:it|that|this|them|such)"
    r"|(?:don't|do not|never) change (?:it|that|this|them)|maintain (?:it|that|this|them|such)|preserve (?:it|that|this|them)"
    r"|(?:the )?same (?:going forward|from now on|in future)"
    r"|(?:that|this|it)(?:'s| is| will be) (?:the|our) (?:rule|way|standard|convention|policy|default)"
    r"|(?:that|this|it)(?:'s| is) (?:final|settled|decided)|that's how (?:we do it|i want it|it stays))"
    r"(?:\s+(?:going forward|from now on|please|always|here|for now|for the time being|for the moment|"
    + re.escape(LASTING) + r"))*$")
_ZH_MAINTAIN = re.compile(
    r"^(?:请|就|那就)?(?:以后|今后|之后|往后|将来)?(?:也|都|就|还|继续|一直|始终)*(?:要|得)?"
    r"(?:(?:保持|坚持|沿用|维持|延续)(?:这样|这个|如此|下去|不变|原样|现状|着)?|(?:照|按|照着|按照)(?:这个|此|这样)(?:来|做|办|写)?"
    r"|(?:别|不要|不许)(?:改|动|变)|照旧|不变|这样|如此)(?:就好|就行|下去)?(?:吧|哈|啊|呀)?$")
_ZH_ANCHOR = re.compile(r"保持|坚持|沿用|维持|延续|照|按|以后|今后|往后|将来|继续|一直|始终|别改|不要改|别动|不要动|不变")


def maintains(text: str) -> bool:
    """A directive that only tells to keep what was just described."""
    body = text.strip(_TRAIL + "?？")
    if _EN_MAINTAIN.match(body):
        return True
    compact = body.replace(" ", "")
    return bool(_ZH_MAINTAIN.match(compact) and _ZH_ANCHOR.search(compact))


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


__all__ = ["ANAPHOR", "LOCAL", "SO", "TEMPORAL", "lift", "maintains", "reason_limit", "scope_fragment", "verbless"]
