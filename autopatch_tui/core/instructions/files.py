"""The instruction files of one request (contracts §9): `AGENTS.md` at the repository root and in
every folder from the root down to the request's scope paths (a closer file comes later, so it
wins), or a root `CLAUDE.md` when the root has no `AGENTS.md`.

Hostile repositories: a folder or file is reached only inside the repository, never under `.git/`
or `.autopatch-j/` (`core.confine`'s names and check; a link is resolved and must stay inside); a
file is read only when it is a regular file (a FIFO or device is never opened for a blocking read,
a folder named `AGENTS.md` is passed over), at most `MAX_BYTES` of it (a huge file is cut, never
read whole), and only as UTF-8 text without NUL bytes (anything else is skipped and named).

At most `MAX_BYTES` in all, measured on the whole rendered block (the files, their frames and the
note on what was left out): a file that applies to more of the request's paths is kept first (the
root's, which applies to all of them, before a crowd of sibling packages'), then the closest, and
a cut says so in the prompt. A caller may set a tighter token bound (a small model's window). Files are read only
until the bound is reached, at most `MAX_READS` per request (a zero-finding review scopes every
scanned file); the rest are left out unread, counted in the note, the first few by name.

A file is opened one path component at a time from the repository's root (`_Dirs`: every
folder `O_NOFOLLOW | O_DIRECTORY` relative to its parent's descriptor, then the file `O_NOFOLLOW`),
along the real path the walk found: a folder swapped for a link between the walk and the read is
refused, never followed out of the repository.

Re-read when a file changes, without a restart: every request stats each candidate (a walk of
about two `lstat`s per folder); a file whose (path, mtime_ns, ctime_ns, size, inode, device) is
unchanged is not read again (`_CACHE`; the ctime sees an in-place edit that kept size and mtime)."""

from __future__ import annotations

import codecs
import errno
import functools
import os
import re
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.confine import ConfinementError, confine, read_regular_head, refused_name
from autopatch_tui.core.instructions.section import promoted_statements
from autopatch_tui.core.llm.tokens import estimate_tokens

AGENTS = "AGENTS.md"
CLAUDE = "CLAUDE.md"
MAX_BYTES = 32 * 1024
MIN_CUT_BYTES = 256  # a file that would keep less than this after a cut is left out instead
CUT_MARKER = "[... cut here: the instruction files exceed their bound ({bound}); the rest of this file is left out ...]"
MAX_DEPTH = 64  # folders walked below the root per scope path
MAX_READS = 64  # instruction files read per request at most; the rest are left out unread
READS_BOUND = f"at most {MAX_READS} files read"
NOTE_NAMES = 5  # left-out files named in the note (the rest are counted)
NOTE_NAME_CHARS = 120
INTRO = ("Project instructions: the repository's instruction files, read from disk for this request, the root's "
         "first. A file closer to the request's files comes later and wins over an earlier one.")
_CACHE_SIZE = 256
SHADOWED = "the root's AGENTS.md is read instead; a root CLAUDE.md is read only when there is no AGENTS.md"
NESTED_CLAUDE = "a CLAUDE.md below the root is not read; an AGENTS.md in its folder would be"
MAX_UNREAD_NAMED = 8  # nested CLAUDE.md files named as not read, at most


@dataclass(frozen=True)
class InstructionFile:
    path: str  # repository-relative, POSIX ("AGENTS.md", "src/net/AGENTS.md")
    text: str  # as it goes into the prompt (cut when `cut`)
    cut: bool = False

    @property
    def folder(self) -> str:
        """The folder the file applies under ("" for the repository root)."""
        return self.path.rpartition("/")[0]

    @functools.cached_property
    def block(self) -> str:
        """The file's block in the prompt."""
        return _block(self)


@dataclass(frozen=True)
class Instructions:
    files: tuple[InstructionFile, ...] = ()  # prompt order: the root first, the closest last
    left_out: tuple[str, ...] = ()  # paths left out for the bound (prompt order)
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why) of files that could not be used
    bound: str = ""  # the bound that cut or left out something, for the prompt's note

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)

    @property
    def cut(self) -> bool:
        return bool(self.left_out) or any(f.cut for f in self.files)

    def render(self) -> str:
        """The system-message block ("" when no file is loaded): at most the bound it was loaded
        under, note included."""
        if not self.files:
            return ""
        parts = [INTRO, *self._blocks]
        if self.left_out:
            parts.append(_note(len(self.left_out), self.left_out[:NOTE_NAMES], self.bound))
        return "\n".join(parts)

    @property
    def _blocks(self) -> list[str]:
        return [f.block for f in self.files]

    def file_tokens(self) -> tuple[tuple[str, int], ...]:
        """(path, estimated tokens of its block in the prompt) per loaded file, in prompt order."""
        return tuple((f.path, estimate_tokens(b)) for f, b in zip(self.files, self._blocks, strict=True))

    def promoted(self) -> dict[str, str]:
        """Item ID -> statement of every bullet in the promoted sections of the loaded text."""
        found: dict[str, str] = {}
        for f in self.files:
            found.update(promoted_statements(f.text))
        return found


def _block(f: InstructionFile) -> str:
    where = "the whole repository" if not f.folder else f"{f.folder}/"
    body = _TAG.sub("&lt;", f.text.rstrip())
    return f'<instructions file="{_attr(f.path)}" applies-to="{_attr(where)}">\n{body}\n</instructions>'


# A path goes into the prompt as one line that cannot open or close a tag: a folder's name may hold
# anything but "/" and NUL (newlines, "<", ">", quotes, line separators, bidi overrides).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# a file's text cannot close its block (nor open a block that would pass for another file's)
_TAG = re.compile(r"<(?=\s*/?\s*instructions)", re.IGNORECASE)


def _attr(text: str) -> str:
    """`text` safe inside a double-quoted attribute: control and bidi characters as visible
    escapes, then "&", "<", ">" and '"' as entities."""
    text = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _note_name(path: str) -> str:
    shown = _attr(path)
    if len(shown) > NOTE_NAME_CHARS:
        shown = shown[: NOTE_NAME_CHARS - 1] + "…"
    return f'"{shown}"'


def _note(count: int, names: Sequence[str], why: str) -> str:
    """The note on the files left out: how many, and the first few by name."""
    named = ", ".join(_note_name(p) for p in names)
    more = count - len(names)
    if named and more:
        named += f" and {more} more"
    return f"({count} instruction file(s) were left out for the bound ({why}){': ' + named if named else ''})"


# --------------------------------------------------------------------------- reading, cached


@dataclass(frozen=True)
class _Read:
    text: str | None  # None: not usable (see `why`)
    truncated: bool = False  # the file is larger than MAX_BYTES: `text` is its head
    why: str = ""


_CACHE: dict[tuple[str, int, int, int, int, int], _Read] = {}
_CACHE_LOCK = threading.Lock()


def _decode(data: bytes, truncated: bool) -> str | None:
    """UTF-8 text (a BOM dropped), or None for invalid UTF-8 or NUL bytes. A cut file may end in
    the middle of a character: that tail is dropped, not refused."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=not truncated)
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    return text.removeprefix("\ufeff")


def _key(real: Path, st: os.stat_result) -> tuple[str, int, int, int, int, int]:
    return str(real), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class _Dirs:
    """Descriptors of the repository's folders for one load, each opened once from its parent's
    descriptor with `O_NOFOLLOW | O_DIRECTORY` (the root's from its resolved path): a folder that
    is a link now fails with ELOOP/ENOTDIR instead of being followed."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.fds: dict[tuple[str, ...], int] = {}

    def fd(self, parts: tuple[str, ...]) -> int:
        found = self.fds.get(parts)
        if found is not None:
            return found
        if parts:
            fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=self.fd(parts[:-1]))
        else:
            fd = os.open(self.repo, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        self.fds[parts] = fd
        return fd

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def _open_read(dirs: _Dirs, real: Path) -> tuple[bytes, int, os.stat_result]:
    """The head of the file at `real` (a link-free path inside the repository), opened one
    component at a time without following a link. Raises `ConfinementError` or `OSError`."""
    dfd = dirs.fd(real.parent.relative_to(dirs.repo).parts)
    opened: list[os.stat_result] = []
    data, size = read_regular_head(real.name, MAX_BYTES, dir_fd=dfd, stat_out=opened)
    return data, size, opened[0]


def _read(real: Path, st: os.stat_result, dirs: _Dirs | None = None) -> _Read:
    key = _key(real, st)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    try:
        if dirs is None:
            data, size = read_regular_head(real, MAX_BYTES)
        else:
            data, size, opened = _open_read(dirs, real)
            key = _key(real, opened)  # what was read (the file may have changed since its lstat)
    except ConfinementError:
        result = _Read(None, why="not a regular file")
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return _Read(None, why="a folder on its path became a link while it was read")
        result = _Read(None, why=f"cannot be read ({type(exc).__name__})")
    else:
        truncated = size > len(data)
        text = _decode(data, truncated)
        result = _Read(text, truncated, "" if text is not None else "not UTF-8 text")
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = result
    return result


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


# --------------------------------------------------------------------------- discovery


def _confined(repo: Path, rel: str) -> Path | None:
    """`confine`'s resolved path, or None for any refusal: a link that leaves the repository or
    leads into `.git/`, a symlink loop, an over-long path, a NUL byte."""
    try:
        return confine(repo, rel)
    except (ConfinementError, OSError, RuntimeError, ValueError):
        return None


def _lstat(path: Path | str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (OSError, ValueError):
        return None


class _Walk:
    """The folders of a request's scope paths, each component `lstat`ed once however many scope
    paths pass through it (a zero-finding review scopes every scanned file)."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.real: dict[str, str | None] = {"": str(repo)}  # folder -> its real path; None: the walk ends there

    def _step(self, parent: str, name: str, part: str) -> str | None:
        here = parent + "/" + part
        st = _lstat(here)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            target = _confined(self.repo, name)
            return str(target) if target is not None and target.is_dir() else None
        return here if stat.S_ISDIR(st.st_mode) else None  # the scope's file: its folders are collected

    def folders(self, scope: str) -> list[str]:
        """The repository-relative folders from below the root down to the folder of `scope` (the
        scope itself when it is a folder). Walked one component at a time with `lstat`; a symlink
        is resolved by `confine` and must stay inside the repository. A refused or missing
        component ends the walk (the folders above it still count)."""
        text = scope.strip()
        if os.sep != "/":  # Windows: either separator; on POSIX a backslash is part of a folder's name
            text = text.replace(os.sep, "/")
        if not text or text.startswith("/"):
            return []
        parts = [p for p in os.path.normpath(text).split("/") if p not in (".", "")]
        if parts and parts[0] == "..":
            return []
        out: list[str] = []
        name = ""
        for part in parts[:MAX_DEPTH]:
            if refused_name(part):
                break
            parent = self.real[name]
            assert parent is not None
            name = f"{name}/{part}" if name else part
            if name not in self.real:
                self.real[name] = self._step(parent, name, part)
            if self.real[name] is None:
                break
            out.append(name)
        return out


def _candidate(repo: Path, folder: str, real_dir: Path, name: str) -> tuple[str, Path, os.stat_result] | None:
    """The file `name` in a folder, when it is there: (display path, real path, its stat). A link
    is followed only when `confine` keeps it inside the repository (and out of `.git/`)."""
    path = real_dir / name
    st = _lstat(path)
    if st is None:
        return None
    shown = f"{folder}/{name}" if folder else name
    if stat.S_ISLNK(st.st_mode):
        target = _confined(repo, path.relative_to(repo).as_posix())
        followed = None if target is None else _lstat(target)
        if target is None or followed is None:
            return shown, path, st  # refused: reported as not usable
        return shown, target, followed
    if stat.S_ISDIR(st.st_mode):
        return None  # a folder named AGENTS.md: nothing to read
    return shown, path, st


def _usable(candidate: tuple[str, Path, os.stat_result], dirs: _Dirs | None = None) -> _Read:
    """The text of a candidate, or why it cannot be used (a link that cannot be followed, not a
    regular file, not readable, not UTF-8)."""
    _, real, st = candidate
    if stat.S_ISLNK(st.st_mode):
        return _Read(None, why="a link that cannot be followed inside the repository")
    if not stat.S_ISREG(st.st_mode):
        return _Read(None, why="not a regular file")
    return _read(real, st, dirs)


def _prompt_key(folder: str) -> tuple[int, str]:
    """The prompt's order: the root first, then shallower first, then by name (a closer file always
    comes after the files above it)."""
    return (folder.count("/") + 1 if folder else 0), folder


def _entries(repo: Path, scope_paths: Sequence[str],
             unread: list[str] | None = None) -> list[tuple[tuple[str, Path, os.stat_result], ...]]:
    """Each folder's instruction file (at the root: `AGENTS.md`, then `CLAUDE.md` in its stead),
    as found by `lstat` (nothing read yet), in the order the bound keeps them (`_keep_key`). A
    `CLAUDE.md` below the root is never read; with `unread`, the first `MAX_UNREAD_NAMED` found are
    added to it (other assistants read them: the user is told this one does not)."""
    walk = _Walk(repo)
    cover: dict[str, int] = {"": 0}  # folder -> how many of the request's scope paths lie under it
    for scope in dict.fromkeys(scope_paths):
        for folder in ("", *walk.folders(scope)):
            cover[folder] = cover.get(folder, 0) + 1
    entries = []
    for folder in sorted(cover, key=lambda f: _keep_key(f, cover[f])):
        real = walk.real[folder]
        assert real is not None
        names = (AGENTS, CLAUDE) if not folder else (AGENTS,)
        found = tuple(c for c in (_candidate(repo, folder, Path(real), n) for n in names) if c is not None)
        if folder and unread is not None and len(unread) < MAX_UNREAD_NAMED and _lstat(Path(real) / CLAUDE):
            unread.append(f"{folder}/{CLAUDE}")
        if found:
            entries.append(found)
    return entries


def _keep_key(folder: str, cover: int) -> tuple[int, int, int, str]:
    """The order the bound keeps files in: the root's first, always (it applies to every request:
    neither a huge vendored file nor a crowd of nested ones may push it out); then a file that
    applies to more of the request's scope paths (a crowd of sibling packages never pushes out a
    shared parent's), then, among files that apply to as many, the closer (deeper) first; then by
    name."""
    return (0 if not folder else 1), -cover, -_prompt_key(folder)[0], folder


# --------------------------------------------------------------------------- the bound


def _kib(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"


def _cost(part: str) -> tuple[int, int]:
    """(bytes, estimated tokens) of a part of the rendered block, with the newline that joins it:
    the estimate of a join is at most the sum of its parts' estimates."""
    return len(part.encode("utf-8")) + 1, estimate_tokens(part) + 1


class _Budget:
    """What is left of the bound, measured on the rendered block (`Instructions.render`)."""

    def __init__(self, max_bytes: int, max_tokens: int | None) -> None:
        intro = _cost(INTRO)
        self.bytes = max_bytes - intro[0]
        self.tokens = None if max_tokens is None else max_tokens - intro[1]

    def fits(self, cost: tuple[int, int], keep: tuple[int, int]) -> bool:
        """`cost` fits with `keep` still left over (room for the note)."""
        return cost[0] + keep[0] <= self.bytes and (self.tokens is None or cost[1] + keep[1] <= self.tokens)

    def spend(self, cost: tuple[int, int]) -> None:
        self.bytes -= cost[0]
        if self.tokens is not None:
            self.tokens -= cost[1]


def _note_room(shown: Sequence[str], why: Sequence[str]) -> tuple[int, int]:
    """At most what the note can cost whichever files end up left out: its words with the largest
    count and reason, and the names of the longest `NOTE_NAMES` of `shown`."""
    names = [_cost(_note_name(p)) for p in shown]
    top_bytes = sum(sorted((c[0] for c in names), reverse=True)[:NOTE_NAMES])
    top_tokens = sum(sorted((c[1] for c in names), reverse=True)[:NOTE_NAMES])
    words = max((_cost(_note(len(shown), [], w)) for w in why), key=lambda c: c[0] + c[1])
    return words[0] + top_bytes + 2, words[1] + top_tokens + 2


def _head(text: str, max_bytes: int, max_tokens: int | None, marker: str) -> str | None:
    """The longest head of `text`, in whole lines where possible, that with `marker` fits both bounds."""
    room_bytes = max_bytes - len(marker.encode("utf-8")) - 1
    room_tokens = None if max_tokens is None else max_tokens - estimate_tokens(marker) - 1
    if room_bytes < MIN_CUT_BYTES or (room_tokens is not None and room_tokens * 4 < MIN_CUT_BYTES):
        return None
    head = text.encode("utf-8")[:room_bytes].decode("utf-8", errors="ignore")
    while room_tokens is not None and head and estimate_tokens(head) > room_tokens:
        head = head[: max(0, len(head) - max(64, len(head) // 8))]
    cut = head.rfind("\n")
    if cut >= len(head) // 2:
        head = head[:cut]
    if len(head.encode("utf-8")) < MIN_CUT_BYTES:
        return None
    return head.rstrip() + "\n" + marker


def _fit(path: str, text: str, budget: _Budget, keep: tuple[int, int], marker: str) -> InstructionFile | None:
    """The file cut to what is left of the budget (less `keep`), or None when too little would stay."""
    frame = _cost(InstructionFile(path, "").block)
    room_bytes = budget.bytes - keep[0] - frame[0]
    room_tokens = None if budget.tokens is None else budget.tokens - keep[1] - frame[1]
    for _ in range(8):  # a tag escaped in the text makes the block longer than its head
        head = _head(text, room_bytes, room_tokens, marker)
        if head is None:
            return None
        cut = InstructionFile(path, head, cut=True)
        cost = _cost(cut.block)
        if budget.fits(cost, keep):
            return cut
        room_bytes -= max(0, cost[0] + keep[0] - budget.bytes) + 64
        if room_tokens is not None and budget.tokens is not None:
            room_tokens -= max(0, cost[1] + keep[1] - budget.tokens) + 16
    return None


def load_instructions(repo: Path, scope_paths: Sequence[str] = (), *, max_tokens: int | None = None,
                      max_bytes: int = MAX_BYTES) -> Instructions:
    """The instruction files of a request, bounded: their whole prompt block (`render`: the files,
    their frames and the note naming what was left out) is at most `max_bytes` (and `max_tokens`
    estimated tokens, when given). Files are taken in `_entries`' order and read only until the
    bound is reached, at most `MAX_READS` of them; the rest are left out unread, and counted."""
    repo = repo.resolve()
    bound = _kib(max_bytes) if max_tokens is None else f"{_kib(max_bytes)} or {max_tokens} tokens"
    marker = CUT_MARKER.format(bound=bound)
    nested_claude: list[str] = []
    entries = _entries(repo, scope_paths, nested_claude)
    budget = _Budget(max_bytes, max_tokens)
    note = _note_room([e[0][0] for e in entries], (bound, READS_BOUND))
    kept: list[InstructionFile] = []
    left_out: list[str] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()
    why = ""  # what stopped the reading: everything after it is left out unread
    reads = 0
    dirs = _Dirs(repo)
    try:
        for i, entry in enumerate(entries):
            if not why and reads >= MAX_READS:
                why = READS_BOUND
            if why:
                left_out.append(entry[0][0])
                continue
            text = None
            for n, (shown, real, st) in enumerate(entry):  # the root's CLAUDE.md only without a usable AGENTS.md
                if str(real) in seen:  # a link to a file already read
                    break
                read = _usable((shown, real, st), dirs)
                reads += 1
                if read.text is None:
                    skipped.append((shown, read.why))
                elif read.text.strip():
                    seen.add(str(real))
                    text = read.text
                    skipped += [(other[0], SHADOWED) for other in entry[n + 1:] if str(other[1]) not in seen]
                    break
            if text is None:
                continue
            whole = InstructionFile(shown, text)
            keep = note if i < len(entries) - 1 else (0, 0)  # room for the note while anything may be left out
            if not read.truncated and budget.fits(_cost(whole.block), keep):
                kept.append(whole)
                budget.spend(_cost(whole.block))
                continue
            why = bound
            cut = _fit(shown, text, budget, keep, marker)
            if cut is None:
                left_out.append(shown)
            else:
                kept.append(cut)
                budget.spend(_cost(cut.block))
    finally:
        dirs.close()
    skipped += [(p, NESTED_CLAUDE) for p in sorted(nested_claude, key=lambda p: _prompt_key(p.rpartition("/")[0]))]
    kept.sort(key=lambda f: _prompt_key(f.folder))
    left_out.sort(key=lambda p: _prompt_key(p.rpartition("/")[0]))
    cut_any = bool(left_out) or any(f.cut for f in kept)
    return Instructions(tuple(kept), tuple(left_out), tuple(skipped), why if cut_any else "")
