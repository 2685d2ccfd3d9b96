"""A one-line explanation of a model call that could not reach the endpoint, for people:
"cannot reach the model at 127.0.0.1:11434 (connection refused)".

The endpoint's host and port are named only when the host is loopback (127.0.0.0/8, ::1,
localhost): a private endpoint is never shown (contracts §6), the text names the setting instead —
"cannot reach the model at the configured endpoint (AUTOPATCH_LLM_BASE_URL) (connection refused)".
Never its path, query, user info or the API key; the reason comes from the type of the underlying OS/network error, never from its message.
(`classify_openai_error` raises `from None`, which hides the chain from tracebacks but keeps the
original exception as `__context__`: that is what is inspected here.)"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from urllib.parse import urlsplit

from autopatch_tui.core.llm.errors import ProviderError

CONNECTION_TYPES = ("APIConnectionError", "ConnectError", "ConnectTimeout", "RemoteProtocolError", "ReadError")
TIMEOUT_TYPES = ("APITimeoutError", "ReadTimeout", "ConnectTimeout", "TimeoutException", "WriteTimeout")


def host_port(base_url: str | None) -> str | None:
    """`http://user:k@host:8080/v1?x` → `host:8080` (the scheme's port when none is given)."""
    if not base_url:
        return None
    try:
        parts = urlsplit(base_url.strip())
        host = parts.hostname
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme.lower())
    except ValueError:
        return None
    if not host:
        return None
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port else host


CONFIGURED = "the configured endpoint (AUTOPATCH_LLM_BASE_URL)"


def is_loopback(base_url: str | None) -> bool:
    """True for a base URL whose host is 127.0.0.0/8, ::1 or localhost."""
    try:
        host = urlsplit((base_url or "").strip()).hostname
    except ValueError:
        return False
    if not host:
        return False
    host = host.rstrip(".").casefold()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def shown_endpoint(base_url: str | None) -> str | None:
    """What a message may say about the endpoint: `host:port` when loopback, else the setting's name
    (None when no base URL is configured)."""
    where = host_port(base_url)
    if where is None:
        return None
    return where if is_loopback(base_url) else CONFIGURED


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < 12:
        e = todo.pop(0)
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        todo += [e.__cause__, e.__context__]
    return seen


def _reason(exc: BaseException) -> str:
    for e in _chain(exc):
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return "host not found"
        if isinstance(e, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(e, ConnectionResetError):
            return "connection reset"
        if isinstance(e, TimeoutError) or type(e).__name__ in TIMEOUT_TYPES:
            return "no answer in time"
        if isinstance(e, OSError) and getattr(e, "errno", None) is not None:
            return "network error"
    return "no connection"


def unreachable_text(exc: BaseException, base_url: str | None) -> str | None:
    """The explanation when `exc` is a model call that did not reach the endpoint; otherwise None."""
    if not isinstance(exc, ProviderError):
        return None
    if exc.status_code is not None or exc.exc_type not in (*CONNECTION_TYPES, *TIMEOUT_TYPES):
        return None
    where = shown_endpoint(base_url)
    reason = _reason(exc)
    if exc.category == "timeout" and reason == "no connection":
        reason = "no answer in time"
    return f"cannot reach the model at {where} ({reason})" if where else f"cannot reach the model ({reason})"
