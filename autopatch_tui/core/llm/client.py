"""The one place that talks to the model provider (any OpenAI-compatible endpoint).

Every request carries `X-AutoPatch-Task: <task>` so a provider log (or the test stub) can tell
chat turns from Memory jobs. Every SDK failure becomes a `ProviderError` raised `from None`, so
the provider's error body never reaches a traceback shown to the user.

`LLMClient` is safe to share between threads: it holds no per-call state and the SDK client
(one HTTP connection pool) is thread-safe.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any


from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.llm.abort import RequestAborted, RequestCancelled
from autopatch_tui.core.llm.endpoint import check_mode
from autopatch_tui.core.llm.errors import ProviderError, classify_openai_error, refused_by_validation
from autopatch_tui.core.llm.shapes import strict_messages

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from autopatch_tui.core.settings import Settings

TASKS: tuple[str, ...] = (
    "chat",
    "classify",
    "extraction",
    "extraction_repair",
    "consolidation",
    "consolidation_repair",
    "merge_judge",
    "organize",
    "compaction",
)
TASK_HEADER = "X-AutoPatch-Task"
_PLACEHOLDER_KEY = "not-needed"


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Completion:
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: Usage | None


def _no_choices() -> ProviderError:
    return ProviderError("bad_request", message="model reply had no choices")


def _malformed(what: str) -> ProviderError:
    return ProviderError("bad_request", message=f"model reply was malformed: {what}")


def _usage_of(raw: object) -> Usage | None:
    if raw is None:
        return None
    prompt = getattr(raw, "prompt_tokens", None)
    completion = getattr(raw, "completion_tokens", None)
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion)


def _str_or_empty(value: object) -> str:
    return value if isinstance(value, str) else ""


def _no_retry_of_refusals(response: Any) -> None:
    """httpx response hook: a 500 whose body is a request-validation error (llama-cpp-python answers
    pydantic errors so) tells the SDK not to retry it — the same request would be refused again."""
    if response.status_code == 500 and "x-should-retry" not in response.headers:
        response.read()
        if refused_by_validation(response.content):
            response.headers["x-should-retry"] = "false"


def _openai_error() -> type[Exception]:
    import openai

    return openai.OpenAIError


class LLMClient:
    """A thin, typed wrapper over `openai.OpenAI().chat.completions.create`."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: float = 120.0,
        max_retries: int = 2,
        json_mode: str = "auto",
        tools_mode: str = "auto",
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.json_mode = check_mode(json_mode, "json_mode")  # AUTOPATCH_LLM_JSON_MODE
        self.tools_mode = check_mode(tools_mode, "tools_mode")  # AUTOPATCH_LLM_TOOLS
        self.base_url = base_url  # only as a key of core.llm.endpoint's in-process memory; never shown
        self._api_key = api_key or _PLACEHOLDER_KEY
        self._timeout = timeout
        self._max_retries = max_retries
        # The SDK (openai, httpx, their pydantic models, an SSL context) costs ~0.5 s of CPU to import
        # and build. It is built on the first request, not here: the app constructs this client while
        # it opens, before its first frame, and most commands never call the model.
        self._sdk_lock = threading.Lock()
        self._sdk_clients: tuple[Any, Any] | None = None
        self._closed = False

    def _sdk(self, *, retries: bool = True) -> Any:
        """The SDK client (with SDK retries, or the same connection pool without them), built once,
        thread-safely, on first use. A Memory call that timed out must not be repeated behind itself
        on a server still generating it (the durable job retry covers it): hence the no-retry twin."""
        clients = self._sdk_clients
        if clients is None:
            with self._sdk_lock:
                if self._closed:  # as the SDK reports a request on a closed client
                    raise ProviderError("transient_provider", exc_type="ClientClosed")
                if self._sdk_clients is None:
                    self._sdk_clients = self._build_sdk()
                clients = self._sdk_clients
        return clients[0] if retries else clients[1]

    def _build_sdk(self) -> tuple[Any, Any]:
        try:
            import openai  # imported lazily: it is slow to import and only needed with a model

            from openai._constants import DEFAULT_CONNECTION_LIMITS

            from autopatch_tui.core.llm.abort import abortable_transport

            client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                timeout=self._timeout,
                max_retries=self._max_retries,
                # a request can be abandoned at once from another thread (Escape: core/llm/abort.py)
                http_client=openai.DefaultHttpxClient(event_hooks={"response": [_no_retry_of_refusals]},
                                                      transport=abortable_transport(limits=DEFAULT_CONNECTION_LIMITS)),
            )
        except _openai_error() as exc:
            raise ConfigError(f"cannot set up the model client: {type(exc).__name__}") from None
        return client, (client.with_options(max_retries=0) if self._max_retries else client)

    @property
    def sdk_ready(self) -> bool:
        """Whether the SDK client has been built (the first request builds it)."""
        return self._sdk_clients is not None

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient | None:
        """The client for these settings, or None when no model is configured."""
        if not settings.has_model:
            return None
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key is not None else None
        return cls(
            base_url=settings.llm_base_url,
            api_key=key,
            timeout=settings.llm_timeout_seconds,
            max_retries=settings.llm_max_retries,
            json_mode=settings.llm_json_mode,
            tools_mode=settings.llm_tools,
        )

    @property
    def timeout(self) -> float:
        return self._timeout

    @property
    def max_retries(self) -> int:
        return self._max_retries

    # ------------------------------------------------------------------------------------------
    def _request_kwargs(
        self,
        *,
        task: str,
        model: str,
        messages: list[dict],
        temperature: float | None,
        tools: list[dict] | None,
        max_tokens: int | None,
        response_format: dict | None = None,
        tool_choice: str | dict | None = None,
    ) -> dict[str, Any]:
        if task not in TASKS:
            raise ValueError(f"unknown model task: {task!r}")
        if not model:
            raise ValueError("model must be a non-empty string")
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": strict_messages(messages),
            "extra_headers": {TASK_HEADER: task},
        }
        if temperature is not None:
            kwargs["temperature"] = temperature
        if tools:
            kwargs["tools"] = tools
            if tool_choice is not None:
                kwargs["tool_choice"] = tool_choice
        if max_tokens is not None:
            if max_tokens <= 0:
                raise ValueError("max_tokens must be positive")
            kwargs["max_tokens"] = max_tokens
        if response_format is not None:
            kwargs["response_format"] = response_format
        return kwargs

    def complete(
        self,
        *,
        task: str,
        model: str,
        messages: list[dict],
        temperature: float | None = None,
        tools: list[dict] | None = None,
        max_tokens: int | None = None,
        response_format: dict | None = None,
        sdk_retries: bool = True,
    ) -> Completion:
        """One non-streaming chat completion. `sdk_retries=False`: no SDK retry of this request."""
        kwargs = self._request_kwargs(
            task=task,
            model=model,
            messages=messages,
            temperature=temperature,
            tools=tools,
            max_tokens=max_tokens,
            response_format=response_format,
        )
        sdk = self._sdk(retries=sdk_retries)
        try:
            reply = sdk.chat.completions.create(**kwargs)
        except RequestAborted:
            raise RequestCancelled() from None
        except _openai_error() as exc:
            raise classify_openai_error(exc) from None
        except json.JSONDecodeError:
            # A JSON content type with a non-JSON body; the decode error holds the body.
            raise _malformed("not JSON") from None
        return self._completion_of(reply)

    @staticmethod
    def _completion_of(reply: object) -> Completion:
        if isinstance(reply, (str, bytes)) or reply is None:
            # The SDK hands back raw text when the response was not declared as JSON.
            raise _malformed("not a chat completion")
        choices = getattr(reply, "choices", None)
        if not choices:
            raise _no_choices()
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise _malformed("choice without a message")
        content = getattr(message, "content", None)
        if content is not None and not isinstance(content, str):
            raise _malformed("content is not text")
        calls: list[ToolCall] = []
        for index, raw in enumerate(getattr(message, "tool_calls", None) or ()):
            function = getattr(raw, "function", None)
            if function is None:  # a non-function (custom) tool call: not used by this app
                continue
            calls.append(
                ToolCall(
                    id=_str_or_empty(getattr(raw, "id", None)) or f"call_{index}",
                    name=_str_or_empty(getattr(function, "name", None)),
                    arguments=_str_or_empty(getattr(function, "arguments", None)),
                )
            )
        if content == "" and calls:
            content = None  # same normalisation as stream()
        finish = getattr(choice, "finish_reason", None)
        return Completion(
            content=content,
            tool_calls=tuple(calls),
            finish_reason=finish if isinstance(finish, str) else None,
            usage=_usage_of(getattr(reply, "usage", None)),
        )

    # ------------------------------------------------------------------------------------------
    def stream(
        self,
        *,
        task: str,
        model: str,
        messages: list[dict],
        on_delta: Callable[[str], None],
        tools: list[dict] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tool_choice: str | dict | None = None,
        include_usage: bool = False,
    ) -> Completion:
        """A streaming chat completion: content deltas go to `on_delta` as they arrive; streamed
        tool-call fragments are assembled; the whole reply is returned at the end. `include_usage`
        asks for a final usage chunk (`stream_options`; OpenAI and vLLM report usage in a stream only
        so, llama.cpp's server does without being asked).

        An exception raised by `on_delta` aborts the stream (the connection is closed) and
        propagates unchanged.
        """
        kwargs = self._request_kwargs(
            task=task,
            model=model,
            messages=messages,
            temperature=temperature,
            tools=tools,
            max_tokens=max_tokens,
            tool_choice=tool_choice,
        )
        if include_usage:
            kwargs["stream_options"] = {"include_usage": True}
        try:
            response = self._sdk().chat.completions.create(stream=True, **kwargs)
        except RequestAborted:
            raise RequestCancelled() from None
        except _openai_error() as exc:
            raise classify_openai_error(exc) from None
        except json.JSONDecodeError:
            raise _malformed("not JSON") from None
        if not hasattr(response, "__iter__") or isinstance(response, (str, bytes)):
            raise _malformed("not a stream")

        content_parts: list[str] = []
        saw_content = False
        saw_choice = False
        finish_reason: str | None = None
        usage: Usage | None = None
        # index -> [id, name, argument fragments]
        calls: dict[int, list[Any]] = {}
        try:
            try:
                for chunk in response:
                    chunk_usage = _usage_of(getattr(chunk, "usage", None))
                    if chunk_usage is not None:
                        usage = chunk_usage
                    for choice in getattr(chunk, "choices", None) or ():
                        if getattr(choice, "index", 0) not in (0, None):
                            continue  # only the first choice is used (n=1)
                        saw_choice = True
                        reason = getattr(choice, "finish_reason", None)
                        if isinstance(reason, str):
                            finish_reason = reason
                        delta = getattr(choice, "delta", None)
                        if delta is None:
                            continue
                        text = getattr(delta, "content", None)
                        if isinstance(text, str):
                            saw_content = True
                            if text:
                                content_parts.append(text)
                                on_delta(text)
                        for position, fragment in enumerate(getattr(delta, "tool_calls", None) or ()):
                            index = getattr(fragment, "index", None)
                            if not isinstance(index, int):
                                index = position
                            slot = calls.setdefault(index, ["", "", []])
                            call_id = getattr(fragment, "id", None)
                            if isinstance(call_id, str) and call_id and not slot[0]:
                                slot[0] = call_id
                            function = getattr(fragment, "function", None)
                            if function is None:
                                continue
                            name = getattr(function, "name", None)
                            if isinstance(name, str) and name and not slot[1]:
                                slot[1] = name
                            arguments = getattr(function, "arguments", None)
                            if isinstance(arguments, str) and arguments:
                                slot[2].append(arguments)
            except RequestAborted:
                raise RequestCancelled() from None
            except _openai_error() as exc:
                raise classify_openai_error(exc) from None
            except json.JSONDecodeError:
                raise _malformed("stream event is not JSON") from None
        finally:
            close = getattr(response, "close", None)
            if callable(close):
                try:
                    close()
                except RequestAborted:  # the connection of an abandoned stream is already shut down
                    log.debug("closed an abandoned stream")

        if not saw_choice:
            raise _no_choices()
        tool_calls = tuple(
            ToolCall(id=slot[0] or f"call_{index}", name=slot[1], arguments="".join(slot[2]))
            for index, slot in sorted(calls.items())
        )
        content = "".join(content_parts) if (content_parts or saw_content) else None
        if content == "" and tool_calls:
            content = None  # role-only/empty content next to tool calls means "no content"
        return Completion(
            content=content,
            tool_calls=tool_calls,
            finish_reason=finish_reason,
            usage=usage,
        )

    # ------------------------------------------------------------------------------------------
    def close(self) -> None:
        with self._sdk_lock:
            self._closed = True
            clients, self._sdk_clients = self._sdk_clients, None
        if clients is not None:
            clients[0].close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
