"""Deterministic word lists used by the validation rules (English and Chinese).

They are deliberately short and conservative: each list guards one rule of the Memory spec."""

from __future__ import annotations

import re

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
