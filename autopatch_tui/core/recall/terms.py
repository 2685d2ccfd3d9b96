"""Deterministic term extraction for Memory recall (no embeddings, no FTS, stdlib only).

Recall matches a stored phrase (a subject, one alias, one keyword, one check ID) against a query
when *every* term of the phrase is among the query's terms, and matches an item's content when at
least two distinct content terms are among the query's terms. Both sides therefore go through the
same tokenizer below; the only differences between the index side (`phrase_terms`,
`content_terms`) and the query side (`query_terms`, `path_terms`) are spelled out here.

Pipeline (all sides)
--------------------
1. Unicode NFKC (full-width forms become ASCII, ligatures split, ...). Case is kept until the
   identifier split has seen camelCase boundaries; every term is then case-folded (+ NFKC again).
2. The text is scanned into *CJK runs* (maximal runs of Han, kana, Hangul, Bopomofo characters)
   and *tokens*: runs of letters/digits/marks/underscore, joined by ``- . : / \\`` when a joiner
   sits between two word characters (so ``java:S1128``, ``src/app/user_config.py``,
   ``no-unused-vars`` are single tokens). Everything else (spaces, punctuation, symbols, ``@``,
   apostrophes) separates.
3. A token yields, in order:
   - the whole token, case-folded, if `is_check_id` says it is a static-analysis rule ID
     (``java:s1128``, ``pmd:unusedimports``, ``cwe-79``, ``no-unused-vars``);
   - for each *atom* (the token split on ``- . : / \\``): if `split_identifier` gives more than one
     part, the concatenation of the parts (``parseUserConfig`` / ``parse_user_config`` /
     ``ParseUserConfig`` all give ``parseuserconfig``), then each part (``parse``, ``user``,
     ``config``). Hyphens split atoms, so ``backward-compatible`` is just ``backward`` +
     ``compatible`` (no glued whole), while ``user_config`` also yields ``userconfig``.
4. Filters: single ASCII letters and single digits are dropped (``2`` goes, ``11`` stays); terms
   longer than `MAX_TERM_CHARS` are dropped (never truncated, so two long tokens cannot collide).
   English stopwords (`STOPWORDS`) are dropped from query and content terms. A phrase keeps its
   stopwords only when it consists of nothing else, so an alias is never silently emptied; since
   queries never carry stopwords, such a phrase is indexed but cannot match a query.
5. Light English plural folding, applied identically on every side to pure-ASCII alphabetic
   non-stopword terms (see `fold_plural`): ``...ies`` -> ``...y`` (length > 4);
   ``...sses/...shes/...tches/...nches/...rches/...xes`` drop ``es``; otherwise a trailing ``s``
   is dropped from words longer than 3 letters not ending in ``ss``, ``us`` or ``is``; a short
   exception table keeps ``alias``/``aliases``, ``status``/``statuses``, ``news``, ``series`` ...
   consistent. ``caches`` -> ``cache`` but ``patches`` -> ``patch``; ``approaches`` ->
   ``approache`` is a known, harmless miss (both sides agree, it just does not meet
   ``approach``).

CJK asymmetry (deliberate difference between index and query sides)
-------------------------------------------------------------------
Unspaced CJK text is indexed by character bigrams (at most `MAX_CJK_BIGRAMS_PER_RUN` per run, taken
from the start of the run):

- index side (`phrase_terms`, `content_terms`): a 1-character run yields the character, a
  2-character run yields itself (it is its own bigram), a longer run yields **only its bigrams**.
  ``向后兼容`` -> ``向后 后兼 兼容``.
- query side (`query_terms`, `path_terms`): the same bigrams **plus the whole run** when it has at
  most `MAX_WHOLE_CJK_RUN` characters.

The whole run cannot be an index term: with "all terms of the phrase must be present", a stored
``向后兼容`` would need the query term ``向后兼容``, but the unspaced query ``我们要不要向后兼容``
has one run, ``我们要不要向后兼容``. Bigrams make it match; ``向后看，兼容性`` does not match since
``后兼`` is absent. A one-character stored phrase only matches a query where that character stands
alone (no unigrams are emitted for longer query runs).

Paths
-----
`normalize_path` gives a repo-relative POSIX form (case kept). `path_covers` decides whether an
item's ``applies_to`` covers a scope path: ``""``/``"*"``/``"**"`` cover everything; a literal
directory covers itself and everything below it (``src`` covers ``src/a.py`` but not
``srcx/a.py``); a pattern with ``*`` or ``?`` is a glob with segment semantics (``*`` and ``?``
never cross ``/``, a whole ``**`` segment matches zero or more segments, a glob without ``/``
matches at any depth like ``**/<glob>``) and covers a path when it matches the path or one of its
ancestor directories. Matching is case-sensitive and uses no regular expressions (linear-ish,
safe on hostile patterns). ``[`` is literal (Next.js ``pages/[id].tsx``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache

from autopatch_tui.core.recall.paths import normalize_path

__all__ = [
    "MAX_CJK_BIGRAMS_PER_RUN",
    "MAX_CONTENT_TERMS",
    "MAX_PATH_TERMS",
    "MAX_PHRASE_TERMS",
    "MAX_QUERY_TERMS",
    "MAX_TERM_CHARS",
    "MAX_WHOLE_CJK_RUN",
    "STOPWORDS",
    "content_terms",
    "fold_plural",
    "is_check_id",
    "normalize_path",
    "normalize_phrase",
    "normalize_text",
    "path_terms",
    "phrase_terms",
    "query_terms",
    "split_identifier",
]

MAX_QUERY_TERMS = 32
MAX_PHRASE_TERMS = 8
MAX_CONTENT_TERMS = 64
MAX_CJK_BIGRAMS_PER_RUN = 32
MAX_PATH_TERMS = 16
MAX_TERM_CHARS = 128
MAX_WHOLE_CJK_RUN = 8
_MAX_CHECK_ID_CHARS = 100

STOPWORDS: frozenset[str] = frozenset(
    """
    a about am an and are as at be been but by can could did do does for from had has have he
    her his how i if in into is it its me my not of on or our she should so that the their them
    there they this to us was we were what when where which who why will with would you your
    """.split()
)

# --------------------------------------------------------------------------- normalization


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _fold(text: str) -> str:
    """Case-fold an NFKC string and re-normalize (case folding can decompose)."""
    return unicodedata.normalize("NFKC", text.casefold())


def normalize_text(text: str) -> str:
    """NFKC, case-fold, whitespace runs collapsed to one space, stripped."""
    return " ".join(_fold(_nfkc(text)).split())


def normalize_phrase(text: str) -> str:
    """Identity form of a subject/alias: `normalize_text`, every run of characters that is not a
    letter, digit or mark (punctuation, symbols, ``_``, whitespace) becomes one space, stripped.
    ``"Backward-Compatibility!"`` -> ``"backward compatibility"``."""
    folded = normalize_text(text)
    kept = "".join(ch if unicodedata.category(ch)[0] in "LNM" else " " for ch in folded)
    return " ".join(kept.split())


# --------------------------------------------------------------------------- character classes

_SEP, _WORD, _JOIN, _CJK = 0, 1, 2, 3
_JOINERS = frozenset("-.:/\\")
_ATOM_SPLIT = re.compile(r"[-.:/\\]+")

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK radicals supplement, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana (the category filter drops ・ ゠)
    (0x3100, 0x312F),  # Bopomofo
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31A0, 0x31BF),  # Bopomofo extended
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana (NFKC widens them anyway)
    (0xFFA0, 0xFFDC),  # half-width Hangul
    (0x1AFF0, 0x1B16F),  # Kana extended / supplement
    (0x20000, 0x3FFFF),  # CJK extensions B..H, compatibility supplement
)


def _is_cjk_codepoint(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


@lru_cache(maxsize=8192)
def _char_class(ch: str) -> int:
    cat = unicodedata.category(ch)
    if cat[0] in "LNM":
        return _CJK if _is_cjk_codepoint(ord(ch)) else _WORD
    if ch == "_":
        return _WORD
    if ch in _JOINERS:
        return _JOIN
    return _SEP


def _segments(text: str) -> Iterator[tuple[bool, str]]:
    """Yield ``(is_cjk_run, chunk)`` from NFKC text, in order of appearance."""
    n = len(text)
    i = 0
    while i < n:
        cls = _char_class(text[i])
        if cls == _CJK:
            j = i + 1
            while j < n and _char_class(text[j]) == _CJK:
                j += 1
            yield True, text[i:j]
            i = j
        elif cls == _WORD:
            j = i + 1
            while j < n:
                cj = _char_class(text[j])
                if cj == _WORD:
                    j += 1
                elif cj == _JOIN:
                    k = j + 1
                    while k < n and _char_class(text[k]) == _JOIN:
                        k += 1
                    if k < n and _char_class(text[k]) == _WORD:
                        j = k
                    else:
                        break
                else:
                    break
            yield False, text[i:j]
            i = j
        else:
            i += 1


# --------------------------------------------------------------------------- identifiers

_UPPER, _LOWER, _DIGIT = 0, 1, 2


def _split_chunk(chunk: str) -> list[str]:
    """Split one run of letters/digits/marks at camelCase, ACRONYMWord and digit boundaries."""
    parts: list[str] = []
    kinds: list[int] = []
    is_mark: list[bool] = []
    for ch in chunk:
        cat = unicodedata.category(ch)
        if cat[0] == "M":
            kinds.append(kinds[-1] if kinds else _LOWER)
            is_mark.append(True)
            continue
        if cat[0] == "N":
            kinds.append(_DIGIT)
        elif ch.isupper() or cat == "Lt":
            kinds.append(_UPPER)
        else:
            kinds.append(_LOWER)
        is_mark.append(False)
    start = 0
    n = len(chunk)
    for i in range(1, n):
        if is_mark[i]:
            continue
        prev, cur = kinds[i - 1], kinds[i]
        boundary = False
        if (prev == _DIGIT) != (cur == _DIGIT):
            boundary = True
        elif prev == _LOWER and cur == _UPPER:
            boundary = True
        elif prev == _UPPER and cur == _UPPER:
            nxt = i + 1
            while nxt < n and is_mark[nxt]:
                nxt += 1
            boundary = nxt < n and kinds[nxt] == _LOWER
        if boundary:
            parts.append(chunk[start:i])
            start = i
    if start < n:
        parts.append(chunk[start:])
    return parts


def split_identifier(token: str) -> list[str]:
    """Case-folded parts of an identifier, in order (duplicates kept, nothing filtered).

    Splits on every character that is not a letter, digit or mark (``_ - . :`` ...), at
    lower->Upper (``parseUser``), at ACRONYM->Word (``HTTPServer`` -> ``http``, ``server``) and
    at letter<->digit boundaries: ``"HTTPServer2Config"`` -> ``["http", "server", "2", "config"]``,
    ``"S1128"`` -> ``["s", "1128"]``.
    """
    text = _nfkc(token)
    parts: list[str] = []
    chunk: list[str] = []
    for ch in text:
        if unicodedata.category(ch)[0] in "LNM":
            chunk.append(ch)
        elif chunk:
            parts.extend(_split_chunk("".join(chunk)))
            chunk = []
    if chunk:
        parts.extend(_split_chunk("".join(chunk)))
    return [folded for folded in (_fold(p) for p in parts) if folded]


# --------------------------------------------------------------------------- check IDs

_CODE = r"[a-z]{1,8}[0-9]{2,6}"
_NAME = r"[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*"
_RE_CODE = re.compile(_CODE)
_RE_NUMBERED = re.compile(r"[a-z]{2,10}(?:-[0-9]+)+")
_RE_NAMESPACED = re.compile(rf"[a-z][a-z0-9_.+-]*::?(?:{_CODE}|{_NAME})")
_RE_PLUGIN = re.compile(r"@?[a-z][a-z0-9_.-]*/[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_RE_KEBAB = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
# Semgrep rule IDs: a language namespace, dotted segments, a kebab-case rule name somewhere
# (``java.weak-md5``, ``go.lang.security.audit.crypto.use_of_weak_crypto.use-of-md5``)
_RE_DOTTED = re.compile(r"(?:java|js|javascript|ts|typescript|go|golang|python|py|kotlin|csharp|ruby|php|rust|"
                        r"scala|swift|generic|bash|dockerfile|terraform|yaml|json|html)(?:\.[a-z0-9_]+(?:-[a-z0-9_]+)*)+")
_KEBAB_RULE_PREFIXES = frozenset(
    """
    no prefer max min require valid consistent default bugprone modernize readability
    performance cppcoreguidelines misc cert google llvm hicpp portability concurrency android
    abseil boost darwin fuchsia linuxkernel mpi objc openmp zircon altera clang
    """.split()
)


def is_check_id(token: str) -> bool:
    """True for a static-analysis rule ID (case-insensitive, surrounding whitespace ignored).

    Accepted shapes: a letters+digits code (``S1128``, ``B101``, ``E501``, ``RUF100``,
    ``W0611`` -- note ``sha256`` has the same shape and also qualifies); ``NAME-number``
    (``CWE-79``, ``CVE-2021-44228``); ``namespace:rule`` or ``namespace::rule``
    (``java:S1128``, ``PMD:UnusedImports``, ``B101:assert_used``, ``clippy::needless_return``);
    ``plugin/kebab-rule`` (``react/prop-types``, ``@typescript-eslint/no-explicit-any``); and
    kebab rule names starting with a known rule prefix or containing a ``no`` part
    (``no-unused-vars``, ``prefer-const``, ``bugprone-use-after-move``,
    ``color-no-invalid-hex``); Semgrep's dotted IDs under a language namespace with a kebab-case
    part (``java.weak-md5``, ``js.eval-dynamic-code``; ``java.util`` or ``go.mod`` are not). Plain
    words, paths and hyphenated English are not check IDs.
    """
    text = token.strip()
    if not text or len(text) > _MAX_CHECK_ID_CHARS:
        return False
    t = _fold(_nfkc(text))
    if not t.isascii() or any(ch.isspace() for ch in t):
        return False
    if _RE_CODE.fullmatch(t) or _RE_NUMBERED.fullmatch(t):
        return True
    if _RE_NAMESPACED.fullmatch(t) or _RE_PLUGIN.fullmatch(t):
        return True
    if _RE_DOTTED.fullmatch(t) and "-" in t:
        return True
    if _RE_KEBAB.fullmatch(t):
        pieces = t.split("-")
        return pieces[0] in _KEBAB_RULE_PREFIXES or "no" in pieces
    return False


# --------------------------------------------------------------------------- plural folding

_FOLD_EXCEPTIONS: dict[str, str] = {
    "alias": "alias",
    "aliases": "alias",
    "analyses": "analysis",
    "atlas": "atlas",
    "bias": "bias",
    "biases": "bias",
    "canvas": "canvas",
    "chaos": "chaos",
    "indices": "index",
    "kubernetes": "kubernetes",
    "lens": "lens",
    "news": "news",
    "perhaps": "perhaps",
    "postgres": "postgres",
    "series": "series",
    "species": "species",
    "statuses": "status",
    "always": "always",
}
_ES_SUFFIXES = ("sses", "shes", "tches", "nches", "rches", "xes")


def fold_plural(term: str) -> str:
    """Light English plural folding for a case-folded term; identity unless the term is pure
    ASCII letters. See the module docstring for the rules."""
    if not (term.isascii() and term.isalpha()):
        return term
    exception = _FOLD_EXCEPTIONS.get(term)
    if exception is not None:
        return exception
    n = len(term)
    if n > 4 and term.endswith("ies"):
        return term[:-3] + "y"
    if n > 4 and term.endswith(_ES_SUFFIXES):
        return term[:-2]
    if n > 3 and term.endswith("s") and not term.endswith(("ss", "us", "is")):
        return term[:-1]
    return term


# --------------------------------------------------------------------------- term generation


def _cjk_terms(run: str, *, query: bool) -> list[str]:
    if len(run) <= 2:
        return [run]
    count = min(len(run) - 1, MAX_CJK_BIGRAMS_PER_RUN)
    out = [run[i : i + 2] for i in range(count)]
    if query and len(run) <= MAX_WHOLE_CJK_RUN:
        out.append(run)
    return out


_CACHED_TOKEN_CHARS = 64


def _token_terms(token: str) -> tuple[str, ...]:
    """Candidate terms of one token; short tokens are cached (natural text repeats them a lot),
    long ones are not, so the cache stays small whatever the input."""
    if len(token) <= _CACHED_TOKEN_CHARS:
        return _cached_token_terms(token)
    return _compute_token_terms(token)


def _compute_token_terms(token: str) -> tuple[str, ...]:
    out: list[str] = []
    if is_check_id(token):
        out.append(_fold(token))
    for atom in _ATOM_SPLIT.split(token):
        if not atom:
            continue
        parts = split_identifier(atom)
        if len(parts) > 1:
            out.append("".join(parts))
        out.extend(parts)
    return tuple(out)


_cached_token_terms = lru_cache(maxsize=8192)(_compute_token_terms)


def _raw_terms(text: str, *, query: bool) -> Iterator[str]:
    """Candidate terms (case-folded, unfiltered) in order of appearance."""
    for is_cjk, chunk in _segments(_nfkc(text)):
        if is_cjk:
            yield from (_fold(t) for t in _cjk_terms(chunk, query=query))
        else:
            yield from _token_terms(chunk)


def _acceptable(term: str) -> bool:
    if not term or len(term) > MAX_TERM_CHARS:
        return False
    if len(term) == 1 and ("a" <= term <= "z" or term.isdigit()):
        return False
    return True


class _Sink:
    """Ordered, distinct, capped accumulation of filtered terms."""

    def __init__(self, cap: int, *, keep_stopwords_if_only: bool = False) -> None:
        self.cap = cap
        self.terms: list[str] = []
        self.seen: set[str] = set()
        self.keep_stopwords_if_only = keep_stopwords_if_only
        self.stopwords: list[str] = []

    @property
    def full(self) -> bool:
        return len(self.terms) >= self.cap

    def add(self, raw: str) -> None:
        if self.full or not _acceptable(raw):
            return
        if raw in STOPWORDS:
            if self.keep_stopwords_if_only and raw not in self.stopwords:
                if len(self.stopwords) < self.cap:
                    self.stopwords.append(raw)
            return
        self.add_exact(fold_plural(raw))

    def add_exact(self, term: str) -> None:
        if self.full or not term or len(term) > MAX_TERM_CHARS or term in self.seen:
            return
        self.seen.add(term)
        self.terms.append(term)

    def feed(self, raws: Iterable[str]) -> None:
        for raw in raws:
            if self.full:
                return
            self.add(raw)

    def result(self) -> list[str]:
        if not self.terms and self.keep_stopwords_if_only:
            return list(self.stopwords)
        return list(self.terms)


def phrase_terms(phrase: str) -> list[str]:
    """Index-side terms of one stored phrase (subject, alias, keyword, check ID): ordered,
    distinct, at most `MAX_PHRASE_TERMS`; stopwords dropped unless the phrase has nothing else;
    CJK runs give bigrams only. ``[]`` when nothing indexable remains (blank, ``"a"``, ``"!"``):
    such a phrase must never be indexed (it would match everything)."""
    sink = _Sink(MAX_PHRASE_TERMS, keep_stopwords_if_only=True)
    sink.feed(_raw_terms(phrase, query=False))
    return sink.result()


def content_terms(text: str) -> list[str]:
    """Index-side terms of an item's content/statement: ordered by first occurrence, distinct,
    stopwords dropped, CJK runs give bigrams only, at most `MAX_CONTENT_TERMS`."""
    sink = _Sink(MAX_CONTENT_TERMS)
    sink.feed(_raw_terms(text, query=False))
    return sink.result()


def query_terms(*texts: str, cap: int = MAX_QUERY_TERMS) -> list[str]:
    """Query-side terms of ``texts`` in priority order (all terms of an earlier text come before
    those of a later one): distinct, stopwords dropped, CJK runs give bigrams plus the whole run
    (<= `MAX_WHOLE_CJK_RUN` chars), at most ``cap``. ``cap`` must be >= 0."""
    if isinstance(cap, bool) or not isinstance(cap, int):
        raise TypeError("cap must be an int")
    if cap < 0:
        raise ValueError("cap must be >= 0")
    sink = _Sink(cap)
    for text in texts:
        if sink.full:
            break
        sink.feed(_raw_terms(text, query=True))
    return sink.result()


# --------------------------------------------------------------------------- paths


def _split_ext(base: str) -> tuple[str, str]:
    dot = base.rfind(".")
    if dot <= 0 or dot == len(base) - 1:
        return base, ""
    return base[:dot], base[dot + 1 :]


def path_terms(path: str) -> list[str]:
    """Query-side terms for a file or directory path, at most `MAX_PATH_TERMS`, in this order:
    the whole normalized path (case-folded, only when it has a directory part), the basename,
    the terms of the basename without its last extension, the terms of each directory from the
    nearest to the root, then the extension. ``"src/app/UserConfig.java"`` ->
    ``["src/app/userconfig.java", "userconfig.java", "userconfig", "user", "config", "app",
    "src", "java"]``. The whole path and the basename are kept verbatim (no stopword,
    single-letter or plural filtering); the other terms are filtered like `query_terms`."""
    norm = normalize_path(path)
    if not norm:
        return []
    sink = _Sink(MAX_PATH_TERMS)
    segments = norm.split("/")
    base = segments[-1]
    if len(segments) > 1:
        sink.add_exact(_fold(norm))
    sink.add_exact(_fold(base))
    stem, ext = _split_ext(base)
    sink.feed(_raw_terms(stem, query=True))
    for directory in reversed(segments[:-1]):
        sink.feed(_raw_terms(directory, query=True))
    if ext:
        sink.feed(_raw_terms(ext, query=True))
    return sink.result()
