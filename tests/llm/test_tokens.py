from __future__ import annotations

from autopatch_tui.core.llm.tokens import estimate_messages_tokens, estimate_tokens


def test_small_values():
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("a" * 400) == 100
    assert estimate_tokens("世") == 1
    assert estimate_tokens("世界你好") == 4
    assert estimate_tokens("é") == 1


def test_cjk_costs_more_than_ascii_of_same_length():
    for n in (2, 4, 10, 100):
        assert estimate_tokens("世" * n) > estimate_tokens("a" * n)
        assert estimate_tokens("世" * n) == n
    assert estimate_tokens("日本語のテキスト한국어") > estimate_tokens("abcdefghijklmn")
    # other non-ASCII (accented Latin, Cyrillic) sits between ASCII and CJK
    assert estimate_tokens("a" * 40) < estimate_tokens("é" * 40) < estimate_tokens("世" * 40)
    assert estimate_tokens("ж" * 40) == 20


def test_mixed_text_adds_up():
    assert estimate_tokens("abcd世界") == 3  # 4 ASCII -> 1, 2 CJK -> 2
    assert estimate_tokens("ab世") == 2  # ceil(2/4 + 1)


def test_monotonic_and_never_zero_for_nonempty():
    text = "def f(x):\n    return x  # 返回 ünïcode 🙂 " * 20
    previous = 0
    for end in range(1, len(text) + 1):
        current = estimate_tokens(text[:end])
        assert current >= previous
        assert current >= 1
        previous = current
    assert estimate_tokens(text * 2) >= 2 * estimate_tokens(text) - 1


def test_large_input_is_linear():
    big = "x" * 1_000_000
    assert estimate_tokens(big) == 250_000
    assert estimate_tokens(big + "世" * 1000) == 251_000


def test_messages_estimate_counts_content_tool_calls_and_overhead():
    assert estimate_messages_tokens([]) == 0
    one = estimate_messages_tokens([{"role": "user", "content": ""}])
    two = estimate_messages_tokens([{"role": "user", "content": ""}, {"role": "assistant", "content": None}])
    assert one > 0
    assert two > one  # per-message overhead
    text = estimate_messages_tokens([{"role": "user", "content": "a" * 400}])
    assert text == one + 100
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "' + "p" * 390 + '"}'}}
    with_call = estimate_messages_tokens([{"role": "assistant", "content": None, "tool_calls": [call]}])
    assert with_call >= one + 100
    parts = estimate_messages_tokens([{"role": "user", "content": [{"type": "text", "text": "a" * 400}]}])
    assert parts == text
