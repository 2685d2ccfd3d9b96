"""The extraction input (contracts §3.1), built from SQLite and fitted to the model's capacity.

Offload order when the payload is too large: the oldest repair evidence first, then the adjacent
turn, then the previous checkpoint; then the batch's user/assistant texts are projected to head +
tail with a marker. RAW text in SQLite is never shortened. What was actually sent is kept beside
the payload so that provenance is checked against it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from autopatch_tui.core import constants as C
from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.llm.json_reply import dump_json_payload
from autopatch_tui.core.llm.tokens import estimate_tokens
from autopatch_tui.core.pipeline.projection import project_text

MAX_EVIDENCE_TURNS = 20
MAX_EVIDENCE_TOKENS = 32_000
MIN_TEXT_TOKENS = 48  # below this a projected primary text says nothing useful


@dataclass
class TurnView:
    turn_id: str
    sequence: int
    intent: str
    state: str
    user: str
    assistant: str
    scope_paths: list[str]
    evidence_keys: list[str]

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> TurnView:
        return cls(row["id"], row["sequence"], row["intent"], row["state"], row["user_text"],
                   row["assistant_text"] or "", loads_column(row["scope_paths"], []), loads_column(row["evidence_keys"], []))

    def as_payload(self, user: str | None = None, assistant: str | None = None) -> dict[str, object]:
        return {"turn_id": self.turn_id, "sequence": self.sequence, "intent": self.intent, "state": self.state,
                "user": self.user if user is None else user,
                "assistant": self.assistant if assistant is None else assistant,
                "scope_paths": self.scope_paths, "evidence_keys": self.evidence_keys}


@dataclass
class ExtractionInput:
    thread_id: str
    checkpoint: str
    adjacent: TurnView | None
    batch: list[TurnView]
    evidence: list[TurnView]
    # (turn_id, role) -> verbatim segments of that text actually sent; filled by `fit`
    sent: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    projected: dict[tuple[str, str], str] = field(default_factory=dict)
    projected_segments: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    offloaded: list[str] = field(default_factory=list)

    def turns_by_id(self) -> dict[str, TurnView]:
        out = {t.turn_id: t for t in self.evidence}
        if self.adjacent is not None:
            out[self.adjacent.turn_id] = self.adjacent
        out.update({t.turn_id: t for t in self.batch})
        return out

    @property
    def batch_ids(self) -> set[str]:
        return {t.turn_id for t in self.batch}

    def payload(self) -> dict[str, object]:
        def view(t: TurnView) -> dict[str, object]:
            return t.as_payload(self.projected.get((t.turn_id, "user")), self.projected.get((t.turn_id, "assistant")))

        return {
            "thread_id": self.thread_id,
            "previous_checkpoint": self.checkpoint,
            "adjacent_previous_turn": view(self.adjacent) if self.adjacent else None,
            "turns": [view(t) for t in self.batch],
            "recent_repair_evidence": [view(t) for t in self.evidence],
        }

    def record_sent(self) -> None:
        self.sent = {}
        for t in [*self.evidence, *([self.adjacent] if self.adjacent else []), *self.batch]:
            for role, raw in (("user", t.user), ("assistant", t.assistant)):
                segs = self.projected_segments.get((t.turn_id, role))
                self.sent[(t.turn_id, role)] = segs if segs is not None else ((raw,) if raw else ())



def load_input(conn: sqlite3.Connection, job_turn_ids: Sequence[str]) -> ExtractionInput:
    marks = ",".join("?" * len(job_turn_ids))
    rows = conn.execute(f"SELECT * FROM turns WHERE id IN ({marks}) ORDER BY sequence", tuple(job_turn_ids)).fetchall()
    batch = [TurnView.from_row(r) for r in rows]
    thread_id = rows[0]["thread_id"]
    first_seq = batch[0].sequence
    checkpoint = conn.execute("SELECT checkpoint FROM threads WHERE id = ?", (thread_id,)).fetchone()[0]
    adj_row = conn.execute(
        "SELECT * FROM turns WHERE thread_id = ? AND sequence < ? AND state = 'completed'"
        " ORDER BY sequence DESC LIMIT 1", (thread_id, first_seq)
    ).fetchone()
    adjacent = TurnView.from_row(adj_row) if adj_row else None
    evidence: list[TurnView] = []
    if any(t.intent in C.REPAIR_INTENTS for t in batch):
        marks_i = ",".join("?" * len(C.REPAIR_INTENTS))
        ev_rows = conn.execute(
            f"SELECT * FROM turns WHERE thread_id = ? AND sequence < ? AND state != 'open'"
            f" AND intent IN ({marks_i}) ORDER BY sequence DESC LIMIT ?",
            (thread_id, first_seq, *C.REPAIR_INTENTS, MAX_EVIDENCE_TURNS),
        ).fetchall()
        budget = MAX_EVIDENCE_TOKENS
        for r in ev_rows:  # newest first, within the token budget
            t = TurnView.from_row(r)
            cost = estimate_tokens(t.user) + estimate_tokens(t.assistant) + 16
            if cost > budget:
                break
            budget -= cost
            evidence.append(t)
        evidence.reverse()
        if adjacent is not None:
            evidence = [t for t in evidence if t.turn_id != adjacent.turn_id]
    return ExtractionInput(thread_id, checkpoint, adjacent, batch, evidence)


def fit(inp: ExtractionInput, capacity: int, measure: Callable[[str], int]) -> bool:
    """Shrink `inp` until `measure(payload_json)` ≤ capacity. False when even the projected primary
    content cannot fit (the caller ends the job with a capacity reason)."""
    def size() -> int:
        return measure(dump_json_payload(inp.payload()))

    while size() > capacity:
        if inp.evidence:
            inp.evidence.pop(0)
            _note(inp, "repair_evidence")
        elif inp.adjacent is not None:
            inp.adjacent = None
            _note(inp, "adjacent_turn")
        elif inp.checkpoint:
            inp.checkpoint = ""
            _note(inp, "previous_checkpoint")
        else:
            ok = _project_primary(inp, capacity, size)
            inp.record_sent()
            return ok
    inp.record_sent()
    return True


def _note(inp: ExtractionInput, what: str) -> None:
    if what not in inp.offloaded:
        inp.offloaded.append(what)


def _project_primary(inp: ExtractionInput, capacity: int, size: Callable[[], int]) -> bool:
    texts = [(t, role) for t in inp.batch for role in ("user", "assistant") if (t.user if role == "user" else t.assistant)]
    for t, role in texts:  # measure the frame without the primary texts
        inp.projected[(t.turn_id, role)] = ""
    frame = size()
    available = capacity - frame
    if not texts or available < MIN_TEXT_TOKENS * len(texts):
        return False
    weights = {(t.turn_id, role): estimate_tokens(t.user if role == "user" else t.assistant) for t, role in texts}
    total = sum(weights.values())
    for _ in range(8):  # shrink until the JSON escaping overhead also fits
        for t, role in texts:
            raw = t.user if role == "user" else t.assistant
            share = max(MIN_TEXT_TOKENS, int(available * weights[(t.turn_id, role)] / total))
            p = project_text(raw, share)
            inp.projected[(t.turn_id, role)] = p.text
            inp.projected_segments[(t.turn_id, role)] = p.segments
        if size() <= capacity:
            _note(inp, "primary_projection")
            return True
        available = int(available * 0.85)
        if available < MIN_TEXT_TOKENS * len(texts):
            return False
    return False
