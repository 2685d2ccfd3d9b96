"""Sortable unique IDs (ULID layout: 48-bit ms time + 80 random bits, Crockford base32)."""

from __future__ import annotations

import os
import time

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def encode_base32(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_ulid(now: float | None = None) -> str:
    ms = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    return encode_base32((ms << 80) | rand, 26)


def new_id(prefix: str) -> str:
    """`prefix` + '-' + ULID, e.g. `thr-01JD...`. Item logical IDs use prefix `mem`."""
    return f"{prefix}-{new_ulid()}"


def sha256_hex(data: bytes) -> str:
    """SHA-256 of `data` in hex, without `hashlib` (which loads OpenSSL first: a cost every command
    paid for one digest)."""
    try:
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - an interpreter without its own SHA-256
        from hashlib import sha256
    return sha256(data).hexdigest()


MAX_ID_CHARS = 64  # our IDs are a prefix and a 26-character ULID; store names are `project-` + one


def id_problem(text: str) -> str | None:
    """Why `text` cannot be an ID (or a prefix of one) a user typed, or None. Never echoes it."""
    value = text.strip()
    if not value:
        return "an ID is required"
    if len(value) > MAX_ID_CHARS:
        return f"an ID is at most {MAX_ID_CHARS} characters (this one has {len(value)})"
    if not value.isprintable():
        return "an ID has no control characters"
    return None
