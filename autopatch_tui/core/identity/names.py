"""Stable Memory store names derived from a repository's location.

A store name is `project-` followed by the first 26 Crockford base32 characters (130 bits) of the
SHA-256 of the repository root's canonical location: the big-endian digest read 5 bits at a time
from its most significant bit. The location is the resolved, absolute POSIX path of the root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from autopatch_tui.core.ids import sha256_hex

__all__ = [
    "CROCKFORD_ALPHABET",
    "STORE_NAME_HASH_CHARS",
    "STORE_NAME_PREFIX",
    "canonical_location",
    "is_store_name",
    "store_name_for_location",
]

STORE_NAME_PREFIX = "project-"
STORE_NAME_HASH_CHARS = 26
CROCKFORD_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

_DIGEST_BITS = 256
_STORE_NAME_RE = re.compile(
    re.escape(STORE_NAME_PREFIX) + "[" + CROCKFORD_ALPHABET + "]{" + str(STORE_NAME_HASH_CHARS) + "}"
)


def canonical_location(root: str | os.PathLike[str]) -> str:
    """The resolved (symlinks followed, `..` removed), absolute POSIX form of `root`."""
    return Path(root).resolve().as_posix()


def store_name_for_location(location: str) -> str:
    """`project-` + 26 Crockford base32 chars of SHA-256(UTF-8 `location`).

    `location` should come from `canonical_location`. Lone surrogates produced by the filesystem
    encoding for undecodable path bytes are encoded back to those bytes (`surrogateescape`), which
    is plain UTF-8 for every valid string. Raises TypeError for a non-str, ValueError for "".
    """
    if not isinstance(location, str):
        raise TypeError(f"location must be str, got {type(location).__name__}")
    if not location:
        raise ValueError("location must not be empty")
    digest = bytes.fromhex(sha256_hex(location.encode("utf-8", errors="surrogateescape")))
    bits = STORE_NAME_HASH_CHARS * 5
    value = int.from_bytes(digest, "big") >> (_DIGEST_BITS - bits)
    chars = []
    for shift in range(bits - 5, -1, -5):
        chars.append(CROCKFORD_ALPHABET[(value >> shift) & 31])
    return STORE_NAME_PREFIX + "".join(chars)


def is_store_name(text: str) -> bool:
    """True when `text` is exactly `project-` + 26 upper-case Crockford base32 characters."""
    return isinstance(text, str) and _STORE_NAME_RE.fullmatch(text) is not None
