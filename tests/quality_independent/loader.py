"""Loads a Memory-gate corpus in the independent format (/work/team/CORPUS_FORMAT.md, kept here as
`README.md`'s summary) and runs it black-box through `tests/quality/harness.py`.

A corpus file is `{"writer": str, "cases": [CASE, ...]}`; each CASE is a short conversation and ONE
candidate that the scripted model proposes when it processes the LAST turn (`repair` is what it
answers to an `extraction_repair`, a field of the candidate; absent or `null` = it repeats the
original). Scoring:
- "keep": an active item exists for the candidate (its subject; after a repair, the repaired
  candidate's), and with `lasting: true` it is `hard` + `always`;
- "refuse": nothing is stored (no active item at all: the case's only candidate is refused).

A malformed case (a quote that is not an exact substring of its turn's text, a turn index out of
range, a value outside the format, a non-inferred candidate without a user quote from the last turn
outside the `provenance` category) is never "fixed": it is listed with its reason and excluded from
the score (`load` returns it apart)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autopatch_tui.core.recall.terms import normalize_phrase
from tests.quality.cases import KEPT, Cand, Case, Turn
from tests.quality.harness import Outcome

CASES_JSON = Path(__file__).with_name("cases.json")
REFUSED = "refused"  # the harness's `expect` for a candidate that must not be stored (any rule)
KINDS = ("user_preference", "project_decision", "discussion_context")
ORIGINS = ("explicit", "adopted_proposal", "inferred_repetition")
INTENTS = ("general_chat", "code_explain", "code_audit", "patch_explain", "patch_revise")
CAND_FIELDS = ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode",
               "applies_to_paths", "aliases", "keywords")

# outcome cells of the confusion table
KEPT_RIGHT = "kept right"
REFUSED_RIGHT = "refused right"
FALSE_ACCEPT = "false accept"
FALSE_REFUSAL = "false refusal"
WRONG_STANDING = "kept, wrong standing"
CELLS = (KEPT_RIGHT, REFUSED_RIGHT, FALSE_ACCEPT, FALSE_REFUSAL, WRONG_STANDING)


@dataclass(frozen=True)
class IndependentCase:
    id: str
    lang: str
    category: str
    expect: str  # keep | refuse
    lasting: bool | None
    why: str
    case: Case  # the harness case (turns, the candidate, the repair)
    final: Cand  # the candidate that must (not) be stored: the repaired one when there is a repair


@dataclass(frozen=True)
class Malformed:
    id: str
    reason: str


@dataclass(frozen=True)
class Score:
    cell: str
    passed: bool
    detail: str = ""


class _Bad(Exception):
    pass


def _need(cond: bool, reason: str) -> None:
    if not cond:
        raise _Bad(reason)


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    _need(isinstance(value, list) and all(isinstance(v, str) for v in value), f"{name} is not a list of strings")
    return tuple(value)


def _fields(raw: dict, where: str) -> dict[str, Any]:
    _need(isinstance(raw, dict), f"{where} is not an object")
    missing = [f for f in CAND_FIELDS if f not in raw]
    _need(not missing, f"{where} lacks {', '.join(missing)}")
    _need(raw["kind"] in KINDS, f"{where}.kind {raw['kind']!r} is not a kind")
    _need(raw["origin"] in ORIGINS, f"{where}.origin {raw['origin']!r} is not an origin")
    _need(raw["strength"] in ("hard", "soft"), f"{where}.strength is not hard|soft")
    _need(raw["recall_mode"] in ("always", "on_match"), f"{where}.recall_mode is not always|on_match")
    for name in ("subject", "statement", "content"):
        _need(isinstance(raw[name], str), f"{where}.{name} is not a string")
    return {
        "kind": raw["kind"], "subject": raw["subject"], "statement": raw["statement"], "content": raw["content"],
        "strength": raw["strength"], "origin": raw["origin"], "recall_mode": raw["recall_mode"],
        "paths": _str_list(raw["applies_to_paths"], f"{where}.applies_to_paths"),
        "aliases": _str_list(raw["aliases"], f"{where}.aliases"),
        "keywords": _str_list(raw["keywords"], f"{where}.keywords"),
    }


def _convert(raw: dict) -> IndependentCase:
    _need(isinstance(raw, dict), "the case is not an object")
    cid = raw.get("id")
    _need(isinstance(cid, str) and cid.strip() != "", "no id")
    _need(raw.get("lang") in ("en", "zh", "mixed"), "lang is not en|zh|mixed")
    _need(isinstance(raw.get("category"), str), "no category")
    _need(raw.get("expect") in ("keep", "refuse"), "expect is not keep|refuse")
    lasting = raw.get("lasting")
    _need(lasting in (True, False, None), "lasting is not true|false|null")
    turns_raw = raw.get("turns")
    _need(isinstance(turns_raw, list) and 1 <= len(turns_raw) <= 4, "turns is not a list of 1 to 4 turns")
    turns = []
    for i, tr in enumerate(turns_raw):
        _need(isinstance(tr, dict) and isinstance(tr.get("user"), str) and isinstance(tr.get("assistant"), str),
              f"turns[{i}] lacks user/assistant text")
        intent = tr.get("intent", "general_chat")
        _need(intent in INTENTS, f"turns[{i}].intent {intent!r} is not an intent")
        turns.append(Turn(tr["user"], tr["assistant"], intent=intent,
                          paths=_str_list(tr.get("paths", []), f"turns[{i}].paths"),
                          keys=_str_list(tr.get("evidence_keys", []), f"turns[{i}].evidence_keys")))
    cand_raw = raw.get("candidate")
    fields = _fields(cand_raw, "candidate")
    sources = cand_raw.get("sources")
    _need(isinstance(sources, list) and 1 <= len(sources) <= 8, "candidate.sources is not 1..8 sources")
    src = []
    for j, s in enumerate(sources):
        _need(isinstance(s, dict) and s.get("role") in ("user", "assistant") and isinstance(s.get("quote"), str)
              and isinstance(s.get("turn"), int), f"sources[{j}] is not {{turn, role, quote}}")
        _need(0 <= s["turn"] < len(turns), f"sources[{j}].turn {s['turn']} is out of range")
        text = turns[s["turn"]].user if s["role"] == "user" else turns[s["turn"]].assistant
        _need(s["quote"] != "" and s["quote"] in text,
              f"sources[{j}].quote is not an exact substring of turns[{s['turn']}].{s['role']}")
        src.append((s["turn"], s["role"], s["quote"]))
    last = len(turns) - 1
    if fields["origin"] != "inferred_repetition" and raw["category"] != "provenance":
        _need(any(t == last and role == "user" for t, role, _ in src),
              "a non-inferred candidate cites no user quote from the last turn")
    expect = KEPT if raw["expect"] == "keep" else REFUSED
    cand = Cand(at=last, src=tuple(src), expect=expect, **fields)
    repair: tuple[Cand, ...] | None = None
    repaired = cand_raw.get("repair")  # CAND.repair: what the model answers to the extraction_repair
    if repaired is not None:
        rfields = _fields(repaired, "candidate.repair")
        repair = (Cand(at=last, src=tuple(src), expect=expect, **rfields),)
    case = Case(id=cid, lang=raw["lang"], turns=tuple(turns), cands=(cand,), repair=repair)
    return IndependentCase(id=cid, lang=raw["lang"], category=raw["category"], expect=raw["expect"],
                           lasting=lasting if raw["expect"] == "keep" else None, why=str(raw.get("why", "")),
                           case=case, final=repair[0] if repair else cand)


def load(path: Path = CASES_JSON) -> tuple[list[IndependentCase], list[Malformed]]:
    """The well-formed cases and the malformed ones (each with its reason), in file order."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    cases: list[IndependentCase] = []
    bad: list[Malformed] = []
    seen: Counter[str] = Counter()
    for n, raw in enumerate(doc["cases"]):
        cid = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else f"#{n}"
        seen[cid] += 1
        if seen[cid] > 1:
            bad.append(Malformed(cid, "a second case with this id"))
            continue
        try:
            cases.append(_convert(raw))
        except _Bad as exc:
            bad.append(Malformed(cid, str(exc)))
    return cases, bad


def score(ic: IndependentCase, out: Outcome) -> Score:
    """The case's confusion cell and whether it passed."""
    if out.errors:
        return Score(FALSE_REFUSAL if ic.expect == "keep" else FALSE_ACCEPT, False, out.errors[0])
    if ic.expect == "refuse":
        if out.items:
            kinds = ", ".join(f"{i['kind']} {i['strength']}/{i['recall_mode']}" for i in out.items)
            return Score(FALSE_ACCEPT, False, f"stored: {kinds}")
        return Score(REFUSED_RIGHT, True)
    want = normalize_phrase(ic.final.subject)
    mine = [i for i in out.items if normalize_phrase(i["subject"]) == want]
    if not mine:
        return Score(FALSE_REFUSAL, False, f"not stored (refused: {dict(out.refused) or 'nothing'})")
    item = mine[0]
    if ic.lasting and (item["strength"], item["recall_mode"]) != ("hard", "always"):
        return Score(WRONG_STANDING, False, f"stored {item['strength']}/{item['recall_mode']}, lasting")
    return Score(KEPT_RIGHT, True)


__all__ = ["CASES_JSON", "CELLS", "IndependentCase", "Malformed", "Score", "load", "score"]
