"""Deterministic word lists used by the validation rules (English and Chinese).

They are deliberately short and conservative: each list guards one rule of the Memory spec."""

from __future__ import annotations

import re
import unicodedata

# A correction limited to the current patch or place ("这里", "本次", "this patch"): runtime only.
LOCAL_MARKERS = (
    "这里", "此处", "这处", "本次", "这次", "此次", "这个补丁", "该补丁", "本补丁", "这一处", "这行", "这一行",
    "this patch", "this time", "this change", "this fix", "this diff", "this one", "this line", "this spot",
    "here", "just this", "only this", "for now", "in this case",
)
# A statement meant to last ("以后", "always"), needed for `hard` strength and `always` recall.
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
CLAUSE_SPLIT = re.compile(r"[。！？!?;；\n]+|(?<=[.])\s+")


def clause_around(text: str, quote: str) -> str:
    """The sentence/clause of `text` that contains `quote` (the whole text when it spans several)."""
    start = text.find(quote)
    if start < 0:
        return quote
    end = start + len(quote)
    clauses = []
    pos = 0
    for m in CLAUSE_SPLIT.finditer(text):
        clauses.append((pos, m.start()))
        pos = m.end()
    clauses.append((pos, len(text)))
    inside = [text[a:b] for a, b in clauses if a < end and b > start]
    return " ".join(inside) if inside else quote


def _has(text: str, words: tuple[str, ...]) -> bool:
    low = text.casefold()
    for w in words:
        if w.isascii():
            if re.search(r"(?<![a-z])" + re.escape(w.strip()) + r"(?![a-z])", low):
                return True
        elif w in low:
            return True
    return False


def is_local(text: str) -> bool:
    return _has(text, LOCAL_MARKERS)


# An assistant proposal is checked with the same markers except a bare "here", which assistants use
# to present anything ("Here is the plan: ...").
PROPOSAL_LOCAL_MARKERS = tuple(m for m in LOCAL_MARKERS if m != "here")


def is_local_proposal(text: str) -> bool:
    return _has(text, PROPOSAL_LOCAL_MARKERS)


def is_lasting(text: str) -> bool:
    return _has(text, LASTING_MARKERS)


def is_apply_only(text: str) -> bool:
    norm = re.sub(r"[\s,.!。！，]+", " ", text.casefold()).strip()
    return norm in APPLY_ONLY


def has_code_fact(text: str) -> bool:
    return any(p.search(text) for p in CODE_FACT_PATTERNS)


def cjk_dominant(text: str) -> bool:
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return cjk > 0 and cjk * 3 >= latin


# ---------------------------------------------------------------------------------------------
# The semantic gate's marker lists (semantic_gate.py). Every list is matched on ONE normalized
# clause around a quote (NFKC, case-folded, zero-width characters removed, whitespace collapsed),
# never on the whole turn: "这里先用 let。以后所有新代码都不要用 var！" holds a local clause and a
# lasting one. The reasoning behind each list is in docs/memory.md ("The semantic gate").

# One-off scope beyond LOCAL_MARKERS: a request limited to the present answer or moment.
ONE_OFF_MARKERS = (
    "for this answer", "this answer", "this reply", "this response", "for this question", "this once",
    "just once", "for today", "temporarily", "for the moment", "just here", "right here",
    "这一次", "这回", "这个回答", "本回答", "这条回复", "这次回答", "暂时", "临时", "今天先",
)
# "先…" (for now, first) is one-off unless it starts a sequence ("先写测试再写实现") or the clause
# says it lasts ("以后都先跑 lint"). Only a clause-initial or pronoun-led 先 counts, so 首先 / 优先 /
# 预先 / 原先 / 先生 never do.
_XIAN = re.compile(r"(?:^|[,，、:：\s]|我们|咱们|你|您|就|那就|那)先(?!生|进|前|例|锋|导|驱|天)")
_XIAN_SEQUENCE = ("再", "然后", "之后", "接着")  # searched after the first 先 (linear, no backtracking)

# Undecided: the user has not made up their mind. Supports a discussion, never a decision/preference.
UNDECIDED_MARKERS = (
    "not decided", "haven't decided", "have not decided", "hasn't been decided", "not yet decided", "undecided",
    "not sure", "unsure", "should we", "shall we", "do we want", "or not", "open question", "still deciding",
    "to be decided", "tbd", "up in the air", "haven't made up", "not settled",
    "还没决定", "没决定", "未决定", "尚未决定", "还没定", "没想好", "还没想好", "要不要", "需不需要", "该不该",
    "用不用", "是不是要", "待定", "不确定", "拿不准", "再讨论", "还在考虑", "在考虑", "考虑要不要",
)
# "whether" / "是否" are undecided only after a deciding verb, at the clause start, or before a
# modal: "check whether the input is None" and "检查输入是否为空" are ordinary instructions.
_WHETHER = re.compile(r"(?:^|\b(?:decid\w*|sure|know|wonder\w*|discuss\w*|consider\w*|question|ask\w*|think\w*|"
                      r"debat\w*|unclear|figure out)\b[^.?!]{0,40})\bwhether\b")
_SHIFOU = re.compile(r"^是否|(?:决定|确定|考虑|讨论|想好|知道|想想|商量|评估)[^。？！]{0,12}是否|是否(?:要|应该|应当|需要|该|值得)")

# A question: ends with "?" (after NFKC "？" is "?") or starts with an interrogative, unless the
# question is only a tag after an assertion ("以后都用 tab 缩进，好吗？", "Always use tabs, OK?").
QUESTION_TAGS = (
    "right", "ok", "okay", "alright", "all right", "yes", "agreed", "got it", "understood", "clear", "yeah",
    "deal", "fair", "ok with you", "sound good", "sounds good", "makes sense", "is that ok", "is that okay",
    "好吗", "好不好", "可以吗", "行吗", "行不行", "对吧", "明白吗", "记住了吗", "好么", "可以不", "ok吗", "懂吗",
)
_INTERROGATIVE_START = re.compile(
    r"^(?:what|how|why|which|where|when|who|whom|whose|is|are|am|was|were|does|do|did|has|have|had|should|shall|"
    r"can|could|would|will|may|might|isn't|aren't|doesn't|don't|won't|wouldn't|shouldn't)\b"
    r"|^(?:为什么|为啥|怎么|怎样|如何|什么|哪|是不是|能不能|可不可以|有没有|会不会|要不要)")
# Without a "?" only a wh-word start makes a question ("Do not use eval." is an instruction), and
# only when no directive follows ("When in doubt, use tabs." is one too).
_WH_START = re.compile(r"^(?:what|how|why|which|where|who|whom|whose)\b|^(?:为什么|为啥|怎么|怎样|如何|什么|哪)")
_CJK_QUESTION_END = re.compile(r"(?:吗|呢|[好对是行能要]么)$")  # not 嘛 ("就用 tabs 嘛") nor 这么/那么
# "Could you please always answer in English?" is a polite request, not a question, unless it
# asks for information.
_POLITE_REQUEST = re.compile(r"^(?:could|can|would|will) you (?:please )?(?!tell|explain|show|describe|say|list|"
                             r"check|look|find|summari[sz]e|remind|help me understand|clarify)\w+")

# A request for information: the user wants to know something, not to set a rule.
_INFO_REQUEST = re.compile(
    r"^(?:please )?(?:tell me|explain|show me|describe|remind me|let me know|help me understand|clarify|"
    r"can you (?:please )?(?:tell|explain|show|describe)|could you (?:please )?(?:tell|explain|show|describe)|"
    r"i (?:want|would like|'d like) to know|i wonder)\b"
    r"|^(?:请)?(?:告诉我|解释|说明一下|讲讲|介绍一下|帮我看看|看一下|查一下|我想知道|能解释)")

# A hedge: the user is guessing. Counts only when it comes before any directive in the clause
# ("Never use eval because it might be unsafe" is a rule; "Maybe always use tabs" is not).
_HEDGE = re.compile(r"\b(?:maybe|perhaps|possibly|probably|i guess|i suppose|might be nice|not necessarily|"
                    r"i'm not certain)\b|(?<!尽)可能(?!性)|也许|或许|大概|说不定|不一定|看情况")
# A tentative try is a hedge wherever it stands ("我觉得可以用 uv 试试", "we could try uv").
_TENTATIVE = re.compile(r"\b(?:could try|might want to|worth a try|worth trying|give \w+ a try)\b"
                        r"|试试|试一下|试一试|可以考虑")
DIRECTIVE_MARKERS = LASTING_MARKERS + (
    "please", "don't", "do not", "let's", "let us", "we'll", "we will", "we're going with", "go with", "use ",
    "prefer", "avoid", "keep", "stop", "should always", "should never", "has to", "have to", "need to",
    "不要", "别", "请", "用", "改成", "改为", "换成", "保持", "避免", "坚持", "应该", "要求", "就用", "定了", "决定",
)

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
    r"(?<![a-z])(?:decided|decision is|chosen|chose|agreed|settled|concluded|recommend\w*|it is decided|"
    r"we went with|the choice is)(?![a-z])|已决定|决定了|定了|选定|定下|已确定|确定了|结论|推荐|建议")
_CONCLUSION_NEGATED = re.compile(r"(?:\bnot|n't|never|\bno|\bun|\byet to)\s*(?:\w+\s+){0,2}$|(?:没|未|不|还没|尚未|没有)$")

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


def _strip_tag(clause: str) -> tuple[str, bool]:
    """(clause without a trailing question tag, whether one was removed). `clause` is normalized."""
    body = clause.rstrip("?").rstrip()
    for tag in sorted(QUESTION_TAGS, key=len, reverse=True):
        if body.endswith(tag):
            head = body[: -len(tag)].rstrip(" ,，、-—")
            if head and head != body[: -len(tag)] or (head and not tag.isascii()):
                return head, True
    return body, False


def is_question(clause: str) -> bool:
    c = normalize_clause(clause)
    if not c:
        return False
    ends_q = c.endswith("?")
    body, tagged = _strip_tag(c) if ends_q else (c.rstrip("?"), False)
    polite = bool(_POLITE_REQUEST.search(body)) and is_lasting(body)  # "Could you always …?"
    if tagged:
        return bool(_INTERROGATIVE_START.search(body)) and not polite
    if polite:
        return False
    if ends_q or _CJK_QUESTION_END.search(body.rstrip("。.!！ ")):
        return True
    return bool(_WH_START.search(body)) and not _has(body, DIRECTIVE_MARKERS)


def is_undecided(clause: str) -> bool:
    c = normalize_clause(clause)
    return _has(c, UNDECIDED_MARKERS) or bool(_WHETHER.search(c)) or bool(_SHIFOU.search(c))


def is_one_off(clause: str) -> bool:
    c = normalize_clause(clause)
    if is_local(c) or _has(c, ONE_OFF_MARKERS):
        return True
    m = _XIAN.search(c)
    if not m:
        return False
    return not any(w in c[m.end():] for w in _XIAN_SEQUENCE) and not is_lasting(c)


def is_info_request(clause: str) -> bool:
    return bool(_INFO_REQUEST.search(normalize_clause(clause)))


def _position(text: str, words: tuple[str, ...]) -> int:
    best = -1
    for w in words:
        if w.isascii():
            m = re.search(r"(?<![a-z])" + re.escape(w.strip()) + r"(?![a-z])", text)
            i = m.start() if m else -1
        else:
            i = text.find(w)
        if i >= 0 and (best < 0 or i < best):
            best = i
    return best


def is_hedged(clause: str) -> bool:
    c = normalize_clause(clause)
    if _TENTATIVE.search(c):
        return True
    m = _HEDGE.search(c)
    if not m:
        return False
    directive = _position(c, DIRECTIVE_MARKERS)
    return directive < 0 or m.start() < directive


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


_ALIAS_WORD = re.compile(r"[a-z][a-z0-9_'-]*")
_VERB_CONTEXT = frozenset("to must should will never always don't not no can shall".split())


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
    out = []
    for i, w in enumerate(words):
        stem = _verb_stem(w)
        if (is_alias_action(w) or (w in BASE_VERBS and (i == 0 or words[i - 1] in _VERB_CONTEXT))
                or (stem and (w.endswith(("ing", "ed")) or i < len(words) - 1))):
            out.append(w)
    return out
