"""What a statement requires and forbids, for the Memory audit (`audit.py`): deterministic, no model.

A statement is cut into clauses at sentence ends (`. ; ! ?`, their CJK forms, newlines) and at
"but"/"但". A clause is **negative** when it carries a negation (`NEGATIONS`: "never", "don't",
"must not", "avoid", "no", "不要", "禁止", …) and **positive** otherwise — turned over when a removal
verb heads it (`REMOVALS`: "strip", "remove", "redact", "drop", "get rid of", "去掉", "删除", "移除", …):
"strip trailing whitespace" forbids it, "never remove the header" requires it. A contrast inside a
positive clause ("X instead of Y", "X rather than Y", "X, not Y", "prefer X over Y", "X而不是Y",
"用Y替换X") splits it: X stays positive, Y is a negative clause of its own; a replacement ("replace X
with Y", "swap X for Y", "switch from X to Y", "把X替换为Y", "X改成Y") forbids X and requires Y.

The **core** of a clause is what it is about: its words, NFKC case-folded, identifiers kept whole
(`ast.literal_eval`, `os.path`), English stopwords, the negations and the directive words
(`DIRECTIVES`: "use", "always", "prefer", "must", "使用", "总是", …) removed, plurals folded —
digits and single letters stay ("2 spaces" ≠ "4 spaces", "C" ≠ "R"); a CJK run gives its character
bigrams (a run of one or two characters is itself)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from autopatch_tui.core.recall.terms import STOPWORDS, fold_plural

# multi-word markers are matched on the word sequence; CJK markers inside a run
NEGATIONS_EN = (
    ("never",), ("not",), ("no",), ("nor",), ("don't",), ("dont",), ("do", "not"), ("does", "not"), ("doesn't",),
    ("must", "not"), ("mustn't",), ("should", "not"), ("shouldn't",), ("cannot",), ("can't",), ("can", "not"),
    ("avoid",), ("avoids",), ("stop",), ("forbid",), ("forbids",), ("forbidden",), ("disallow",), ("disallowed",),
    ("ban",), ("banned",), ("no", "longer"),
)
NEGATIONS_CJK = ("不要", "不用", "不得", "不准", "不能", "不可", "不许", "不应", "别", "禁止", "避免", "切勿", "严禁", "勿",
                 "不使用", "不再")
CONTRASTS_EN = (("instead", "of"), ("rather", "than"), ("in", "place", "of"))
CONTRASTS_CJK = ("而不是", "而非", "代替", "取代", "替换", "替代")  # "用Y替换X": Y required, X removed
# A removal verb at the head of a clause turns what follows into what the clause does away with:
# "strip trailing whitespace" forbids trailing whitespace, it does not require it (a negation in
# front turns it back: "never strip the trailing newline" requires the newline).
REMOVALS_EN = (
    ("strip",), ("strips",), ("remove",), ("removes",), ("redact",), ("redacts",), ("drop",), ("drops",),
    ("delete",), ("deletes",), ("eliminate",), ("eliminates",), ("purge",), ("purges",), ("get", "rid", "of"),
    ("gets", "rid", "of"), ("rip", "out"), ("scrub",), ("scrubs",),
)
# A replacement verb removes its object and requires what comes after its preposition:
# "replace X with Y", "swap X for Y", "switch from X to Y", "migrate from X to Y".
REPLACEMENTS_EN = {("replace",): "with", ("replaces",): "with", ("swap",): "for", ("swaps",): "for",
                   ("switch", "from"): "to", ("switches", "from"): "to", ("migrate", "from"): "to",
                   ("migrates", "from"): "to"}
REPLACEMENT_TAILS_EN = {"with": ("with", "by"), "for": ("for",), "to": ("to",)}
REMOVALS_CJK = ("去掉", "去除", "删除", "删掉", "移除", "清除", "剔除")
# "把X替换为Y" / "X改成Y": X removed, Y required (the reverse of "用Y替换X")
REPLACED_BY_CJK = ("替换为", "替换成", "换成", "改为", "改成")
PREFER_WORDS = frozenset({"prefer", "prefers", "preferred", "favor", "favour", "choose", "pick"})
DIRECTIVES = frozenset("""
use uses used using prefer prefers preferred favor favour choose pick always must should shall please do does
make makes want wants need needs keep keeps let lets ever every all whenever from now going forward instead
any anywhere everywhere again at
""".split())
DIRECTIVES_CJK = ("使用", "总是", "始终", "一律", "必须", "应该", "应当", "请", "都要", "永远", "以后", "一直", "所有", "要用", "用")

_CLAUSE_END = re.compile(r"[.;!?。；！？\n]+(?:\s|$)|[。；！？\n]|\bbut\b|但是|但")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK = re.compile(f"[{_CJK_CHARS}]+")
_WORD = f"[^\\W{_CJK_CHARS}]"  # a word character that is not CJK
# a CJK run, or a word (identifiers such as ast.literal_eval and src/app.py kept whole)
_TOKEN = re.compile(f"[{_CJK_CHARS}]+|{_WORD}(?:{_WORD}|'(?={_WORD})|[.\\-/:](?={_WORD}))*")


def _by_first(markers: tuple[tuple[str, ...], ...]) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Markers by their first word, longest first: a word that starts none costs one dict lookup."""
    out: dict[str, list[tuple[str, ...]]] = {}
    for m in sorted(markers, key=len, reverse=True):
        out.setdefault(m[0], []).append(m)
    return {k: tuple(v) for k, v in out.items()}


_NEGATIONS = _by_first(NEGATIONS_EN)
_CONTRASTS = _by_first(CONTRASTS_EN)
_REMOVALS = _by_first(REMOVALS_EN + tuple(REPLACEMENTS_EN))


def _is_cjk(token: str) -> bool:
    return ord(token[0]) >= 0x3040 and bool(_CJK.fullmatch(token))


@dataclass(frozen=True)
class Clause:
    negative: bool
    core: tuple[str, ...]  # ordered, distinct

    @property
    def words(self) -> frozenset[str]:
        return frozenset(self.core)


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()).replace("’", "'")


def _tokens(text: str) -> list[str]:
    """Words and CJK runs in order (a CJK run is a token of its own, apart from Latin neighbours)."""
    return _TOKEN.findall(text)


def _starts(words: list[str], i: int, marker: tuple[str, ...]) -> bool:
    return tuple(words[i:i + len(marker)]) == marker


_CJK_REMOVED = tuple(sorted(NEGATIONS_CJK + DIRECTIVES_CJK + CONTRASTS_CJK + REMOVALS_CJK + REPLACED_BY_CJK
                            + ("把", "将"), key=len, reverse=True))


def _cjk_terms(run: str) -> list[str]:
    """The bigrams of one CJK run once its negations and directive words are taken out."""
    for m in _CJK_REMOVED:
        run = run.replace(m, " ")
    terms: list[str] = []
    for part in run.split():
        terms += [part] if len(part) <= 2 else [part[i:i + 2] for i in range(len(part) - 1)]
    return terms


def _filler(word: str) -> bool:
    """A word that says nothing about what a clause is about. Digits and single letters are never
    filler ("indent with 2 spaces" ≠ "… 4 spaces", "use C" ≠ "use R", `pytest -n 2`)."""
    return word in STOPWORDS or word in DIRECTIVES


_fold = lru_cache(maxsize=65536)(fold_plural)


def _core(words: list[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        if not w:
            continue
        if _is_cjk(w):
            terms = _cjk_terms(w)
        elif _filler(w):
            continue
        else:
            terms = [_fold(w)]
        out += [t for t in terms if t not in out]
    return out


def _clause(words: list[str]) -> list[Clause]:
    """One clause's words → its clause, plus the clause a contrast or a replacement splits off.

    Polarity is the negation's, turned over by a removal verb at the head of the clause (only
    filler and negations before it): "strip X", "never remove X". A replacement verb's object is
    removed and what follows its preposition required ("replace X with Y"), each side turned over
    again by a negation in front ("never replace X with Y")."""
    negative = False
    removal = False
    tail: tuple[str, ...] = ()  # a replacement's preposition(s), which start the required part
    keep: list[str] = []
    i = 0
    split_at = None
    while i < len(words):
        w = words[i]
        if _is_cjk(w):
            head = not any(not _filler(k) for k in keep)
            rev = min(((w.find(m), m) for m in REPLACED_BY_CJK if w.find(m) > 0), default=None)
            if rev is not None and not removal:  # "把X替换为Y": X removed, Y required
                at, marker = rev
                before_neg = negative or any(m in w[:at] for m in NEGATIONS_CJK)
                keep.append(w[:at])
                rest = [w[at + len(marker):], *words[i + 1:]]
                return [Clause(not before_neg, tuple(_core(keep))),
                        Clause(before_neg, tuple(_core([r for r in rest if r])))]
            cut = min((at for at in (w.find(c) for c in CONTRASTS_CJK) if at > 0 or (at == 0 and keep)),
                      default=-1)
            if cut >= 0 and not negative and not removal and not any(m in w[:cut] for m in NEGATIONS_CJK):
                keep.append(w[:cut])
                marker = next(c for c in CONTRASTS_CJK if w.startswith(c, cut))
                rest = [w[cut + len(marker):], *words[i + 1:]]
                return [Clause(False, tuple(_core(keep))), Clause(True, tuple(_core([r for r in rest if r])))]
            negative = negative or any(m in w for m in NEGATIONS_CJK)
            if head and not removal:
                lead = w
                for m in sorted(NEGATIONS_CJK + DIRECTIVES_CJK, key=len, reverse=True):
                    lead = lead.replace(m, "")
                removal = any(lead.startswith(m) for m in REMOVALS_CJK)
            keep.append(w)
            i += 1
            continue
        if tail and w in tail:
            split_at = (i, 1)
            break
        contrast = next((c for c in _CONTRASTS.get(w, ()) if _starts(words, i, c)), None)
        if contrast is None and w == "over" and any(k in PREFER_WORDS for k in keep):
            contrast = ("over",)
        if contrast is None and w == "not" and not negative and any(not _filler(k) for k in keep) and i > 0 \
                and words[i - 1] not in ("do", "does", "must", "should", "can", "is", "are", "was", "were"):
            contrast = ("not",)  # "use spaces, not tabs"
        if contrast is not None and not negative and not removal:
            split_at = (i, len(contrast))
            break
        neg = next((m for m in _NEGATIONS.get(w, ()) if _starts(words, i, m)), None)
        if neg is not None:
            negative = True
            i += len(neg)
            continue
        if not removal and not any(not _filler(k) for k in keep):
            verb = next((m for m in _REMOVALS.get(w, ()) if _starts(words, i, m)), None)
            if verb is not None:
                removal = True
                tail = REPLACEMENT_TAILS_EN.get(REPLACEMENTS_EN.get(verb, ""), ())
                i += len(verb)
                continue
        keep.append(w)
        i += 1
    first = Clause(negative != removal, tuple(_core(keep)))
    if split_at is None:
        return [first]
    rest = words[split_at[0] + split_at[1]:]
    # after a contrast the rest is forbidden; after a replacement's preposition it is required
    # (unless the replacement itself is negated)
    return [first, Clause(negative if tail else True, tuple(_core(rest)))]


@lru_cache(maxsize=32768)
def clauses(statement: str) -> tuple[Clause, ...]:
    """The statement's clauses, in order (empty cores included: they keep the shape). Cached: an
    audit run again (the browser after a forget) reads a statement's clauses once."""
    out: list[Clause] = []
    for part in _CLAUSE_END.split(_normalize(statement)):
        words = _tokens(part)
        if words:
            out += _clause(words)
    return tuple(out)


def signature(statement: str) -> tuple[tuple[bool, tuple[str, ...]], ...]:
    """What a statement says, word order kept: equal signatures say the same thing."""
    return tuple((c.negative, c.core) for c in clauses(statement) if c.core)


def forbids_what_requires(negative: Clause, positive: Clause) -> bool:
    """A negative clause forbids what a positive one requires when everything it is about is part
    of what the positive clause is about ("never use tabs" / "use tabs for indentation"); a
    narrower prohibition ("don't mix tabs and spaces") does not contradict a wider rule ("use tabs")."""
    return bool(negative.core) and negative.words <= positive.words
