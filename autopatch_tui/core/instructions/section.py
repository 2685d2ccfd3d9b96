"""The marked section of an instruction file that `memory promote` owns (contracts §9).

    <!-- autopatch-tui:memory:begin (written by `autopatch-tui memory promote`) -->
    ## Rules promoted from reviewed Memory

    - Run `make check` before proposing a patch. <!-- memory:mem-01JD… -->
      > “please always run make check before you propose a patch” — 2026-11-03
    <!-- autopatch-tui:memory:end -->

HTML comments are invisible in rendered Markdown, so the markers cost a reader nothing. One
bullet per item: its statement on the bullet line, keyed by the item's logical ID in a comment at
its end, then the user's source quote and its date on a continuation line. Text outside the
section is never changed (its lines are kept byte for byte, line endings included); the section
itself is regenerated. Pure text functions: no file or store access here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from autopatch_tui.core.errors import AutopatchError

BEGIN_PREFIX = "<!-- autopatch-tui:memory:begin"
BEGIN = BEGIN_PREFIX + " (written by `autopatch-tui memory promote`) -->"
END = "<!-- autopatch-tui:memory:end -->"
HEADING = "## Rules promoted from reviewed Memory"
MAX_QUOTE_CHARS = 300
_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}"
_BULLET = re.compile(r"^- (?P<statement>.*?) <!-- memory:(?P<id>" + _ID + r") -->[ \t]*$")
# C0/C1 controls, DEL, line/paragraph separators and the bidirectional overrides (text that would
# read differently in a terminal or an editor than it is stored)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` safe to print on a terminal: every control character but newline and tab (and the
    bidi overrides) written as a visible escape."""
    return _TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class SectionError(AutopatchError):
    """The file's promoted section cannot be told apart safely (broken or repeated markers)."""


@dataclass(frozen=True)
class Bullet:
    item_id: str
    statement: str  # as written on the bullet line (already `one_line`)
    lines: tuple[str, ...]  # the bullet line and its continuation lines, without line endings


@dataclass(frozen=True)
class Section:
    start: int  # index of the begin marker's line
    end: int  # index of the end marker's line
    bullets: tuple[Bullet, ...]


def one_line(text: str) -> str:
    """`text` as one safe Markdown line: whitespace runs (newlines too) become one space, control
    and bidi characters are written as visible escapes, and an HTML comment cannot open or close
    (so no statement or quote can end a marker or fake one)."""
    flat = " ".join(text.split())
    flat = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", flat)
    return flat.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def render_bullet(item_id: str, statement: str, quote: str | None, date: str) -> tuple[str, ...]:
    """The bullet of one item. `quote`: the user's source quote (None when none is recorded)."""
    if not re.fullmatch(_ID, item_id):
        raise ValueError("not an item ID")
    first = f"- {one_line(statement)} <!-- memory:{item_id} -->"
    if quote is None or not quote.strip():
        return first, f"  > (no quote of the user is recorded) — {date}"
    said = one_line(quote)
    if len(said) > MAX_QUOTE_CHARS:
        said = said[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
    return first, f"  > “{said}” — {date}"


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def find_section(lines: Sequence[str]) -> Section | None:
    """The promoted section of a file's lines (with or without their endings), or None when the
    file has none. Raises `SectionError` for a begin without an end, repeated markers, or an end
    before the begin: which lines are ours would be a guess, and a guess could eat the user's text."""
    begins = [i for i, line in enumerate(lines) if _bare(line).strip().startswith(BEGIN_PREFIX)]
    ends = [i for i, line in enumerate(lines) if _bare(line).strip() == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise SectionError(f"the file's promoted section has {len(begins)} begin and {len(ends)} end marker(s) "
                           "out of order; fix the autopatch-tui:memory markers by hand")
    start, end = begins[0], ends[0]
    bullets: list[Bullet] = []
    current: list[str] | None = None
    item_id = statement = ""
    for raw in lines[start + 1:end]:
        line = _bare(raw)
        m = _BULLET.match(line)
        if m:
            if current is not None:
                bullets.append(Bullet(item_id, statement, tuple(current)))
            current, item_id, statement = [line], m["id"], m["statement"]
        elif current is not None and line[:1] in (" ", "\t") and line.strip():
            current.append(line)
        elif current is not None:
            bullets.append(Bullet(item_id, statement, tuple(current)))
            current = None
    if current is not None:
        bullets.append(Bullet(item_id, statement, tuple(current)))
    return Section(start, end, tuple(bullets))


def promoted_statements(text: str) -> dict[str, str]:
    """Item ID -> the statement its bullet holds, from a file's promoted section ({} when it has
    none or its markers are broken: a broken section promotes nothing)."""
    if BEGIN_PREFIX not in text:  # the common case: a file without a promoted section
        return {}
    try:
        section = find_section(text.splitlines())
    except SectionError:
        return {}
    return {} if section is None else {b.item_id: b.statement for b in section.bullets}


def section_bullets(text: str) -> tuple[Bullet, ...]:
    """The bullets of the file's promoted section (raises `SectionError` for broken markers)."""
    section = find_section(text.splitlines())
    return () if section is None else section.bullets


def newline_of(text: str) -> str:
    """The file's line ending ("\\r\\n" when its first line ends so), "\\n" otherwise."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def splice(text: str, bullets: Sequence[Bullet]) -> str:
    """`text` with its promoted section replaced by one holding `bullets` (in order) — or, when it
    has none, with a new section appended after a blank line. Every other line is kept as it was.
    No bullets and no section: `text` unchanged. No bullets and a section: the section is removed."""
    lines = text.splitlines(keepends=True)
    section = find_section(lines)
    if section is None and not bullets:
        return text
    nl = newline_of(text)
    body = [BEGIN, HEADING, ""] + [line for b in bullets for line in b.lines] + [END] if bullets else []
    block = [line + nl for line in body]
    if section is not None:
        after = lines[section.end + 1:]
        before = lines[:section.start]
        if not bullets and before and not before[-1].strip() and (not after or not after[0].strip()):
            before = before[:-1]  # the blank line that set the removed section apart goes with it
        return "".join(before + block + after)
    if not text:
        return "".join(block)
    lead = "" if text.endswith(("\n", "\r")) else nl
    blank = nl if text.strip() else ""
    return text + lead + blank + "".join(block)
