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
    # an unusual ID (a hand-edited or merged store) is escaped in its key, never breaking the comment
    odd = "mem-1 --> x <!-- é"
    lines = s.render_bullet(odd, "statement", None, "2026-01-01")
    assert "-->" not in lines[0].split("<!-- memory:", 1)[1][:-4] and lines[0].count("<!--") == 1
    text = "\n".join([s.BEGIN, s.HEADING, "", *lines, s.END]) + "\n"
    assert [b.item_id for b in s.section_bullets(text)] == [odd]
    with pytest.raises(s.SectionError, match="cannot be written as a key"):
        s.render_bullet("é" * 200, "statement", None, "2026-01-01")


HAND = [
    "NOTE by hand: these came from reviewed Memory, ask Ana before deleting one.",
    "- A hand-written rule without a key.",
    "* Their rule, a `*` bullet. <!-- memory:mem-TEAMMATE -->",
    "  > “theirs” — 2026-01-02",
]


def section_of(*body: str, nl: str = "\n") -> str:
    return nl.join(["# Rules", "", s.BEGIN, s.HEADING, "", *body, s.END, "tail", ""])


def test_lines_promote_did_not_write_stay_where_they_are() -> None:
    mine = bullets("mem-1", "mem-2", "mem-3")
    wrapped = ["+ Rule mem-2.", "  <!-- memory:mem-2 -->", "  > “quote", "  > mem-2” — 2026-01-01"]  # a formatter's
    text = section_of(*mine[0].lines, "  - a nested note under mem-1, by hand", HAND[0], HAND[1], *wrapped, "",
                      "A second paragraph, by hand.", *HAND[2:], *mine[2].lines)
    found = s.section_bullets(text)
    assert [b.item_id for b in found] == ["mem-1", "mem-2", "mem-TEAMMATE", "mem-3"]
    assert s.promoted_statements(text)["mem-2"] == "Rule mem-2."  # wrapped, still the same statement
    # mem-1 revised, mem-3 forgotten, the teammate's kept, mem-4 new — the hand lines untouched
    revised = s.Bullet("mem-1", "Rule one, revised.", s.render_bullet("mem-1", "Rule one, revised.", "q", "2026-02-02"))
    new = s.splice(text, [revised, found[1], found[2], *bullets("mem-4")])
    assert new == section_of(*revised.lines, "  - a nested note under mem-1, by hand", HAND[0], HAND[1], *wrapped, "",
                             "A second paragraph, by hand.", *HAND[2:], *bullets("mem-4")[0].lines)
    # a bullet re-promoted with the same words is left byte for byte, however a formatter wrapped it
    assert s.splice(new, s.section_bullets(new)) == new
    # no bullet left: a section with hand-written lines in it stays (only promote's lines go)
    kept = s.splice(text, [])
    assert kept == section_of("  - a nested note under mem-1, by hand", HAND[0], HAND[1], "",
                              "A second paragraph, by hand.")


def test_a_section_with_no_keyed_bullet_gets_them_at_its_end_crlf_kept() -> None:
    text = section_of(*HAND[:2], nl="\r\n")
    new = s.splice(text, bullets("mem-1"))
    assert new == section_of(*HAND[:2], *bullets("mem-1")[0].lines, nl="\r\n")


def test_an_id_comment_counts_only_as_a_bullets_key() -> None:
    others = ["See <!-- memory:mem-1 --> in a paragraph.",  # not a bullet
              "- words after <!-- memory:mem-2 --> the key",  # somebody else's text around an ID
              "-not a bullet <!-- memory:mem-3 -->",
              "    - too deep to be a list item <!-- memory:mem-4 -->",
              "- a bullet whose key is after a blank line", "", "  <!-- memory:mem-5 -->",
              "- a hand-written bullet with a nested list", "  - whose item is a teammate's <!-- memory:mem-7 -->"]
    text = section_of(*others)
    nested = s.section_bullets(text)  # the nested item is keyed, the bullet it is nested in is not
    assert [(b.item_id, b.lines) for b in nested] == [("mem-7", (others[-1],))]
    assert s.splice(text, [*nested, *bullets("mem-6")]) == section_of(*others, *bullets("mem-6")[0].lines)
    assert s.splice(text, bullets("mem-6")) == section_of(*others[:-1], *bullets("mem-6")[0].lines)
