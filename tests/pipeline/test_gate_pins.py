"""bench/gate_pins.py splits a pattern into every alternation branch at any depth, and removing one
branch leaves the others intact (the count it reports is only as good as this split)."""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pins():
    spec = importlib.util.spec_from_file_location("gate_pins_under_test", ROOT / "bench" / "gate_pins.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_every_branch_at_any_depth_and_its_removal():
    g = _pins()
    p = r"(?<![a-z])(?:always|never (?:again|ever)|[|(]x)(?![a-z])|以后|\|literal"
    removed = {p[a:b]: p[:ca] + p[cb:] for a, b, ca, cb in g.branches(p)}
    assert set(removed) == {r"(?<![a-z])(?:always|never (?:again|ever)|[|(]x)(?![a-z])", "以后", r"\|literal",
                            "always", "never (?:again|ever)", "[|(]x", "again", "ever"}
    for branch, rest in removed.items():
        re.compile(rest)  # still a pattern
    assert removed["again"] == r"(?<![a-z])(?:always|never (?:ever)|[|(]x)(?![a-z])|以后|\|literal"
    assert removed["以后"] == r"(?<![a-z])(?:always|never (?:again|ever)|[|(]x)(?![a-z])|\|literal"
    assert not re.search(removed["always"], "always") and re.search(removed["always"], "never ever")


def test_entries_cover_patterns_word_sets_and_string_tuples():
    g = _pins()
    mod = types.SimpleNamespace(PAT=re.compile("a|b"), WORDS=frozenset({"x", "y"}), PHRASES=("p", "q", "r"),
                                _private_tuple=(1, 2))
    names = [(n, shown) for _, n, shown, _ in g.entries({"m": mod})]
    assert sorted(names) == sorted([("PAT", "a"), ("PAT", "b"), ("WORDS", "x"), ("WORDS", "y"), ("PHRASES", "p"),
                                    ("PHRASES", "q"), ("PHRASES", "r")])
