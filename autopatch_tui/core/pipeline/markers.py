"""Deterministic word lists of the validation rules that are not the clause reader's (English and
Chinese): apply-only replies, code-fact patterns of a discussion's fields, acknowledgements,
conclusion claims, counter-examples of an inferred repetition, and the English recall aliases of a
Chinese decision. The gate's reading of a user's clause (mood, scope, hedges, one-offs) lives in
`clauses.py`, `lexicon.py` and `reading.py`.

They are deliberately short and conservative: each list guards one rule of the Memory spec."""

from __future__ import annotations

import re
import unicodedata

# A statement meant to last ("以后", "always"): with a state marker it makes a discussion field an
# intent, not a code fact (`is_code_fact_clause`).
LASTING_MARKERS = (
    "以后", "今后", "之后都", "始终", "总是", "一直", "永远", "一律", "所有", "每次", "默认", "全部", "统一",
    "从现在起", "从今以后", "必须", "禁止", "不要再", "不再", "不允许", "项目里", "整个项目",
    "always", "never", "from now on", "going forward", "every time", "all ", "by default", "in general",
    "must", "project-wide", "across the project", "everywhere", "in this project", "whenever", "don't ever",
)
# A user turn that only applies a proposed patch or acknowledges: never a durable source.
APPLY_ONLY = {
    "apply", "/apply", "apply it", "apply patch", "apply the patch", "apply this", "ok apply", "yes apply",
    "应用", "应用补丁", "应用吧", "确认应用", "apply them", "apply all", "a", "y", "yes", "ok", "好", "好的",
}
# Code facts (what code is or does) must not be stored as discussion context.
CODE_FACT_PATTERNS = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"`[^`]+`",                                   # code spans
    r"\b[\w./-]+\.[a-z]{1,5}:\d+",                # file.ext:line
    r"\bline \d+\b", r"第\s*\d+\s*行",
    r"\b[A-Za-z_][\w.]*\([^)]*\)",                # call syntax foo(...)
    r"\b(returns?|is defined in|defined at|is declared|calls|invokes|throws|raises)\b",
    r"(返回值?|定义在|声明在|调用了|抛出)",
))


def _has(text: str, words: tuple[str, ...]) -> bool:
    low = text.casefold()
    for w in words:
        if w.isascii():
            if re.search(r"(?<![a-z])" + re.escape(w.strip()) + r"(?![a-z])", low):
                return True
        elif w in low:
            return True
    return False


# the words of applying a patch; the rest of APPLY_ONLY are bare affirmatives ("yes", "ok", "好")
APPLY_WORDS = {"apply", "/apply", "apply it", "apply patch", "apply the patch", "apply this", "ok apply", "yes apply",
               "应用", "应用补丁", "应用吧", "确认应用", "apply them", "apply all", "a", "y"}


def is_apply_only(text: str, *, affirmatives: bool = True) -> bool:
    """The text only applies a patch or (with `affirmatives`) only says yes. A bare "ok" answering a
    proposal of a rule adopts it (`affirmatives=False` in a chat turn, issue 29 round two); "apply"
    is about one change."""
    norm = re.sub(r"[\s,.!。！，]+", " ", text.casefold()).strip()
    return norm in (APPLY_ONLY if affirmatives else APPLY_WORDS)


def has_code_fact(text: str) -> bool:
    return any(p.search(text) for p in CODE_FACT_PATTERNS)


def cjk_dominant(text: str) -> bool:
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return cjk > 0 and cjk * 3 >= latin


# ---------------------------------------------------------------------------------------------
# Lists of the semantic gate (semantic_gate.py) matched on normalized text (NFKC, case-folded,
# zero-width characters removed, whitespace collapsed). Reasoning: docs/memory.md ("The semantic gate").

# Acknowledgement: nothing but agreement, continuation or thanks. It can only confirm an adopted
# assistant proposal; on its own words it never carries a meaning.
ACK_PHRASES = tuple(sorted({
    "ok", "okay", "k", "sure", "yes", "yeah", "yep", "yup", "fine", "great", "good", "thanks", "thank you", "thx",
    "sounds good", "sounds great", "looks good", "looks great", "lgtm", "go ahead", "go on", "continue", "carry on",
    "proceed", "do it", "do that", "agreed", "agree", "i agree", "alright", "all right", "right", "got it", "perfect",
    "nice", "cool", "works for me", "that works", "fair enough", "makes sense", "let's do it", "let's do that",
    "go for it", "ship it", "yes please", "please do", "please", "next", "and", "then", "so", "that", "this", "it",
    "the", "plan", "proposal", "idea", "suggestion", "approach", "one", "as you said", "as you suggested", "your",
    "we", "with", "let's", "just", "exactly", "of course", "definitely", "absolutely", "👍",
    "好", "好的", "好吧", "好滴", "行", "行吧", "可以", "嗯", "嗯嗯", "对", "对的", "是的", "没问题", "同意", "赞同",
    "继续", "继续吧", "接着", "就这样", "就这么办", "这么办", "就按这个来", "按这个来", "按你说的", "照做", "谢谢",
    "收到", "明白", "没错", "那就这样", "就", "按", "这个", "那个", "这样", "这么", "方案", "吧", "了", "呢", "啊",
    "来", "做", "办", "定下来", "确认", "应用", "apply", "/apply", "patch", "补丁", "it is", "yes apply", "ok apply",
}, key=len, reverse=True))

# Code facts in a preference/decision's support or a discussion's fields: a statement of what the
# code or configuration currently IS. Intent markers ("from now on", "以后", "改成") turn the same
# words into a decision, so a fact is a state marker without an intent marker.
STATE_FACT = re.compile(
    r"\b(?:currently|at the moment|right now|as of now|as it stands|is set to|"
    r"targets? (?:java|jdk|python|node|go|rust|es\d+|\w+ ?v?\d[\d.]*)|"
    r"are set to|is configured|are configured|configured (?:to|as|with|for)|is pinned|pinned to|runs on|"
    r"is running|version is|is on version|is at version|ships with)\b"
    r"|(?<!从)(?:现在|目前|当前)(?!起|开始|以后)|配置的是|配置为|设置为|设置的是|用的是|版本是|写的是|里面是")
INTENT_MARKERS = LASTING_MARKERS + (
    "going forward", "let's", "let us", "we'll", "we will", "please", "don't", "do not", "switch to", "migrate to",
    "upgrade to", "move to", "change to", "should", "must be", "has to be", "needs to be", "keep it",
    "以后", "今后", "从现在起", "现在开始", "改成", "改为", "换成", "升级到", "迁移到", "统一", "必须", "不要", "请", "保持",
)
_FILE_NAME = re.compile(r"^[\w.\-/]*[\w-]\.[a-z][a-z0-9]{0,7}$")

# Words that claim a conclusion. In a discussion (an open question by definition) or a candidate
# without the user's own decision they are the assistant's, unless negated ("not decided").
CONCLUSION = re.compile(
    r"(?<![a-z])(?:decided|decision is|chosen|chose|agreed|settled|concluded|conclusion|recommend\w*|it is decided|"
    r"we went with|the choice is|wins|won out|the winner|picked|confirmed|outcome(?: is|:)|verdict)(?![a-z])"
    r"|已决定|决定了|定了|选定|定下|已确定|确定了|已确认|确认了|结论|推荐|建议|胜出|决定(?:改用|采用|换成|用|迁|上|不用|放弃|保留)"
    r"|最终(?:用|选|采用)|就用|选了|选用了")
_CONCLUSION_NEGATED = re.compile(r"(?:\bnot|n't|never|\bno|\bun|\byet to)\s*(?:\w+\s+){0,2}$|(?:没|未|不|还没|尚未|没有)$")

# An assistant reply that only takes note of an open point ("Noted, I'll keep both sides in mind: …",
# "记下了，两边的利弊我都记着"): its words restate the trade-off, they conclude nothing.
NOTE_TAKING = re.compile(r"(?<![a-z])(?:noted|got it|i'll (?:note|keep|track|remember|log|write down|jot)|i will (?:note|keep|"
                         r"track|remember|log)|keeping (?:track|both)|will keep (?:track|it|both)|(?:记|记录)下(?:来)?了|记住了|我会记"
                         r"|先记着|记着)")
_PROPOSES = re.compile(r"(?<![a-z])(?:suggest|recommend|propose|should|let's|better|best|go with|i'd|建议|推荐|应该|不如|最好)")


def only_takes_note(text: str) -> bool:
    """An assistant reply that takes note of a point without proposing or concluding anything."""
    c = normalize_clause(text)
    return bool(NOTE_TAKING.search(c)) and not _PROPOSES.search(c) and not claims_conclusion(c)


# A later repair review where the user kept the original behaviour: a counter-example to an
# inferred repetition.
KEEP_ORIGINAL = re.compile(
    r"\b(?:keep|leave|leaving|retain|revert|undo|restore)\b[^.?!]{0,30}\b(?:original|as is|as it was|unchanged|"
    r"alone|the old|it|this|that|var|them)\b|\b(?:don't|do not|no need to) (?:change|touch|replace)\b|"
    r"\bintentional\b|保留|保持原|不用改|不要改|别改|还原|撤销|维持原|不需要改|原样")

_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")
CLAUSE_END = re.compile(r"[。！？!?;；\n]|(?<=[.])\s+|(?<=[.])$")


def normalize_clause(text: str) -> str:
    """NFKC, zero-width characters removed, case-folded, whitespace collapsed."""
    text = _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", text))
    return " ".join(text.casefold().split())


def has_word(text: str) -> bool:
    """At least one letter or digit (after NFKC and without zero-width characters)."""
    text = _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", text))
    return any(unicodedata.category(ch)[0] in "LN" for ch in text)


CLAUSE_CONTEXT = 240  # characters of a clause kept on each side of the quote


def clauses_around(text: str, quote: str) -> list[str]:
    """The clauses of `text` overlapping `quote`, each with its own terminator ("?" stays). A clause
    is cut to CLAUSE_CONTEXT characters on each side of the quote: a marker further away does not
    govern it, and a pasted log without punctuation stays cheap to match."""
    start = text.find(quote)
    if start < 0:
        return [quote]
    end = start + len(quote)
    out: list[str] = []
    spans, pos = [], 0
    for m in CLAUSE_END.finditer(text):
        if m.end() > start and pos < end:
            spans.append((pos, m.end()))
        pos = m.end()
        if pos >= end:
            break
    if pos < end:
        spans.append((pos, len(text)))
    for a, b in spans:
        piece = text[max(a, start - CLAUSE_CONTEXT):min(b, end + CLAUSE_CONTEXT)].strip()
        if piece:
            out.append(piece)
    return out or [quote]


_ACK_WORDS = frozenset(w for p in ACK_PHRASES if p.isascii() for w in re.findall(r"[a-z0-9'/]+", p))
_ACK_CJK = tuple(p for p in ACK_PHRASES if not p.isascii())  # longest first
_ASCII_WORD = re.compile(r"[a-z0-9'/]+")


def is_acknowledgement(clause: str) -> bool:
    """Nothing but acknowledgement words once they and punctuation are removed: every English word
    is one of the acknowledgement phrases' words, and no other Chinese text is left."""
    c = normalize_clause(clause)
    if not has_word(c) or len(c) > 80:
        return False
    if any(w not in _ACK_WORDS for w in _ASCII_WORD.findall(c)):
        return False
    rest = _ASCII_WORD.sub(" ", c)
    for phrase in _ACK_CJK:
        if phrase in rest:
            rest = rest.replace(phrase, " ")
    return not has_word(rest)


def is_code_fact_clause(clause: str) -> bool:
    c = normalize_clause(clause)
    return bool(STATE_FACT.search(c)) and not _has(c, INTENT_MARKERS)


def is_file_name(subject: str) -> bool:
    return bool(_FILE_NAME.match(normalize_clause(subject).strip()))


def claims_conclusion(text: str) -> bool:
    """A non-negated conclusion word ("decided", "已决定", "recommend") in `text`."""
    c = normalize_clause(text)
    for m in CONCLUSION.finditer(c):
        if not _CONCLUSION_NEGATED.search(c[max(0, m.start() - 24):m.start()]):
            return True
    return False


def keeps_original(text: str) -> bool:
    return bool(KEEP_ORIGINAL.search(normalize_clause(text)))


# Chinese decisions' English recall aliases (semantic_gate.aliases_cover_decision): English terms
# that say nothing about the decided object or action on their own.
ALIAS_GENERIC_TERMS = frozenset("""
    old new legacy previous current former thing stuff code project item data way one part version
    """.split())
# English terms that name an action, constraint or trade-off: a new one of them plus the decided
# object (an English term of the decision, copied or not) covers the decision; object words alone
# ("old client API", "JSON", "pnpm yarn") never do.
ALIAS_ACTION_TERMS = frozenset("""
    delete remove drop keep use adopt avoid forbid ban require allow disable enable migrate migration replace
    switch rename deprecate support compatibility compatible incompatible break breaking skip always never prefer
    upgrade downgrade pin split merge reject accept validate validation cleanup clean rewrite refactor convention
    policy rule limit only default retire retirement purge wipe reset
    return change expire rotate move stay stop start run write read sign verify encrypt escape sanitize squash rebase
    approve enforce standardize standard mandatory required must no not without instead over preferred forbidden
    banned removal deletion deprecation sunset phase rollback revert compile target choose choice pick offline
    shutdown decommission freeze lock isolate separate centralize consolidate unify unified consistent throttle deny
    block gate check test parameterize parameterized every all each per first before after max min
    issue mint grant revoke rely depend serve own expose emit provide generate route proxy publish
    temporary ephemeral expiring immutable optional alone solely exclusively private internal
    """.split())


def is_alias_action(term: str) -> bool:
    """An English alias term naming an action, constraint or trade-off (its -s/-ed/-ing forms too)."""
    if term in ALIAS_ACTION_TERMS:
        return True
    for suffix in ("ing", "ed", "es", "s", "d"):
        if term.endswith(suffix) and len(term) > len(suffix) + 2:
            stem = term[: -len(suffix)]
            if stem in ALIAS_ACTION_TERMS or stem + "e" in ALIAS_ACTION_TERMS:
                return True
    return False


_CONCEPT_SUFFIXES = ("ations", "ation", "ings", "ing", "ments", "ment", "ated", "ates", "ate", "ers", "er", "ed", "es",
                     "s", "e")


def concept(term: str) -> str:
    """The stem an English alias word shares with its morphological variants: "caching", "cache" and
    "cached" name one concept ("cach"), so do "validation"/"validate", "naming"/"names",
    "logging"/"logs". A light suffix folding (one suffix, a stem of three letters or more, a doubled
    final consonant undone): enough to tell that two alias words restate one concept."""
    t = term
    for suffix in _CONCEPT_SUFFIXES:
        if t.endswith(suffix) and len(t) - len(suffix) >= 3:
            t = t[: -len(suffix)]
            break
    if len(t) > 3 and t[-1] == t[-2] and t[-1] not in "aeiousl":
        t = t[:-1]
    return t


_ALIAS_WORD = re.compile(r"[a-z][a-z0-9_'-]*")
_VERB_CONTEXT = frozenset("to must should will never always don't not no can shall doesn't won't can't mustn't "
                          "shouldn't".split())
_FUNCTION = frozenset("the a an any all this that these those our your their its my be been it them more less".split())


def _verb_stem(word: str) -> str | None:
    from autopatch_tui.core.pipeline.lexicon import BASE_VERBS

    for suffix in ("ing", "ed", "es", "s", "d"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stem = word[: -len(suffix)]
            for cand in (stem, stem + "e", stem[:-1] if len(stem) > 3 and stem[-1] == stem[-2] else stem):
                if cand in BASE_VERBS:
                    return cand
    return None


def alias_action_words(alias: str) -> list[str]:
    """The words of an English alias that name an action, constraint or trade-off: a constraint
    word anywhere ("compatibility", "no", "only"), a verb heading the alias ("store timestamps in
    UTC") or after "to"/a modal, an -ed/-ing form ("timezone handling"), an -s form followed by its
    object ("api returns json"). A noun that is also a verb ("json logs", "package manager") is not."""
    from autopatch_tui.core.pipeline.lexicon import BASE_VERBS

    words = _ALIAS_WORD.findall(unicodedata.normalize("NFKC", alias).casefold())
    # a hyphenated compound is read word by word: "colour-only status", "backend-issued tokens"
    words = [p for w in words for p in (w.split("-") if "-" in w.strip("-") else [w]) if p]
    out = []
    for i, w in enumerate(words):
        stem = _verb_stem(w)
        prev = words[i - 1] if i else ""
        if (is_alias_action(w) or (w in BASE_VERBS and (i == 0 or prev in _VERB_CONTEXT))
                or (stem and (w.endswith(("ing", "ed")) or i < len(words) - 1))
                # any word after a negation or a modal is its verb: "don't rely on colour alone"
                or (prev in _VERB_CONTEXT and prev not in ("no", "every", "all") and w.isalpha() and len(w) > 2
                    and w not in _FUNCTION)
                or (i == 0 and _heads_verb_phrase(words))):
            out.append(w)
    return out


# prepositions that take a verb's second argument ("transcode images to webp", "derive docs from comments")
_ARGUMENT_PREPOSITIONS = frozenset("to into from with via through onto over before after instead".split())
_VERB_SUFFIXES = ("ize", "ise", "ify", "ate")


def _heads_verb_phrase(words: list[str]) -> bool:
    """Whatever its verb (issue 29: no fixed list of actions), an alias of three or more words is a
    verb phrase when its first word is no function word nor a plural and it has the shape verb +
    object + prepositional argument ("transcode images to webp"), or the verb carries a verbal suffix
    ("memoize expensive selectors"). A noun phrase ("webp image format", "docs from comments") is not."""
    w = words[0] if words else ""
    if len(words) < 3 or not w.isalpha() or w in _FUNCTION or w in _VERB_CONTEXT or len(w) < 3:
        return False
    from autopatch_tui.core.pipeline.lexicon import FUNCTION_WORDS

    if w in FUNCTION_WORDS or (w.endswith("s") and not w.endswith("ss")):
        return False
    if w.endswith(_VERB_SUFFIXES):
        return True
    return any(x in _ARGUMENT_PREPOSITIONS for x in words[2:])
