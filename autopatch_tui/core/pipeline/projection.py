"""Fitting text into a token budget: keep the head and the tail, mark the omission.

`project_text` returns the segments that were actually sent (one when the text fits, head and
tail otherwise) so provenance checks can refuse quotes that only exist in the omitted middle."""

from __future__ import annotations

from dataclasses import dataclass

from autopatch_tui.core.llm.tokens import estimate_tokens

MARKER = "[... {n} chars omitted ...]"


@dataclass(frozen=True)
class Projected:
    text: str  # what is sent (head + marker + tail, or the whole text)
    segments: tuple[str, ...]  # the verbatim pieces of the original inside `text`
    omitted: int  # characters left out


def marker(n: int) -> str:
    return MARKER.format(n=n)


def project_text(text: str, max_tokens: int) -> Projected:
    """The longest head+tail projection of `text` whose estimate fits `max_tokens`."""
    if estimate_tokens(text) <= max_tokens:
        return Projected(text, (text,), 0)
    lo, hi = 0, len(text)
    best = Projected(marker(len(text)), (), len(text))
    while lo <= hi:  # binary search on the number of kept characters
        keep = (lo + hi) // 2
        head_n = (keep + 1) // 2
        tail_n = keep - head_n
        head, tail = text[:head_n], text[len(text) - tail_n:] if tail_n else ""
        omitted = len(text) - keep
        candidate = f"{head}\n{marker(omitted)}\n{tail}"
        if estimate_tokens(candidate) <= max_tokens:
            best = Projected(candidate, tuple(s for s in (head, tail) if s), omitted)
            lo = keep + 1
        else:
            hi = keep - 1
    return best
