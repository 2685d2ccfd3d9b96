"""The inbox's word diff: it spells both texts exactly, marks only what changed, word by word."""

from __future__ import annotations

import random

from autopatch_tui.core.memory.word_diff import new_text, old_text, paths_change, word_diff


def test_the_segments_spell_both_texts_exactly() -> None:
    rng = random.Random(9)
    words = ["use", "tabs", "spaces", "in", "src", "Redis.", "(always)", "—", "缓存", "  ", "\n"]
    for _ in range(300):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        b = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        segments = word_diff(a, b)
        assert old_text(segments) == a and new_text(segments) == b
        assert all(x.op != y.op for x, y in zip(segments, segments[1:]))  # neighbours merged


def test_only_the_changed_words_are_marked() -> None:
    segments = word_diff("Use two spaces.", "Use four spaces.")
    assert [(s.op, s.text) for s in segments] == [("same", "Use "), ("del", "two"), ("add", "four"),
                                                  ("same", " spaces.")]
    grown = word_diff("The cache lives in Redis.", "The cache lives in Redis with a TTL.")
    assert [s.op for s in grown] == ["same", "add", "same"]


def test_applicability_change() -> None:
    change = paths_change(["src", "lib"], ["src", "tests"])
    assert (change.removed, change.added, change.kept, change.changed) == (("lib",), ("tests",), ("src",), True)
    assert not paths_change([], []).changed
