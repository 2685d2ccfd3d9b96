"""The phrase index: phrase keys that let recall find an item *named* by the query (its subject,
an alias, a keyword or a check ID written out in the query), however common the single words of that
phrase are.

Index side: every stored phrase also posts its **key**, `PHRASE_KEY + " ".join(phrase_terms(phrase))`,
with the phrase's `(field, phrase, need)` (`postings.item_postings`). A query looks keys up by exact
seeks. No query term can start with `PHRASE_KEY` (the tokenizer never yields control characters),
so a key is never mistaken for a term.

Query side (`query_phrase_keys`): the query texts are tokenized like a stored phrase (index-side
terms: CJK runs give bigrams only, stopwords and single letters dropped, plurals folded) into a term
stream; every window of the stream, read from each start position until `MAX_PHRASE_TERMS` distinct
terms (duplicates inside a window are skipped, as `phrase_terms` skips them), gives one key. So a query
that contains a stored phrase produces exactly that phrase's key. The stream is capped
(`MAX_STREAM_TERMS` positions), so a query has at most `MAX_STREAM_TERMS * MAX_PHRASE_TERMS` keys.

A key carried by more than `PHRASE_KEY_ITEMS` phrases is *common*: it does not name anything, and it
is skipped (its posting count stops at `PHRASE_KEY_ITEMS + 1`), which keeps the evaluation bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from autopatch_tui.core.recall.terms import (
    MAX_PHRASE_TERMS,
    MAX_TERM_CHARS,
    STOPWORDS,
    _acceptable,
    _raw_terms,
    fold_plural,
    is_check_id,
    path_terms,
    phrase_terms,
)

PHRASE_KEY = "\x1e"
PHRASE_KEY_ITEMS = 32  # a phrase shared by more stored phrases than this names nothing
MAX_STREAM_TERMS = 64  # query positions that start a window
MAX_WINDOW_SPAN = 2 * MAX_PHRASE_TERMS  # raw positions one window may cover (duplicates included)
PHRASE_FIELDS = ("subject", "alias", "keyword", "check_id")


def phrase_key(terms: Iterable[str]) -> str:
    return PHRASE_KEY + " ".join(terms)


def item_phrases(subject: str, aliases: Iterable[str], keywords: Iterable[str]) -> list[tuple[str, int, list[str]]]:
    """(field, phrase number, terms) of every stored phrase of an item: the subject is phrase 0, aliases
    and keywords are numbered in order (a keyword that is a check ID is in field `check_id`)."""
    out = [("subject", 0, phrase_terms(subject))]
    out += [("alias", n, phrase_terms(a)) for n, a in enumerate(aliases)]
    out += [("check_id" if is_check_id(k.strip()) else "keyword", n, phrase_terms(k)) for n, k in enumerate(keywords)]
    return out


# --------------------------------------------------------------------------- query side


def _stream(text: str) -> Iterator[str]:
    """Index-side terms of `text` in order, duplicates kept (what `phrase_terms` sees before dedup)."""
    for raw in _raw_terms(text, query=False):
        if not _acceptable(raw) or raw in STOPWORDS:
            continue
        term = fold_plural(raw)
        if term and len(term) <= MAX_TERM_CHARS:
            yield term


def _windows(stream: list[str], out: dict[str, None]) -> None:
    for start in range(len(stream)):
        window: list[str] = []
        seen: set[str] = set()
        for term in stream[start:start + MAX_WINDOW_SPAN]:
            if term in seen:
                continue
            seen.add(term)
            window.append(term)
            out[phrase_key(window)] = None
            if len(window) == MAX_PHRASE_TERMS:
                break


def query_phrase_keys(texts: Iterable[str], paths: Iterable[str] = ()) -> list[str]:
    """Phrase keys of the query texts (in priority order) and of its paths' query terms, distinct,
    ordered; at most `MAX_STREAM_TERMS` window starts in all."""
    out: dict[str, None] = {}
    budget = MAX_STREAM_TERMS
    streams: list[list[str]] = []
    for text in texts:
        if budget <= 0:
            break
        stream: list[str] = []
        for term in _stream(text):
            stream.append(term)
            if len(stream) >= budget:
                break
        budget -= len(stream)
        streams.append(stream)
    for p in paths:
        if budget <= 0:
            break
        stream = path_terms(p)[:budget]
        budget -= len(stream)
        streams.append(stream)
    for stream in streams:
        _windows(stream, out)
    return list(out)
