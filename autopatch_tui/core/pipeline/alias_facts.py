"""What an English alias may not add (issue 29, round two): an alias is a recall phrase for the
user's decision, not a place to state more than the user did. An alias word that is a *numeral* (a
digit, a number word: "two approvals"), a *duration or unit* ("1h", "minutes", "weekly") or a
*technical token* (an identifier with a digit: "s3", "http2"; a code-like token: `max_age`,
`redis.conf`, `maxRetries`) that neither the quoted words, the subject, the
statement nor the content hold introduces a fact the user never stated ("use Redis cluster with
1h TTL" for "缓存统一用 Redis"): the candidate is refused with rule `alias_adds`.

Closed classes of form only: digits, the English number words, units of time and size, letter case
and code punctuation. A number word is licensed by a digit or a Chinese numeral in the source text, a
unit by a digit or a Chinese unit of time or size ("每天" → "daily"). An all-caps acronym is *not* an
addition by its form: it is as often the English name of the Chinese term ("接口" → "API", "协调世界时"
→ "UTC", "说明文档" → "README") as a new thing; "1h TTL" is caught by its "1h"."""

from __future__ import annotations

import re
from collections.abc import Iterable

RULE = "alias_adds"

_NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty "
    "sixty hundred thousand million once twice thrice single double triple dozen half".split())
_UNITS = frozenset(
    "ms msec millisecond milliseconds sec secs second seconds min mins minute minutes hr hrs hour hours day days "
    "week weeks month months year years hourly daily nightly weekly monthly yearly annually kb mb gb tb kib "
    "mib gib percent".split())
_CJK_NUMERAL = re.compile(r"[零一二两三四五六七八九十百千万半双俩]|\d")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/=+-]*[A-Za-z0-9%]|[A-Za-z0-9]")
_CJK_UNIT = re.compile(r"[秒分时天日周月年]|星期|\d")
_CODE_LIKE = re.compile(r"[_.:/=]|[a-z][A-Z]")


def _adds(token: str, source: str, numeral_in_source: bool, unit_in_source: bool) -> bool:
    low = token.lower()
    if low in source:
        return False
    if any(ch.isdigit() for ch in token):
        return True  # "1h", "s3", "v2", "30": a number or an identifier with one
    if low in _NUMBER_WORDS:
        return not numeral_in_source  # "two" for "两个" is a translation
    if low in _UNITS:
        return not unit_in_source
    return bool(_CODE_LIKE.search(token))


def alias_adds(aliases: Iterable[str], source_texts: Iterable[str]) -> bool:
    """An alias introduces a numeral, a unit or a technical token absent from the sources."""
    source = " ".join(source_texts)
    numeral_in_source = bool(_CJK_NUMERAL.search(source))
    unit_in_source = bool(_CJK_UNIT.search(source))
    source = source.lower()
    for alias in aliases:
        for token in _TOKEN.findall(alias):
            if _adds(token.rstrip(".:/=+-"), source, numeral_in_source, unit_in_source):
                return True
    return False


__all__ = ["RULE", "alias_adds"]
