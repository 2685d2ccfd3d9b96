"""The agent's tools: OpenAI function schemas and their dispatch. Errors become short tool
results the model can read; they never end the request."""

from __future__ import annotations

import json
from dataclasses import dataclass

from autopatch_tui.core.agent.source_tools import SourceToolError, SourceTools
from autopatch_tui.core.recall.session import RecallLimitError, RecallSession


def _fn(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


MEMORY_TOOLS = [
    _fn("memory_search", "Search the project Memory deterministically (subjects, aliases, keywords, check IDs, "
        "content terms). Returns at most 8 active item summaries.", {"query": {"type": "string"}}, ["query"]),
    _fn("memory_read", "Read one Memory item shown in the Memory Map, a search result or an instruction file's "
        "<!-- memory:ID --> comment: current revision and provenance.", {"id": {"type": "string"}}, ["id"]),
]
SOURCE_TOOLS = [
    _fn("read_file", "Read a repository file (line-numbered).", {
        "path": {"type": "string"}, "start_line": {"type": "integer"}, "end_line": {"type": "integer"}}, ["path"]),
    _fn("list_files", "List a repository directory.", {"path": {"type": "string"}}, ["path"]),
    _fn("search_text", "Search repository files for a regular expression.", {
        "pattern": {"type": "string"}, "path": {"type": "string"}}, ["pattern"]),
]


@dataclass
class ToolBox:
    recall: RecallSession
    source: SourceTools | None  # only for code_explain

    @property
    def schemas(self) -> list[dict]:
        return MEMORY_TOOLS + (SOURCE_TOOLS if self.source is not None else [])

    def call(self, name: str, arguments: str) -> str:
        try:
            args = json.loads(arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError
        except (ValueError, RecursionError):  # RecursionError: arguments nested too deeply to parse
            return "error: tool arguments must be a JSON object"
        try:
            return self._dispatch(name, args)
        except (RecallLimitError, SourceToolError) as exc:
            return f"error: {exc}"
        except (TypeError, ValueError, KeyError):  # a missing or mistyped argument
            return "error: invalid arguments for this tool"
        except OSError:
            return "error: that file cannot be read"

    def _dispatch(self, name: str, args: dict) -> str:
        if name == "memory_search":
            return json.dumps({"results": self.recall.search(str(args.get("query", "")))}, ensure_ascii=False)
        if name == "memory_read":
            return json.dumps(self.recall.read(str(args.get("id", ""))), ensure_ascii=False)
        if self.source is not None:
            if name == "read_file":
                return self.source.read_file(str(args["path"]), int(args.get("start_line") or 1),
                                             int(args["end_line"]) if args.get("end_line") else None)
            if name == "list_files":
                return self.source.list_files(str(args.get("path") or "."))
            if name == "search_text":
                return self.source.search_text(str(args["pattern"]), str(args.get("path") or "."))
        return f"error: unknown tool {name}"
