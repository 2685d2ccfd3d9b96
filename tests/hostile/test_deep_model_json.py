"""JSON a model sends (a Memory reply, tool arguments) nested past what Python's recursive parser
survives: a contract violation or a tool error, never a RecursionError that ends the turn or job."""

from __future__ import annotations

import pytest

from autopatch_tui.core.agent.loop import _canonical
from autopatch_tui.core.agent.tools import ToolBox
from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.llm.json_reply import parse_json_object_reply

DEEP = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"


def test_a_deep_memory_reply_is_a_contract_violation() -> None:
    with pytest.raises(MemoryContractError, match="nested too deeply"):
        parse_json_object_reply(DEEP)


def test_deep_tool_arguments_are_a_tool_error() -> None:
    box = ToolBox(None, None)  # type: ignore[arg-type]  (refused before any tool runs)
    assert box.call("memory_search", DEEP) == "error: tool arguments must be a JSON object"
    assert _canonical(DEEP) == DEEP
