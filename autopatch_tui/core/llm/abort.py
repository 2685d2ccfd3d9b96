"""Abandoning a running model request from another thread, at once (Escape in the app, issue 30
item 5): also while the request waits for the model's first token, when no callback runs to notice.

A request runs on one thread. `AbortScope.active()` marks that thread's requests; every network
stream the model client opens or uses on it (`AbortableBackend`, installed in the client's HTTP
pool) registers with the scope while it reads or writes. `abort()`, from any thread, shuts the
scope's sockets down: the blocked read wakes at once, the connection is closed (the server sees the
request abandoned) and the read raises `RequestAborted` on the request's thread. It is a
BaseException on purpose: the SDK's retry loop retries any Exception and would send the request
again; the HTTP stack closes the connection and re-raises it untouched. The model client turns it
into `RequestCancelled` (a typed error), which ends the turn `failed` like any other error."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from autopatch_tui.core.errors import AutopatchError

_local = threading.local()


class RequestAborted(BaseException):  # noqa: N818 - a control-flow signal, like KeyboardInterrupt
    """The request's scope was aborted (raised inside the HTTP stack on the request's thread)."""


class RequestCancelled(AutopatchError):
    """The user cancelled the running request (Escape)."""

    def __init__(self) -> None:
        super().__init__("cancelled by you (Escape)")


class AbortScope:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._aborted = False
        self._streams: set[Any] = set()

    @property
    def aborted(self) -> bool:
        return self._aborted

    @contextmanager
    def active(self) -> Iterator[AbortScope]:
        """The calling thread's model requests belong to this scope while the block runs."""
        previous = getattr(_local, "scope", None)
        _local.scope = self
        try:
            yield self
        finally:
            _local.scope = previous

    def abort(self) -> None:
        """Abandon the scope's requests now (any thread): their sockets are shut down."""
        with self._lock:
            self._aborted = True
            streams = list(self._streams)
        for stream in streams:
            _shut(stream)

    def _enter(self, stream: Any) -> None:
        with self._lock:
            if self._aborted:
                raise RequestAborted()
            self._streams.add(stream)

    def _leave(self, stream: Any) -> None:
        with self._lock:
            self._streams.discard(stream)


def current_scope() -> AbortScope | None:
    return getattr(_local, "scope", None)


def _shut(stream: Any) -> None:
    sock = stream.get_extra_info("socket")
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed: nothing left to abandon


def _io(stream: Any, call: Any, *args: Any) -> Any:
    scope = current_scope()
    if scope is None:
        return call(*args)
    scope._enter(stream)  # noqa: SLF001 - the scope and its streams are one concept
    try:
        result = call(*args)
    except Exception:
        if scope.aborted:
            raise RequestAborted() from None
        raise
    finally:
        scope._leave(stream)  # noqa: SLF001
    if scope.aborted:  # a read woken by the shutdown returns b"" (end of stream)
        raise RequestAborted()
    return result


def abortable_backend(base: Any) -> Any:
    """A network backend (httpcore2) whose streams obey the calling thread's scope."""
    from httpcore2 import NetworkBackend, NetworkStream

    class AbortableStream(NetworkStream):
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return _io(self._inner, self._inner.read, max_bytes, timeout)

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            _io(self._inner, self._inner.write, buffer, timeout)

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            return AbortableStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class AbortableBackend(NetworkBackend):
        def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
            scope = current_scope()
            if scope is not None and scope.aborted:
                raise RequestAborted()
            return AbortableStream(base.connect_tcp(*args, **kwargs))

        def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            return AbortableStream(base.connect_unix_socket(*args, **kwargs))

        def sleep(self, seconds: float) -> None:
            base.sleep(seconds)

    return AbortableBackend()


def abortable_transport(**kwargs: Any) -> Any:
    """An httpx2 transport (the SDK's) whose requests a scope can abort. It reaches into the pool
    for its network backend (httpx2 takes none); `tests/core/test_abort.py` fails if that breaks."""
    import httpx2

    transport = httpx2.HTTPTransport(**kwargs)
    pool = transport._pool  # noqa: SLF001
    if hasattr(pool, "_network_backend"):
        pool._network_backend = abortable_backend(pool._network_backend)  # noqa: SLF001
    return transport
