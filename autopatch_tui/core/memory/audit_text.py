"""What a statement requires and forbids, for the Memory audit (`audit.py`): deterministic, no model.

A statement is cut into clauses at sentence ends (`. ; ! ?`, their CJK forms, newlines) and at
"but"/"但". A clause is **negative** when it carries a negation (`NEGATIONS`: "never", "don't",
"must not", "avoid", "no", "不要", "禁止", …) and **positive** otherwise. A contrast inside a
positive clause ("X instead of Y", "X rather than Y", "X, not Y", "prefer X over Y", "X而不是Y")
splits it: X stays positive, Y is a negative clause of its own.

The **core** of a clause is what it is about: its words, NFKC case-folded, identifiers kept whole
(`ast.literal_eval`, `os.path`), English stopwords, the negations and the directive words
(`DIRECTIVES`: "use", "always", "prefer", "must", "使用", "总是", …) removed, plurals folded;
a CJK run gives its character bigrams (a run of one or two characters is itself)."""

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
CONTRASTS_CJK = ("而不是", "而非", "代替", "取代")
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


_CJK_REMOVED = tuple(sorted(NEGATIONS_CJK + DIRECTIVES_CJK + CONTRASTS_CJK, key=len, reverse=True))


def _cjk_terms(run: str) -> list[str]:
    """The bigrams of one CJK run once its negations and directive words are taken out."""
    for m in _CJK_REMOVED:
        run = run.replace(m, " ")
    terms: list[str] = []
    for part in run.split():
        terms += [part] if len(part) <= 2 else [part[i:i + 2] for i in range(len(part) - 1)]
    return terms


def _filler(word: str) -> bool:
    return word in STOPWORDS or word in DIRECTIVES or (len(word) == 1 and word.isascii() and word.isalnum())


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
    """One clause's words → its clause, plus the negative clause a contrast splits off."""
    negative = False
    keep: list[str] = []
    i = 0
    split_at = None
    while i < len(words):
        w = words[i]
        if _is_cjk(w):
            cut = min((at for at in (w.find(c) for c in CONTRASTS_CJK) if at > 0 or (at == 0 and keep)),
                      default=-1)
            if cut >= 0 and not negative and not any(m in w[:cut] for m in NEGATIONS_CJK):
                keep.append(w[:cut])
                marker = next(c for c in CONTRASTS_CJK if w.startswith(c, cut))
                rest = [w[cut + len(marker):], *words[i + 1:]]
                return [Clause(False, tuple(_core(keep))), Clause(True, tuple(_core([r for r in rest if r])))]
            negative = negative or any(m in w for m in NEGATIONS_CJK)
            keep.append(w)
            i += 1
            continue
        contrast = next((c for c in _CONTRASTS.get(w, ()) if _starts(words, i, c)), None)
        if contrast is None and w == "over" and any(k in PREFER_WORDS for k in keep):
            contrast = ("over",)
        if contrast is None and w == "not" and not negative and any(not _filler(k) for k in keep) and i > 0 \
                and words[i - 1] not in ("do", "does", "must", "should", "can", "is", "are", "was", "were"):
            contrast = ("not",)  # "use spaces, not tabs"
        if contrast is not None and not negative:
            split_at = (i, len(contrast))
            break
        neg = next((m for m in _NEGATIONS.get(w, ()) if _starts(words, i, m)), None)
        if neg is not None:
            negative = True
            i += len(neg)
            continue
        keep.append(w)
        i += 1
    first = Clause(negative, tuple(_core(keep)))
    if split_at is None:
        return [first]
    rest = words[split_at[0] + split_at[1]:]
    return [first, Clause(True, tuple(_core(rest)))]


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
