"""The promoted section as text: found exactly or refused, spliced without touching other lines,
removed (with the blank line that set it apart) when no bullet is left."""

from __future__ import annotations

import pytest

from autopatch_tui.core.instructions import section as s


def bullets(*ids: str) -> list[s.Bullet]:
    return [s.Bullet(i, f"Rule {i}.", s.render_bullet(i, f"Rule {i}.", f"quote {i}", "2026-01-01")) for i in ids]


def test_splice_adds_then_replaces_then_removes_leaving_the_rest_as_it_was() -> None:
    original = "# Rules\n\nHand-written rule.\n"
    one = s.splice(original, bullets("mem-1"))
    assert one.startswith(original + "\n" + s.BEGIN + "\n")
    two = s.splice(one + "Written after.\n", bullets("mem-1", "mem-2"))
    assert two.startswith(original) and two.endswith(s.END + "\nWritten after.\n")
    assert [b.item_id for b in s.section_bullets(two)] == ["mem-1", "mem-2"]
    assert s.splice(one, []) == original  # the section and its blank line go; nothing else changes
    assert s.splice(original, []) == original
    assert s.splice("", bullets("mem-3")).startswith(s.BEGIN)


def test_markers_are_found_exactly_or_refused() -> None:
    text = s.splice("x\n", bullets("mem-1"))
    for broken in (text.replace(s.END, ""), text + s.BEGIN + "\n", text + s.END + "\n",
                   s.END + "\n" + text.replace(s.END, "")):
        with pytest.raises(s.SectionError):
            s.find_section(broken.splitlines())
        assert s.promoted_statements(broken) == {}  # a broken section promotes nothing
    assert s.promoted_statements(text) == {"mem-1": "Rule mem-1."}


def test_continuation_lines_belong_to_their_bullet_and_stray_lines_are_not_bullets() -> None:
    text = s.splice("", bullets("mem-1", "mem-2")).replace(
        s.END, "- a hand-written line without a key\n" + s.END)
    found = s.section_bullets(text)
    assert [b.item_id for b in found] == ["mem-1", "mem-2"]
    assert found[0].lines == s.render_bullet("mem-1", "Rule mem-1.", "quote mem-1", "2026-01-01")


def test_one_line_makes_any_text_a_safe_single_line() -> None:
    assert s.one_line("a\n b\t\tc") == "a b c"
    assert s.one_line("end --> <!-- start") == "end --&gt; &lt;!-- start"
    assert s.one_line("esc \x1b[2J bidi \u202e") == "esc \\u001b[2J bidi \\u202e"
    with pytest.raises(ValueError):
        s.render_bullet("mem-1 --> x", "statement", None, "2026-01-01")
