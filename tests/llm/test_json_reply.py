from __future__ import annotations

import json
import traceback

import pytest

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.llm.json_reply import dump_json_payload, parse_json_object_reply

SECRET = "USER-QUOTE-MARKER-42"


@pytest.mark.parametrize(
    "content",
    [
        '{"a": 1, "b": [true, null]}',
        '  \n{"a": 1, "b": [true, null]}\n  ',
        '```json\n{"a": 1, "b": [true, null]}\n```',
        '```JSON\n{"a": 1, "b": [true, null]}\n```',
        '```\n{"a": 1, "b": [true, null]}\n```',
        '\n```json\n{"a": 1,\n "b": [true, null]}\n```\n',
        '```json {"a": 1, "b": [true, null]} ```',
    ],
    ids=["bare", "whitespace", "json-fence", "upper-fence", "plain-fence", "fence-multiline", "fence-inline"],
)
def test_accepts_one_object_with_optional_fence(content):
    assert parse_json_object_reply(content) == {"a": 1, "b": [True, None]}


def test_fence_inside_string_value_is_kept():
    assert parse_json_object_reply('```json\n{"code": "```x```"}\n```') == {"code": "```x```"}


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (None, "reply has no content"),
        ("", "reply is empty"),
        ("   \n ", "reply is empty"),
        (f'Here you go: {{"q": "{SECRET}"}}', "reply is not a JSON object"),
        (f'{{"q": "{SECRET}"}} Hope this helps!', "more than one JSON value"),
        (f'[{{"q": "{SECRET}"}}]', "reply is not a JSON object"),
        (f'{{"q": "{SECRET}"}}\n{{"q": 2}}', "more than one JSON value"),
        (f'{{"q": "{SECRET}", "q": 2}}', "duplicate key in JSON object"),
        (f'{{"outer": {{"{SECRET}": 1, "{SECRET}": 2}}}}', "duplicate key in JSON object"),
        (f'{{"q": "{SECRET}",}}', "invalid JSON"),
        ('{"q": NaN}', "invalid JSON"),
        (f'"{SECRET}"', "reply is not a JSON object"),
        ("42", "reply is not a JSON object"),
        (f'```json\n{{"q": "{SECRET}"}}\n', "malformed code fence"),
        ("```json\n```", "code fence is empty"),
        (f'```python\n{{"q": "{SECRET}"}}\n```', "reply is not a JSON object"),
        (f'```json\n{{"q": 1}}\n```\n```json\n{{"q": "{SECRET}"}}\n```', "more than one JSON value"),
        (f'Sure!\n```json\n{{"q": "{SECRET}"}}\n```', "reply is not a JSON object"),
    ],
    ids=[
        "none",
        "empty",
        "blank",
        "prose-before",
        "prose-after",
        "array",
        "two-objects",
        "duplicate",
        "nested-duplicate",
        "trailing-comma",
        "nan",
        "string",
        "number",
        "unclosed-fence",
        "empty-fence",
        "python-fence",
        "two-fences",
        "prose-before-fence",
    ],
)
def test_rejects_everything_else_without_quoting(content, detail):
    with pytest.raises(MemoryContractError) as info:
        parse_json_object_reply(content)
    err = info.value
    assert err.rule == "json_object"
    assert err.detail == detail
    assert SECRET not in str(err)
    # the decoder error (which holds the whole reply) is never chained into the traceback
    assert err.__cause__ is None
    assert err.__context__ is None or err.__suppress_context__ is True
    assert SECRET not in "".join(traceback.format_exception(err))


def test_dump_json_payload_is_compact_unicode_and_ordered():
    payload = {"z": 1, "a": ["é", "世界"], "m": {"y": None, "b": True}}
    text = dump_json_payload(payload)
    assert text == '{"z":1,"a":["é","世界"],"m":{"y":null,"b":true}}'
    assert json.loads(text) == payload
    with pytest.raises(ValueError):
        dump_json_payload({"x": float("nan")})


def test_dump_then_parse_roundtrip():
    payload = {"candidates": [{"kind": "user_preference", "text": "Prefer tabs — 使用制表符"}]}
    assert parse_json_object_reply(dump_json_payload(payload)) == payload
