"""Typed model-provider errors.

Every failure of a model call becomes a `ProviderError` with a `category` from the fixed set
below (a subset of `constants.FAILURE_CATEGORIES`) and, when there was an HTTP response, its
status code. The message carries safe structure only — category, HTTP status, exception class
name — never an API key, the endpoint URL, a prompt, a model reply or a provider error body
(contracts §6). Provider bodies are *inspected* (to tell a context overflow from another bad
request) but never copied.
"""

from __future__ import annotations

from collections.abc import Iterable

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai


def _http_layer():  # type: ignore[no-untyped-def]
    """The HTTP layer under the SDK (httpx2 in current releases, httpx in older ones), imported only
    when an error is classified: it is slow to import and commands without a model never need it."""
    try:
        import httpx2 as http
    except ImportError:  # pragma: no cover - depends on the installed SDK generation
        import httpx as http  # type: ignore[no-redef]
    return http

from autopatch_tui.core.errors import AutopatchError

PROVIDER_CATEGORIES: tuple[str, ...] = (
    "transient_provider",
    "rate_limit",
    "auth",
    "bad_request",
    "context_overflow",
    "timeout",
    "no_model",
    "internal",
)
RETRYABLE_PROVIDER_CATEGORIES: tuple[str, ...] = ("transient_provider", "rate_limit", "timeout")

# Lower-cased fragments that, found in a 4xx error's code/type/message, mean "the prompt does not
# fit the model's context window". OpenAI, Azure, vLLM, llama.cpp, Anthropic-compatible proxies…
_CONTEXT_OVERFLOW_MARKERS: tuple[str, ...] = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context_window",
    "context window",
    "exceed_context_size",
    "exceeds the available context size",
    "prompt is too long",
    "input is too long",
    "too many input tokens",
)


class ProviderError(AutopatchError):
    """A model call failed. `category` says how; `status_code` is the HTTP status when known."""

    def __init__(
        self,
        category: str,
        *,
        status_code: int | None = None,
        exc_type: str | None = None,
        message: str | None = None,
    ) -> None:
        if category not in PROVIDER_CATEGORIES:
            raise ValueError(f"unknown provider error category: {category!r}")
        if message is None:
            if status_code is not None:
                where = f" (HTTP {status_code})"
            elif exc_type:
                where = f" ({exc_type})"
            else:
                where = ""
            message = f"model provider error: {category}{where}"
        super().__init__(message)
        self.category = category
        self.status_code = status_code
        self.exc_type = exc_type

    @property
    def retryable(self) -> bool:
        return self.category in RETRYABLE_PROVIDER_CATEGORIES

    def __repr__(self) -> str:
        return f"ProviderError(category={self.category!r}, status_code={self.status_code!r})"


def _texts(value: object, depth: int = 0) -> Iterable[str]:
    """Every string inside a (JSON-like) error body, for marker matching only."""
    if depth > 6:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _texts(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts(item, depth + 1)


def _is_context_overflow(exc: openai.APIError) -> bool:
    parts: list[str] = []
    for attr in ("code", "type", "message"):
        value = getattr(exc, attr, None)
        if isinstance(value, str):
            parts.append(value)
    parts.extend(_texts(getattr(exc, "body", None)))
    haystack = "\n".join(parts).lower()
    return any(marker in haystack for marker in _CONTEXT_OVERFLOW_MARKERS)


def classify_openai_error(exc: BaseException) -> ProviderError:
    """Map an exception raised by the `openai` SDK (or its HTTP layer) to a safe ProviderError.

    The caller should `raise classify_openai_error(exc) from None` so that the SDK exception —
    whose message and body may echo the provider's reply — is not chained into tracebacks.
    """
    name = type(exc).__name__
    # Order matters: APITimeoutError is a subclass of APIConnectionError.
    import openai  # lazily: the SDK is slow to import and only needed with a model

    if isinstance(exc, openai.APITimeoutError):
        return ProviderError("timeout", exc_type=name)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError("transient_provider", exc_type=name)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if isinstance(exc, openai.RateLimitError) or status == 429:
            category = "rate_limit"
        elif isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)) or status in (
            401,
            403,
        ):
            category = "auth"
        elif status == 408:
            category = "timeout"
        elif isinstance(exc, openai.InternalServerError) or status >= 500:
            category = "transient_provider"
        elif _is_context_overflow(exc):
            category = "context_overflow"
        elif 400 <= status < 500:
            category = "bad_request"
        else:  # an APIStatusError outside 4xx/5xx should not exist
            category = "internal"
        return ProviderError(category, status_code=status, exc_type=name)
    if isinstance(exc, openai.APIResponseValidationError):
        return ProviderError("bad_request", status_code=exc.status_code, exc_type=name)
    if isinstance(exc, openai.APIError):
        # No HTTP status: e.g. an error event in the middle of a stream.
        category = "context_overflow" if _is_context_overflow(exc) else "transient_provider"
        return ProviderError(category, exc_type=name)
    # The HTTP layer, should anything slip past the SDK's own wrapping.
    _http = _http_layer()
    if isinstance(exc, _http.TimeoutException):
        return ProviderError("timeout", exc_type=name)
    if isinstance(exc, _http.TransportError):
        return ProviderError("transient_provider", exc_type=name)
    return ProviderError("internal", exc_type=name)
