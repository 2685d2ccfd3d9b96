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
# Lower-cased fragments that, in an HTTP 500 body, mean the server's request validation refused the
# request (llama-cpp-python answers pydantic errors with 500): repeating it cannot help.
_VALIDATION_MARKERS: tuple[str, ...] = (
    "validation error",
    "input should be",
    "field required",
    "extra inputs are not permitted",
    "extra fields not permitted",
    "value is not a valid",
    "none is not an allowed value",
    "request validation",
    "roles must alternate",  # a chat template that refuses the message sequence (e.g. a `tool` role)
    "role not supported",
)
# Request parameters a refusal may name; only these fixed names are ever kept (never the body).
_PARAMETERS: tuple[str, ...] = ("response_format", "json_object", "tool_choice", "tools", "stream_options",
                                "include_usage")


class ProviderError(AutopatchError):
    """A model call failed. `category` says how; `status_code` is the HTTP status when known."""

    def __init__(
        self,
        category: str,
        *,
        status_code: int | None = None,
        exc_type: str | None = None,
        message: str | None = None,
        names: tuple[str, ...] = (),
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
        self.names = names  # request parameters the refusal named (from a fixed list), e.g. "tools"

    def names_any(self, *parameters: str) -> bool:
        """Whether this is a refused request (`bad_request`) that named one of `parameters`."""
        return self.category == "bad_request" and any(p in self.names for p in parameters)

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


def _haystack(exc: openai.APIError) -> str:
    parts: list[str] = []
    for attr in ("code", "type", "message"):
        value = getattr(exc, attr, None)
        if isinstance(value, str):
            parts.append(value)
    parts.extend(_texts(getattr(exc, "body", None)))
    return "\n".join(parts).lower()


def _is_context_overflow(exc: openai.APIError) -> bool:
    haystack = _haystack(exc)
    return any(marker in haystack for marker in _CONTEXT_OVERFLOW_MARKERS)


def _is_validation_error(exc: openai.APIError) -> bool:
    haystack = _haystack(exc)
    return any(marker in haystack for marker in _VALIDATION_MARKERS)


def refused_by_validation(body: bytes) -> bool:
    """Whether an HTTP 500 body says the server's request validation refused the request (so the
    SDK must not send it again). Only inspected, never kept."""
    haystack = body[:65536].decode("utf-8", "replace").lower()
    return any(marker in haystack for marker in _VALIDATION_MARKERS)


def _named_parameters(exc: openai.APIError) -> tuple[str, ...]:
    haystack = _haystack(exc)
    return tuple(p for p in _PARAMETERS if p in haystack)


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
        elif status == 500 and _is_context_overflow(exc):
            category = "context_overflow"
        elif status == 500 and _is_validation_error(exc):
            category = "bad_request"  # the server's schema refused the request: repeating cannot help
        elif isinstance(exc, openai.InternalServerError) or status >= 500:
            category = "transient_provider"
        elif _is_context_overflow(exc):
            category = "context_overflow"
        elif 400 <= status < 500:
            category = "bad_request"
        else:  # an APIStatusError outside 4xx/5xx should not exist
            category = "internal"
        names = _named_parameters(exc) if category == "bad_request" else ()
        return ProviderError(category, status_code=status, exc_type=name, names=names)
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
