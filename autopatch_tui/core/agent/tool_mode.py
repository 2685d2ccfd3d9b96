"""Whether a request may use tool calling (`AUTOPATCH_LLM_TOOLS` = auto | on | off).

`on` always sends the tool schemas; `off` never does; `auto` sends them until the endpoint is seen
not to use them — it answers a step that had to call a tool without any tool call, or refuses a
request that carries tools (HTTP 400, or a validation error naming them) — and then remembers
that for its base URL and model (in-process, core.llm.endpoint)."""

from __future__ import annotations

from autopatch_tui.core.errors import ConfigError
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.llm.endpoint import ENDPOINTS
from autopatch_tui.core.llm.errors import ProviderError

TOOLS_REQUIRED_HELP = (
    "this workflow needs a model server with tool calling (function calling), and {why}; use a tool-capable "
    "model and server (see the README, \"Local models\") and set AUTOPATCH_LLM_TOOLS=auto or on"
)


class ToolsRequiredError(ConfigError):
    """A repair workflow was asked of a model that cannot call tools."""


def tools_usable(client: LLMClient, model: str) -> bool:
    if client.tools_mode == "off":
        return False
    if client.tools_mode == "on":
        return True
    return not ENDPOINTS.tools_unusable(client.base_url, model)


def require_tools(client: LLMClient, model: str) -> None:
    if tools_usable(client, model):
        return
    why = ("AUTOPATCH_LLM_TOOLS is off" if client.tools_mode == "off"
           else "this model server was seen to ignore or refuse tools")
    raise ToolsRequiredError(TOOLS_REQUIRED_HELP.format(why=why))


def learn_tools_unusable(client: LLMClient, model: str) -> bool:
    """In `auto`, remember that this endpoint cannot use tools. True when remembered."""
    if client.tools_mode != "auto":
        return False
    ENDPOINTS.mark_tools_unusable(client.base_url, model)
    return True


def refuses_tools(exc: ProviderError, with_tool_messages: bool) -> bool:
    """A refusal that sending the request without tools may fix: a refused request (400, 422, or a
    validation 500) that names `tools`/`tool_choice`, or any such refusal of a request that already
    carries tool results (e.g. a chat template without a `tool` role: "roles must alternate")."""
    if exc.category != "bad_request" or exc.status_code not in (400, 422, 500):
        return False
    return with_tool_messages or exc.names_any("tools", "tool_choice")
