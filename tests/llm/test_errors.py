"""classify_openai_error on SDK exceptions built directly (no HTTP), and ProviderError itself."""

from __future__ import annotations

import subprocess
import sys

import openai
import pytest

from autopatch_tui.core.constants import FAILURE_CATEGORIES, RETRYABLE_CATEGORIES
from autopatch_tui.core.errors import AutopatchError
from autopatch_tui.core.llm.errors import (
    PROVIDER_CATEGORIES,
    RETRYABLE_PROVIDER_CATEGORIES,
    ProviderError,
    classify_openai_error,
)

try:
    import httpx2 as http
except ImportError:  # pragma: no cover
    import httpx as http  # type: ignore[no-redef]

MARKER = "BODY-MARKER-d15c"
_REQUEST = http.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def _status_error(cls: type[openai.APIStatusError], status: int, body: object) -> openai.APIStatusError:
    response = http.Response(status, request=_REQUEST)
    return cls(f"Error code: {status} - {body}", response=response, body=body)


def test_categories_are_failure_categories():
    assert set(PROVIDER_CATEGORIES) <= set(FAILURE_CATEGORIES)
    assert set(RETRYABLE_PROVIDER_CATEGORIES) <= set(RETRYABLE_CATEGORIES)


def test_provider_error_shape():
    err = ProviderError("rate_limit", status_code=429)
    assert isinstance(err, AutopatchError)
    assert str(err) == "model provider error: rate_limit (HTTP 429)"
    assert err.retryable is True
    assert ProviderError("auth", status_code=401).retryable is False
    assert ProviderError("timeout", exc_type="APITimeoutError").retryable is True
    assert str(ProviderError("timeout", exc_type="APITimeoutError")) == "model provider error: timeout (APITimeoutError)"
    assert str(ProviderError("no_model")) == "model provider error: no_model"
    with pytest.raises(ValueError):
        ProviderError("sqlite_lock")


@pytest.mark.parametrize(
    ("exc", "category", "status"),
    [
        (openai.APITimeoutError(request=_REQUEST), "timeout", None),
        (openai.APIConnectionError(request=_REQUEST), "transient_provider", None),
        (_status_error(openai.RateLimitError, 429, {"message": MARKER}), "rate_limit", 429),
        (_status_error(openai.AuthenticationError, 401, {"message": MARKER}), "auth", 401),
        (_status_error(openai.PermissionDeniedError, 403, {"message": MARKER}), "auth", 403),
        (_status_error(openai.InternalServerError, 500, {"message": MARKER}), "transient_provider", 500),
        (_status_error(openai.InternalServerError, 502, MARKER), "transient_provider", 502),
        (_status_error(openai.APIStatusError, 504, None), "transient_provider", 504),
        (_status_error(openai.APIStatusError, 408, None), "timeout", 408),
        (
            _status_error(openai.BadRequestError, 400, {"message": MARKER, "code": "context_length_exceeded"}),
            "context_overflow",
            400,
        ),
        (
            _status_error(
                openai.BadRequestError,
                400,
                {"message": f"This model's maximum context length is 4097 tokens {MARKER}", "code": None},
            ),
            "context_overflow",
            400,
        ),
        (
            _status_error(openai.BadRequestError, 400, {"message": MARKER, "code": "invalid_value"}),
            "bad_request",
            400,
        ),
        (_status_error(openai.UnprocessableEntityError, 422, {"message": MARKER}), "bad_request", 422),
        (_status_error(openai.NotFoundError, 404, {"message": MARKER}), "bad_request", 404),
        (openai.APIError(f"stream failed {MARKER}", _REQUEST, body={"message": MARKER}), "transient_provider", None),
        (
            openai.APIError("stream failed", _REQUEST, body={"code": "context_length_exceeded"}),
            "context_overflow",
            None,
        ),
        (http.ReadTimeout(MARKER, request=_REQUEST), "timeout", None),
        (http.ConnectError(MARKER, request=_REQUEST), "transient_provider", None),
        (RuntimeError(MARKER), "internal", None),
    ],
)
def test_classify(exc, category, status):
    err = classify_openai_error(exc)
    assert err.category == category
    assert err.status_code == status
    assert MARKER not in str(err)
    assert "127.0.0.1" not in str(err)
    assert err.exc_type == type(exc).__name__
    if status is None:
        assert type(exc).__name__ in str(err)


def test_llm_modules_do_not_import_textual():
    code = (
        "import sys\n"
        "import autopatch_tui.core.llm.client, autopatch_tui.core.llm.errors, autopatch_tui.core.llm.tokens\n"
        "import autopatch_tui.core.llm.profiles, autopatch_tui.core.llm.json_reply\n"
        "print('textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"
