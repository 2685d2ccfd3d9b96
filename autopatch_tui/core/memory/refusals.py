"""The Memory gate's refusals, read back from the jobs (contracts §8: `memory status` `refusals`).

Each extraction job's safe verdict is `rule:count` pairs joined by "." in `memory_jobs.failure_rule`
with no failure category (`pipeline.extraction.record_refusals`): the candidates the gate refused
for that job's turn. `parse_verdict` reads one verdict, `refusal_counts` sums them over every
extraction job. A value a hostile or foreign store holds outside the safe alphabet, or a pair that
is not `name:count`, is skipped: only rule names and counts ever leave this module (§6).
A verdict may also record where the gate and the model's own reading disagreed (`d-RULE:count`
pairs, `pipeline.model_reading`): never counted as refusals, read by `parse_disagreements`."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter

_PAIR = re.compile(r"([a-z0-9_]{1,48}):([0-9]{1,6})")
_DISAGREED = "d-"  # pipeline.model_reading.DISAGREEMENT_PREFIX (core.memory does not import the pipeline)


def parse_verdict(rule: str | None) -> dict[str, int]:
    """`"one_off_scope:2.code_fact:1"` → `{"one_off_scope": 2, "code_fact": 1}`; {} for None or junk."""
    out: Counter[str] = Counter()
    if not isinstance(rule, str) or len(rule) > 64:
        return {}
    for part in rule.split("."):
        m = _PAIR.fullmatch(part)
        if m and int(m.group(2)) > 0:
            out[m.group(1)] += int(m.group(2))
    return dict(out)


def parse_disagreements(rule: str | None) -> dict[str, int]:
    """The readers' disagreements a verdict records (`d-RULE:count` pairs, `pipeline.model_reading`):
    `"code_fact:1.d-model_reading:2"` → `{"model_reading": 2}`; {} for None or junk."""
    out: Counter[str] = Counter()
    if not isinstance(rule, str) or len(rule) > 64:
        return {}
    for part in rule.split("."):
        m = _PAIR.fullmatch(part.removeprefix(_DISAGREED)) if part.startswith(_DISAGREED) else None
        if m and int(m.group(2)) > 0:
            out[m.group(1)] += int(m.group(2))
    return dict(out)


def refusal_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Candidates refused by the gate, by rule, over all extraction jobs (most frequent first)."""
    total: Counter[str] = Counter()
    for (rule,) in conn.execute("SELECT failure_rule FROM memory_jobs WHERE kind = 'extraction'"
                                " AND failure_category IS NULL AND failure_rule IS NOT NULL"):
        total.update(parse_verdict(rule))
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def refusals_line(counts: dict[str, int]) -> str:
    """`one_off_scope 3 · code_fact 2` (the order given), or "" when nothing was refused."""
    return " · ".join(f"{rule} {n}" for rule, n in counts.items())


__all__ = ["parse_disagreements", "parse_verdict", "refusal_counts", "refusals_line"]
