"""The marked section of an instruction file that `memory promote` owns (contracts §9).

    <!-- autopatch-tui:memory:begin (written by `autopatch-tui memory promote`) -->
    ## Rules promoted from reviewed Memory

    - Run `make check` before proposing a patch. <!-- memory:mem-01JD… -->
      > “please always run make check before you propose a patch” — 2026-11-03
    <!-- autopatch-tui:memory:end -->

HTML comments are invisible in rendered Markdown, so the markers cost a reader nothing. One
bullet per item: its statement on the bullet line, keyed by the item's logical ID in a comment at
its end, then the user's source quote and its date on a continuation line. Text outside the
section is never changed (its lines are kept byte for byte, line endings included).

Inside the section only the keyed bullets are promote's: a bullet (`-`, `*` or `+`) whose lines
hold a `<!-- memory:ID -->` comment — on the bullet line or on an indented continuation line (a
Markdown formatter may wrap it there) — and the quote lines (`  > …`) right after that comment.
Every other line (a heading, a hand-written note, a teammate's unkeyed bullet, a second paragraph,
a nested list under a bullet) is opaque: kept byte for byte where it is. Pure text functions: no
file or store access here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from autopatch_tui.core.errors import AutopatchError

BEGIN_PREFIX = "<!-- autopatch-tui:memory:begin"
BEGIN = BEGIN_PREFIX + " (written by `autopatch-tui memory promote`) -->"
END = "<!-- autopatch-tui:memory:end -->"
HEADING = "## Rules promoted from reviewed Memory"
MAX_QUOTE_CHARS = 300
# an item's key as written: the logical ID, any character but a letter, digit, "_" or "-" written as
# %XX of its UTF-8 bytes (a merged or hand-edited store's ID may hold anything, "-->" included)
MAX_KEY_CHARS = 512
_ID = r"[A-Za-z0-9%][A-Za-z0-9%_-]{0," + str(MAX_KEY_CHARS - 1) + "}"
# a list item's first line (at most three spaces in, as CommonMark has it) and the ID comment
_ITEM = re.compile(r"^(?P<indent> {0,3})[-*+][ \t]+\S")
_KEY = re.compile(r"[ \t]*<!-- memory:(?P<id>" + _ID + r") -->[ \t]*")
_QUOTE = re.compile(r"^[ \t]+>")
_NESTED = re.compile(r"^[ \t]+[-*+][ \t]")
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
    statement: str  # the bullet's words before its ID comment, on one line (as `one_line` writes them)
    lines: tuple[str, ...]  # promote's lines of the bullet (from its first line through its quote), no endings


@dataclass(frozen=True)
class _Keyed:
    """A keyed bullet found in a section: lines [first, stop) of the file are promote's."""
    bullet: Bullet
    first: int
    stop: int
    depth: int  # spaces before its marker


@dataclass(frozen=True)
class Section:
    start: int  # index of the begin marker's line
    end: int  # index of the end marker's line
    keyed: tuple[_Keyed, ...]  # in file order

    @property
    def bullets(self) -> tuple[Bullet, ...]:
        return tuple(k.bullet for k in self.keyed)


def one_line(text: str) -> str:
    """`text` as one safe Markdown line: whitespace runs (newlines too) become one space, control
    and bidi characters are written as visible escapes, and an HTML comment cannot open or close
    (so no statement or quote can end a marker or fake one)."""
    flat = " ".join(text.split())
    flat = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", flat)
    return flat.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def key_of(item_id: str) -> str | None:
    """The key an item ID is written as in its bullet's comment, or None when it cannot be one (empty,
    or longer than `MAX_KEY_CHARS` once escaped)."""
    key = quote(item_id, safe="-_", encoding="utf-8", errors="surrogatepass").replace(".", "%2E").replace("~", "%7E")
    return key if key and len(key) <= MAX_KEY_CHARS and re.fullmatch(_ID, key) else None


def id_of(key: str) -> str:
    """The item ID a bullet's key names (`key_of` undone)."""
    return unquote(key, encoding="utf-8", errors="surrogatepass") if "%" in key else key


def render_bullet(item_id: str, statement: str, said: str | None, date: str) -> tuple[str, ...]:
    """The bullet of one item. `said`: the user's source quote (None when none is recorded). Raises
    `SectionError` for an ID `key_of` cannot write."""
    key = key_of(item_id)
    if key is None:
        raise SectionError(f"the item's ID is {len(item_id)} characters long; it cannot be written as a key "
                           f"(at most {MAX_KEY_CHARS} once escaped)")
    first = f"- {one_line(statement)} <!-- memory:{key} -->"
    if said is None or not said.strip():
        return first, f"  > (no quote of the user is recorded) — {date}"
    said = one_line(said)
    if len(said) > MAX_QUOTE_CHARS:
        said = said[: MAX_QUOTE_CHARS - 1].rstrip() + "…"
    return first, f"  > “{said}” — {date}"


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def find_section(lines: Sequence[str]) -> Section | None:
    """The promoted section of a file's lines (with or without their endings), or None when the
    file has none. Raises `SectionError` for a begin without an end, repeated markers, or an end
    before the begin: which lines are ours would be a guess, and a guess could eat the user's text."""
    fenced = fenced_lines(lines)
    begins = [i for i, line in enumerate(lines) if i not in fenced and _bare(line).strip().startswith(BEGIN_PREFIX)]
    ends = [i for i, line in enumerate(lines) if i not in fenced and _bare(line).strip() == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise SectionError(f"the file's promoted section has {len(begins)} begin and {len(ends)} end marker(s) "
                           "out of order; fix the autopatch-tui:memory markers by hand")
    start, end = begins[0], ends[0]
    keyed: list[_Keyed] = []
    i = start + 1
    while i < end:
        found = None if i in fenced else _keyed_at(lines, i, end)
        if found is None:
            i += 1
        else:
            keyed.append(found)
            i = found.stop
    return Section(start, end, tuple(keyed))


_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def fenced_lines(lines: Sequence[str]) -> frozenset[int]:
    """The indices of the lines inside a fenced code block, its fences included (CommonMark: a run
    of three or more backticks or tildes, at most three spaces in, closed by a run of the same
    character at least as long with nothing after it; an unclosed fence runs to the end). A marker
    or a bullet shown there as an example is text, not the section."""
    inside: set[int] = set()
    opened: str | None = None
    for i, raw in enumerate(lines):
        m = _FENCE.match(_bare(raw))
        if opened is None:
            if m is not None and not (m["fence"][0] == "`" and "`" in m["info"]):
                opened = m["fence"]
                inside.add(i)
            continue
        inside.add(i)
        if m is not None and m["fence"][0] == opened[0] and len(m["fence"]) >= len(opened) and not m["info"].strip():
            opened = None
    return frozenset(inside)


def _keyed_at(lines: Sequence[str], i: int, end: int) -> _Keyed | None:
    """The keyed bullet starting at line `i`, or None when line `i` starts none. Its item's lines
    are the list item's first line and its continuation lines (indented deeper than its marker,
    not blank) down to the one holding the ID comment, then the quote lines right after it."""
    first = _bare(lines[i])
    m = _ITEM.match(first)
    if m is None:
        return None
    depth = len(m["indent"])
    words: list[str] = []
    j = i
    while True:
        line = _bare(lines[j])
        key = _KEY.search(line)
        text = line if key is None else line[:key.start()]
        words.append(text[m.end() - 1:] if j == i else text)
        if key is not None:
            break
        j += 1
        if j >= end or not _continues(_bare(lines[j]), depth) or _NESTED.match(_bare(lines[j])):
            return None  # no ID comment in the item's own lines (a nested item is its own): not promote's
    if key.end() != len(line) and line[key.end():].strip():
        return None  # words after the comment: somebody else's text around an ID
    stop = j + 1
    while stop < end and _QUOTE.match(_bare(lines[stop])) and _continues(_bare(lines[stop]), depth):
        stop += 1
    bullet = Bullet(id_of(key["id"]), " ".join(" ".join(words).split()), tuple(_bare(x) for x in lines[i:stop]))
    return _Keyed(bullet, i, stop, depth)


def _continues(line: str, depth: int) -> bool:
    """`line` continues a list item whose marker is `depth` spaces in: not blank, indented deeper."""
    if not line.strip():
        return False
    indent = len(line) - len(line.lstrip(" \t"))
    return indent > depth


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
    """`text` with its promoted section holding `bullets` — or, when it has none, with a new
    section appended after a blank line. A keyed bullet already in the section is matched by its
    item ID (in order, for an ID found twice) and rewritten in place, or left byte for byte when its
    words are the same; a keyed bullet not in `bullets` is removed (only its own lines); the
    bullets not there yet are added after the last keyed one (at the section's end when it has
    none). Every other line, inside the section or outside it, is kept as it was. No bullets and no
    section: `text` unchanged. No bullets left and nothing else in the section but its heading:
    the section is removed."""
    lines = text.splitlines(keepends=True)
    section = find_section(lines)
    if section is None and not bullets:
        return text
    nl = newline_of(text)
    if section is None:
        block = "".join(line + nl for line in [BEGIN, HEADING, "", *(x for b in bullets for x in b.lines), END])
        if not text:
            return block
        lead = "" if text.endswith(("\n", "\r")) else nl
        blank = nl if text.strip() else ""
        return text + lead + blank + block
    wanted: dict[str, list[Bullet]] = {}
    for b in bullets:
        wanted.setdefault(b.item_id, []).append(b)
    placed = {k.first: k for k in section.keyed}
    body: list[str] = []
    after_last = None  # where the bullets not there yet go: after the last keyed bullet's lines
    i = section.start + 1
    while i < section.end:
        k = placed.get(i)
        if k is None:
            body.append(lines[i])
            i += 1
            continue
        queue = wanted.get(k.bullet.item_id)
        if queue:
            new = queue.pop(0)
            if _words(new.lines) == _words(k.bullet.lines):
                body += lines[k.first:k.stop]  # the same words: byte for byte (a formatter's marker and wrapping too)
            else:
                body += [line + nl for line in new.lines]
        i = k.stop
        while i < section.end and i not in placed and _continues(_bare(lines[i]), k.depth):
            body.append(lines[i])  # what is nested under the bullet (a note, a sub-list) stays in its place
            i += 1
        after_last = len(body)
    new_ones = {id(b) for queue in wanted.values() for b in queue}
    rest = [line + nl for b in bullets if id(b) in new_ones for line in b.lines]
    if after_last is None:
        after_last = len(body)
    body[after_last:after_last] = rest
    if not bullets and all(not _bare(x).strip() or _bare(x).strip() == HEADING for x in body):
        before, after = lines[:section.start], lines[section.end + 1:]
        if before and not before[-1].strip() and (not after or not after[0].strip()):
            before = before[:-1]  # the blank line that set the removed section apart goes with it
        return "".join(before + after)
    return "".join(lines[:section.start + 1] + body + lines[section.end:])


def _words(lines: Sequence[str]) -> str:
    """A bullet's words, whatever its marker (`-`, `*`, `+`) and wrapping."""
    return " ".join(" ".join([lines[0].lstrip()[1:], *lines[1:]]).split())
