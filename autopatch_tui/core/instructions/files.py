"""The instruction files of one request (contracts §9): `AGENTS.md` at the repository root and in
every folder from the root down to the request's scope paths (a closer file comes later, so it
wins), or a root `CLAUDE.md` when the root has no `AGENTS.md`.

Hostile repositories: a folder or file is reached only inside the repository, never under `.git/`
or `.autopatch-j/` (`core.confine`'s names and check; a link is resolved and must stay inside); a
file is read only when it is a regular file (a FIFO or device is never opened for a blocking read,
a folder named `AGENTS.md` is passed over), at most `MAX_BYTES` of it (a huge file is cut, never
read whole), and only as UTF-8 text without NUL bytes (anything else is skipped and named).

At most `MAX_BYTES` in all: the files closest to the scope are kept first, and a cut says so in
the prompt. A caller may set a tighter token bound (a small model's window).

Re-read when a file changes, without a restart: every request stats each candidate (a walk of
about two `lstat`s per folder); a file whose (path, mtime_ns, size, inode, device) is unchanged
is not read again (`_CACHE`)."""

from __future__ import annotations

import codecs
import functools
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
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
_CACHE_SIZE = 256


@dataclass(frozen=True)
class InstructionFile:
    path: str  # repository-relative, POSIX ("AGENTS.md", "src/net/AGENTS.md")
    text: str  # as it goes into the prompt (cut when `cut`)
    cut: bool = False

    @property
    def folder(self) -> str:
        """The folder the file applies under ("" for the repository root)."""
        return self.path.rpartition("/")[0]


@dataclass(frozen=True)
class Instructions:
    files: tuple[InstructionFile, ...] = ()  # prompt order: the root first, the closest last
    left_out: tuple[str, ...] = ()  # paths left out for the bound
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why) of files that could not be used
    bound: str = ""  # the bound that cut or left out something, for the prompt's note

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)

    @property
    def cut(self) -> bool:
        return bool(self.left_out) or any(f.cut for f in self.files)

    def render(self) -> str:
        """The system-message block ("" when no file is loaded)."""
        if not self.files:
            return ""
        parts = ["Project instructions: the repository's instruction files, read from disk for this request, "
                 "the root's first. A file closer to the request's files comes later and wins over an earlier one."]
        parts += self._blocks
        if self.left_out:
            parts.append(f"({len(self.left_out)} instruction file(s) farther from the request's files were left out "
                         f"for the bound ({self.bound}): {', '.join(self.left_out)})")
        return "\n".join(parts)

    @functools.cached_property
    def _blocks(self) -> list[str]:
        return [_block(f) for f in self.files]

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
    return f'<instructions file="{_attr(f.path)}" applies-to="{_attr(where)}">\n{f.text.rstrip()}\n</instructions>'


def _attr(text: str) -> str:
    return text.replace('"', "'").replace("\n", " ")


# --------------------------------------------------------------------------- reading, cached


@dataclass(frozen=True)
class _Read:
    text: str | None  # None: not usable (see `why`)
    truncated: bool = False  # the file is larger than MAX_BYTES: `text` is its head
    why: str = ""


_CACHE: dict[tuple[str, int, int, int, int], _Read] = {}
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


def _read(real: Path, st: os.stat_result) -> _Read:
    key = (str(real), st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    try:
        data, size = read_regular_head(real, MAX_BYTES)
    except ConfinementError:
        result = _Read(None, why="not a regular file")
    except OSError as exc:
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


def _folders(repo: Path, scope: str) -> list[tuple[str, Path]]:
    """(repository-relative folder, its real path) from below the root down to the folder of `scope`
    (the scope itself when it is a folder). Walked one component at a time with `lstat`; a symlink
    is resolved by `confine` and must stay inside the repository. A refused or missing component
    ends the walk (the folders above it still count)."""
    text = scope.strip().replace("\\", "/")
    if not text or text.startswith("/"):
        return []
    parts = [p for p in os.path.normpath(text).split("/") if p not in (".", "")]
    if parts and parts[0] == "..":
        return []
    out: list[tuple[str, Path]] = []
    real = str(repo)
    name = ""
    for part in parts[:MAX_DEPTH]:
        if refused_name(part):
            break
        here = real + "/" + part
        st = _lstat(here)
        if st is None:
            break
        name = f"{name}/{part}" if name else part
        if stat.S_ISLNK(st.st_mode):
            target = _confined(repo, name)
            if target is None or not target.is_dir():
                break
            real = str(target)
        elif stat.S_ISDIR(st.st_mode):
            real = here
        else:
            break  # the scope's file: its folders are collected
        out.append((name, Path(real)))
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
    return shown, path, st


@dataclass
class _Found:
    files: list[tuple[str, str, bool]] = field(default_factory=list)  # (display path, text, cut at read), root first
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _load(found: _Found, seen: set[str], candidate: tuple[str, Path, os.stat_result] | None) -> bool:
    """Add one candidate's text; True when it was usable (a text with something in it)."""
    if candidate is None:
        return False
    shown, real, st = candidate
    if stat.S_ISLNK(st.st_mode):
        found.skipped.append((shown, "a link that cannot be followed inside the repository"))
        return False
    if stat.S_ISDIR(st.st_mode):
        return False  # a folder named AGENTS.md: nothing to read
    if not stat.S_ISREG(st.st_mode):
        found.skipped.append((shown, "not a regular file"))
        return False
    key = str(real)
    if key in seen:
        return True
    read = _read(real, st)
    if read.text is None:
        found.skipped.append((shown, read.why))
        return False
    if not read.text.strip():
        return False
    seen.add(key)
    found.files.append((shown, read.text, read.truncated))
    return True


def discover(repo: Path, scope_paths: Sequence[str] = ()) -> _Found:
    """Every usable instruction file of a request, root first, closest last (not yet bounded)."""
    repo = repo.resolve()
    found = _Found()
    seen: set[str] = set()
    if not _load(found, seen, _candidate(repo, "", repo, AGENTS)):
        _load(found, seen, _candidate(repo, "", repo, CLAUDE))
    folders: dict[str, Path] = {}
    for scope in scope_paths:
        for folder, real in _folders(repo, scope):
            folders.setdefault(folder, real)
    # shallower first, then by name: a closer file always comes after the files above it
    for folder in sorted(folders, key=lambda f: (f.count("/"), f)):
        _load(found, seen, _candidate(repo, folder, folders[folder], AGENTS))
    return found


# --------------------------------------------------------------------------- the bound


def _kib(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"


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


def load_instructions(repo: Path, scope_paths: Sequence[str] = (), *, max_tokens: int | None = None,
                      max_bytes: int = MAX_BYTES) -> Instructions:
    """The instruction files of a request, bounded: at most `max_bytes` of text (and `max_tokens`
    estimated tokens, when given) in all, the files closest to the scope kept first."""
    found = discover(repo, scope_paths)
    bound = _kib(max_bytes) if max_tokens is None else f"{_kib(max_bytes)} or {max_tokens} tokens"
    kept: list[InstructionFile] = []
    left_out: list[str] = []
    used_bytes = used_tokens = 0
    for shown, text, truncated in reversed(found.files):  # closest first
        if left_out or (kept and kept[-1].cut):  # past a cut: everything farther is left out
            left_out.append(shown)
            continue
        size, tokens = len(text.encode("utf-8")), estimate_tokens(text)
        fits = used_bytes + size <= max_bytes and (max_tokens is None or used_tokens + tokens <= max_tokens)
        if not truncated and fits:
            kept.append(InstructionFile(shown, text))
            used_bytes += size
            used_tokens += tokens
            continue
        head = _head(text, max_bytes - used_bytes,
                     None if max_tokens is None else max_tokens - used_tokens, CUT_MARKER.format(bound=bound))
        if head is None:
            left_out.append(shown)
        else:
            kept.append(InstructionFile(shown, head, cut=True))
    cut = bool(left_out) or any(f.cut for f in kept)
    return Instructions(tuple(reversed(kept)), tuple(reversed(left_out)), tuple(found.skipped), bound if cut else "")
