"""Normalize a git remote URL so the same repository compares equal across clone protocols.

`normalize_remote_url` applies, in this order:

1. strip surrounding whitespace;
2. drop a leading `<scheme>://` -- any RFC 3986 scheme, case-insensitive: `ssh`, `git`, `http`, `https`,
   `git+ssh`, `ssh+git`, `file`, `ftp`, ... -- so the protocol never changes identity;
3. only when there was no scheme: scp-like syntax `[user@]host:path` (a colon before any slash, and not
   a Windows drive such as `C:\\` or `C:/`) becomes `host/path`; a bracketed host (`git@[::1]:x`) keeps
   its brackets and the colon after `]` is the separator;
4. drop userinfo (`user@`, `user:pass@`) from the host part, i.e. everything up to the last `@` before
   the first `/`;
5. trim leading and trailing `/`;
6. drop one trailing `.git` (case-insensitive), then trim trailing `/` again (so `/srv/x/.git`
   equals `/srv/x`);
7. lower-case everything.

Ports are kept (`ssh://git@host:2222/a/b.git` -> `host:2222/a/b`). Local paths are stable too:
`file:///srv/x.git` and `/srv/x.git` both give `srv/x`. Backslashes are left as they are.
"""

from __future__ import annotations

import re

__all__ = ["normalize_remote_url"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:(?:[\\/]|$)")


def _scp_to_path(url: str) -> str | None:
    """`[user@]host:path` -> `[user@]host/path`, or None when `url` is not scp-like."""
    if _WINDOWS_DRIVE.match(url):
        return None
    slash = url.find("/")
    head = url if slash < 0 else url[:slash]
    at = head.rfind("@")
    host_start = at + 1
    if head.startswith("[", host_start):
        close = head.find("]", host_start)
        if close < 0 or not head.startswith(":", close + 1):
            return None
        colon = close + 1
    else:
        colon = head.find(":", host_start)
        if colon < 0:
            return None
    if colon == host_start:  # `:path` or `user@:path` has no host
        return None
    return url[:colon] + "/" + url[colon + 1:]


def _drop_userinfo(url: str) -> str:
    slash = url.find("/")
    head = url if slash < 0 else url[:slash]
    at = head.rfind("@")
    return url if at < 0 else url[at + 1:]


def normalize_remote_url(url: str | None) -> str:
    """A canonical, lower-case `host[:port]/path` form of a git remote URL ("" for None or blank)."""
    if url is None:
        return ""
    text = url.strip()
    if not text:
        return ""
    scheme = _SCHEME.match(text)
    if scheme:
        text = text[scheme.end():]
    else:
        scp = _scp_to_path(text)
        if scp is not None:
            text = scp
    text = _drop_userinfo(text)
    text = text.strip("/")
    if text[-4:].lower() == ".git":
        text = text[:-4].rstrip("/")
    return text.lower()
