"""The one reader of every JSON file a repository can ship or another process can replace
(contracts §1; issue 28 item 4): review marks, the open audit's drafts, the remembered deep-check
verdicts, and whatever else sits beside a store or in `$AUTOPATCH_HOME`.

- **Opened safely**: `O_NOFOLLOW` (a link is refused, never followed), `O_NONBLOCK` (a FIFO or a
  device never blocks the open), relative to a folder's descriptor when the caller has one; then
  `fstat` of what was opened: anything but a regular file (a folder, a FIFO, a socket, a device) is
  refused before a byte is read; optionally a second hard link too.
- **Bounded in size**: a file over `max_bytes` is refused from its `fstat` size, and at most
  `max_bytes + 1` bytes are ever read (a file growing meanwhile is caught too).
- **Bounded in nesting**: the depth of `[`/`{` outside strings is measured in one linear pass at C
  speed (strings removed by one regular expression, brackets kept by `bytes.translate`) before the
  parser runs, so a deeply nested document is refused with a sentence instead of a `RecursionError`.
- **Typed**: every refusal is a `JsonFileError` whose `reason` is a stable word and whose message
  names the file and says what is wrong in one sentence; a missing file is `None`, not an error."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from itertools import accumulate
from pathlib import Path

from autopatch_tui.core.errors import AutopatchError

MAX_DEPTH = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# the closing quote is optional: an unclosed string swallows the rest in one linear match (with it
# required, each `"` of a long unclosed `\"\"\"…` started a fresh failed scan: quadratic); a valid
# document gives the same result
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}

# reasons
LINK, NOT_REGULAR, HARD_LINK, TOO_LARGE, UNREADABLE, NOT_JSON, TOO_DEEP = (
    "link", "not_regular", "hard_link", "too_large", "unreadable", "not_json", "too_deep")


class JsonFileError(AutopatchError):
    """A JSON file that cannot be used; `reason` is one of the words above, the message one sentence."""

    def __init__(self, path: Path | str, reason: str, why: str) -> None:
        super().__init__(f"{path} {why}")
        self.path = path
        self.reason = reason
        self.why = why


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in `raw` (brackets inside strings not counted)."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    return max(accumulate(_STEP[b] for b in brackets))


def check_nesting(raw: bytes, path: Path | str, max_depth: int = MAX_DEPTH) -> None:
    """`JsonFileError` (TOO_DEEP) when `raw` nests deeper than `max_depth` — before any parser
    (ours or pydantic's) recurses into it."""
    # fewer opening brackets than the bound cannot nest deeper: the usual file costs two counts
    if raw.count(b"[") + raw.count(b"{") > max_depth and nesting_depth(raw) > max_depth:
        raise JsonFileError(path, TOO_DEEP, f"is nested deeper than {max_depth} levels")


def parse(raw: bytes, path: Path | str, *, max_depth: int = MAX_DEPTH) -> object:
    """`raw` as JSON (UTF-8), refused when nested deeper than `max_depth` or not JSON."""
    check_nesting(raw, path, max_depth)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise JsonFileError(path, NOT_JSON, "is not a JSON document") from None


def read_bytes(path: Path | str, *, max_bytes: int, dir_fd: int | None = None, single_link: bool = False,
               shown: Path | str | None = None, follow_links: bool = False) -> bytes | None:
    """The bytes of the regular file `path` (a name relative to `dir_fd` when given), or None when it
    does not exist. `shown` is how the file is named in a message (default: `path`). `follow_links`
    only for a file of the user's own choosing (the settings file), never one beside a store."""
    shown = path if shown is None else shown
    try:
        fd = os.open(path, os.O_RDONLY | (0 if follow_links else _NOFOLLOW) | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise JsonFileError(shown, LINK, "is a symbolic link (never followed)") from None
        if exc.errno == errno.ENOTDIR:
            return None  # a file where a folder on the way should be: there is no such file
        raise JsonFileError(shown, UNREADABLE, f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise JsonFileError(shown, NOT_REGULAR, "is not a regular file")
        if single_link and st.st_nlink > 1:
            raise JsonFileError(shown, HARD_LINK, "has more than one hard link")
        if st.st_size > max_bytes:
            raise JsonFileError(shown, TOO_LARGE, f"is larger than {max_bytes} bytes")
        chunks, left = [], max_bytes + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 20))
            except OSError as exc:
                raise JsonFileError(shown, UNREADABLE,
                                    f"cannot be read ({exc.strerror or type(exc).__name__})") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        raw = b"".join(chunks)
        if len(raw) > max_bytes:
            raise JsonFileError(shown, TOO_LARGE, f"is larger than {max_bytes} bytes")
        return raw
    finally:
        os.close(fd)


def read_json(path: Path | str, *, max_bytes: int, max_depth: int = MAX_DEPTH, dir_fd: int | None = None,
              single_link: bool = False, shown: Path | str | None = None) -> object | None:
    """The parsed document of the file `path` (see `read_bytes`, `parse`); None when there is none."""
    raw = read_bytes(path, max_bytes=max_bytes, dir_fd=dir_fd, single_link=single_link, shown=shown)
    if raw is None:
        return None
    return parse(raw, path if shown is None else shown, max_depth=max_depth)


MAX_COLUMN_DEPTH = 16
_MISSING = object()


def loads_column(text: object, default: object = _MISSING, *, max_depth: int = MAX_COLUMN_DEPTH) -> object:
    """A JSON value stored in a store column. The v4 schema checks only `json_valid` (SQLite accepts
    1000 levels of nesting, which Python's recursive parser may not survive), and a store can come
    from someone else's repository: a value that is not text, not JSON, or nested deeper than
    `max_depth` is `default` — or, without one, a `ValueError`."""
    try:
        if not isinstance(text, str):
            raise ValueError("not a JSON text")
        if text.count("[") + text.count("{") > max_depth and \
                nesting_depth(text.encode("utf-8", "surrogatepass")) > max_depth:
            raise ValueError(f"nested deeper than {max_depth} levels")
        return json.loads(text)
    except (ValueError, RecursionError):
        if default is _MISSING:
            raise ValueError("not a usable JSON value") from None
        return default
