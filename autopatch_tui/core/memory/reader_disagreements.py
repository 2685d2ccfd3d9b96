"""Active items that came from a turn where the two readers disagreed (`memory audit`,
`reader_disagreements`): the gate and the extraction model's own reading of the user's words
(`pipeline.model_reading`). A turn's extraction job records a disagreement as `d-RULE:count` pairs
in its safe verdict; an item is listed when one of its candidates quotes the user in such a turn,
with the rule names recorded there (the granularity is the turn: the disagreement may concern a
sibling candidate of that turn, which is worth the same second look). Only IDs and rule names."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from autopatch_tui.core.memory.refusals import parse_disagreements


@dataclass(frozen=True)
class ReaderDisagreement:
    id: str  # the item's logical ID
    rules: tuple[str, ...]  # sorted rule names recorded for its source turns

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "rules": list(self.rules)}


# Driven from the extraction jobs that recorded a disagreement (few), through the indexed links
# turn -> candidate sources -> item candidates -> item (CROSS JOIN keeps that order).
_SQL = """
SELECT DISTINCT i.logical_id, j.failure_rule
FROM memory_jobs AS j
CROSS JOIN candidate_sources AS cs
CROSS JOIN item_candidates AS ic
CROSS JOIN memory_items AS i
WHERE j.kind = 'extraction' AND j.failure_category IS NULL AND j.failure_rule LIKE '%d-%'
  AND cs.turn_id = j.turn_id AND cs.role = 'user'
  AND ic.candidate_id = cs.candidate_id
  AND i.row_id = ic.item_row_id AND i.status = 'active'
"""


def reader_disagreements(conn: sqlite3.Connection) -> list[ReaderDisagreement]:
    rules: dict[str, set[str]] = {}
    for logical_id, verdict in conn.execute(_SQL):
        found = parse_disagreements(verdict)
        if found:
            rules.setdefault(logical_id, set()).update(found)
    return [ReaderDisagreement(item, tuple(sorted(r))) for item, r in sorted(rules.items())]


__all__ = ["ReaderDisagreement", "reader_disagreements"]
