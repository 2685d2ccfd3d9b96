"""Text from a store, a model, a repository or a label, made safe to show on a terminal.

A terminal obeys control characters: an ESC sequence in an item's statement, a store label or a
model's answer could retitle the window, clear the screen or hide text, and a carriage return or
a bidirectional override makes a line read differently from what it holds. Such characters are
shown as visible escapes (`\\x1b`, `\\u202e`) instead; newlines (and tabs) are kept where a text
has lines. Plain text without them comes back as the same object (one C-level scan)."""

from __future__ import annotations

import errno
import re

# C0 controls except tab and newline, DEL, C1 controls, and the bidirectional embeddings,
# overrides and isolates ("Trojan Source"): what a terminal would act on or reorder
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_MULTI_LINE = re.compile(f"[{_CONTROLS}]")
_ONE_LINE = re.compile(f"[{_CONTROLS}\t\n]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character shown as an escape. `one_line`: newlines and tabs too
    (a table cell, a label, one line of a list)."""
    return (_ONE_LINE if one_line else _MULTI_LINE).sub(_visible, text)


def printable(text: str) -> str:
    """`text` with every unsafe character escaped; newlines and tabs stay (`escape_controls`)."""
    return _MULTI_LINE.sub(_visible, text)


def one_line(text: str) -> str:
    """`text` on one line: runs of whitespace become one space, unsafe characters are escaped."""
    return _ONE_LINE.sub(_visible, " ".join(text.split()))


def has_controls(text: str, *, one_line: bool = True) -> bool:
    """Whether `text` holds a character `escape_controls` would escape."""
    return (_ONE_LINE if one_line else _MULTI_LINE).search(text) is not None


def json_text(document: str) -> str:
    """A serialized JSON document with the controls JSON leaves raw (DEL, C1, bidirectional
    controls; `json.dumps` escapes only C0) written as `\\uXXXX` escapes: the same JSON value."""
    return re.sub("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]", lambda m: f"\\u{ord(m.group()):04x}", document)


PLAIN_OS_ERRORS = {
    errno.ENOENT: "no such file or folder",
    errno.EACCES: "permission denied",
    errno.EPERM: "not permitted",
    errno.EEXIST: "it already exists",
    errno.EISDIR: "it is a folder",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "no space left on the device",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "too many symbolic links",
    errno.EINVAL: "the path is not valid here",
}


def plain_os_error(exc: BaseException) -> str:
    """A file error in words for people ("no such file or folder"), never an exception's class
    name; an unknown one is its lower-cased system message, or "a file error"."""
    if isinstance(exc, OSError):
        words = PLAIN_OS_ERRORS.get(exc.errno or -1)
        if words:
            return words
        if exc.strerror:
            return exc.strerror[:1].lower() + exc.strerror[1:]
    if isinstance(exc, ValueError):  # e.g. a NUL byte in a path
        return "the path is not valid"
    return "a file error"


def sqlite_words(exc: BaseException) -> str:
    """A SQLite error in words for people (its result code's meaning), never its class name nor
    its message (which may quote SQL or data)."""
    code = getattr(exc, "sqlite_errorname", "") or ""
    return {
        "SQLITE_BUSY": "the store is busy (another process is writing it); try again",
        "SQLITE_LOCKED": "the store is locked; try again",
        "SQLITE_READONLY": "the store file is read-only",
        "SQLITE_CANTOPEN": "the store file cannot be opened",
        "SQLITE_FULL": "the disk is full",
        "SQLITE_IOERR": "the store file could not be read or written",
        "SQLITE_CORRUPT": "the store file is damaged",
        "SQLITE_NOTADB": "the file is not a store",
        "SQLITE_PERM": "permission denied",
    }.get("_".join(code.split("_")[:2]), "a database error")  # SQLITE_IOERR_WRITE -> SQLITE_IOERR
