"""The secret detector (`core.secrets`, contracts §10): the provider formats detect-secrets' plugins
describe (their own test examples where they publish one), passwords in URLs and assignments,
high-entropy tokens after a key word — and none of the ordinary text a chat about code is full of."""

from __future__ import annotations

import pytest

from autopatch_tui.core.secrets import find_secrets, has_secret, mask, mask_value

# (kind of secret, text with the secret, the secret itself)
SECRETS = [
    ("openai", "my key is sk-proj-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789abcd ok", "sk-proj-Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789abcd"),
    ("openai legacy (detect-secrets example)", "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",
     "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"),
    ("anthropic", "use sk-ant-api03-Zq9xW2vB7nM4kL1pO8iU5yT3rE6wQ0aS9dF2gH5jK8lZ1xC4vB7nM0qW3eR6tY9uI2oP5aS8dF1gH4jK7lZ0xC3vB6nM9qW2eR5tY8uI1oP4aS7dF0gA please",
     "sk-ant-api03-Zq9xW2vB7nM4kL1pO8iU5yT3rE6wQ0aS9dF2gH5jK8lZ1xC4vB7nM0qW3eR6tY9uI2oP5aS8dF1gH4jK7lZ0xC3vB6nM9qW2eR5tY8uI1oP4aS7dF0gA"),
    ("aws (detect-secrets example)", "export AKIAZZZZZZZZZZZZZZZZ now", "AKIAZZZZZZZZZZZZZZZZ"),
    ("github (detect-secrets example)", "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", "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"),
    ("github fine-grained", "github_pat_11ABCDEFG0123456789abc_defGHIJKLMNOPqrstuvwxYZ0123456789abcdefghijklmnopqrstu",
     "github_pat_11ABCDEFG0123456789abc_defGHIJKLMNOPqrstuvwxYZ0123456789abcdefghijklmnopqrstu"),
    ("gitlab (detect-secrets example)", "glpat-hellOworld380_testin", "glpat-hellOworld380_testin"),
    ("slack (detect-secrets example)", "xoxb-34532454-e039d02840a0b9379c", "xoxb-34532454-e039d02840a0b9379c"),
    ("slack webhook", "post to https://hooks.slack.com/services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx",
     "https://hooks.slack.com/services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx"),
    ("google", "maps key AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe"),
    ("stripe (detect-secrets example)", "sk_live_ReTllpYQYfIZu2Jnf2lAPFjD", "sk_live_ReTllpYQYfIZu2Jnf2lAPFjD"),
    ("npm (detect-secrets example)", "//registry.npmjs.org/:_authToken=743b294a-cd03-11ec-9d64-0242ac120002",
     "743b294a-cd03-11ec-9d64-0242ac120002"),
    ("npm token", "NPM npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 here", "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("pypi (detect-secrets example)",
     "pypi-AgEIcHlwaS5vcmcCJDU3OTM1MjliLWIyYTYtNDEwOC05NzRkLTM0MjNiNmEwNWIzYgACF1sxLFsitesttestbWluaW1hbC1wcm9qZWN0Il1dAAIsWzIsWyJjYWY4OTAwZi0xNDMwLTRiYQAABiBfl3MmEkK5m6TbaJlyPwnkRJxgNP5kK1xAyJ2Cf0y0pQ",
     "pypi-AgEIcHlwaS5vcmcCJDU3OTM1MjliLWIyYTYtNDEwOC05NzRkLTM0MjNiNmEwNWIzYgACF1sxLFsitesttestbWluaW1hbC1wcm9qZWN0Il1dAAIsWzIsWyJjYWY4OTAwZi0xNDMwLTRiYQAABiBfl3MmEkK5m6TbaJlyPwnkRJxgNP5kK1xAyJ2Cf0y0pQ"),
    ("private key", "here:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nthanks",
     "b3BlbnNzaC1rZXktdjEAAAAA"),
    ("jwt (detect-secrets example)",
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    ("url password (detect-secrets example)", "https://username:joe@example.com", "joe@"),
    ("url password", "DATABASE_URL is postgres://admin:s3cr3tPw@db.internal:5432/app", "s3cr3tPw"),
    ("url password, no user name", "the queue is amqp://:Qw7rT2zP9x@broker.local:5672 for now", "Qw7rT2zP9x"),
    ("env assignment", "DB_PASSWORD=hunter2x", "hunter2x"),
    ("quoted assignment", 'api_key: "Zx81kLmq0pQ"', "Zx81kLmq0pQ"),
    ("said in words", "the staging password is Tr0ub4dor&3, use it", "Tr0ub4dor&3"),
    ("bearer", "Authorization: Bearer abcDEF123456ghiJKL789mnoPQR", "abcDEF123456ghiJKL789mnoPQR"),
    ("token near key word", "our deploy token for CI: 9fK2mQ7xL4pW8zR1vN6tB3yH", "9fK2mQ7xL4pW8zR1vN6tB3yH"),
    ("huggingface", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    ("sendgrid", "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",
     "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"),
]

ORDINARY = [
    "Always use pnpm; never npm.",
    "Keep compute_monthly_revenue_report_for_all_active_customers_in_region as the entry point",
    "Revert commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b please",
    "see 3f2a9c1 and 9e8d7c6b for the fix",
    "The sha256 is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "we decided the default tenant is 123e4567-e89b-12d3-a456-426614174000",
    "the token is expired, refresh it first",
    "password = os.environ['DB_PASSWORD']",
    "token = get_token()",
    "secret_key = settings.SECRET_KEY",
    "Passwords must be hashed with argon2id, never sha256.",
    "store the api key in the SECRET_STORE env var",
    "the sha256 checksum of the token file is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "git clone git@github.com:org/repo.git and https://user@example.com/path",
    "we send bearer tokens from the vault, never hard-coded",
    "set password: <your-password>",
    "password: ${DB_PASSWORD}",
    "token_refresh_interval_seconds = 300",
    "the secret sauce is caching",
    "use AbstractSingletonProxyFactoryBean and the TokenBucketRateLimiter class",
    "请使用 pnpm，不要用 npm，密码要用环境变量",
    "sk-learn is not a thing; use scikit-learn",
    "Skip tests marked ACME_INTEGRATION_TESTS_ONLY in CI",
    # lines of this repository's own docs and code that a looser detector flagged
    "`Math.random()` assigned to a token/secret/key/session/nonce/password",
    "llm_api_key: SecretStr | None = None",
    "`http://user:k@host:8080/v1?x` → `host:8080`",
    '"secret": "it contains a secret (a key, a token or a password)",',
]


@pytest.mark.parametrize(("kind", "text", "secret"), SECRETS, ids=[k for k, _, _ in SECRETS])
def test_each_kind_of_secret_is_found_and_masked(kind: str, text: str, secret: str) -> None:
    assert has_secret(text), kind
    masked = mask(text)
    assert secret not in masked and "[masked " in masked
    for span in find_secrets(text):  # spans are the value, never the key word in front of it
        assert text[span.start:span.end] and not text[span.start:span.end].lower().startswith(("password", "token"))


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_sentences_and_code_identifiers_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == [] and mask(text) == text


def test_mask_keeps_the_words_around_and_masks_every_secret_of_a_text() -> None:
    text = "Use 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 for CI and AKIAZZZZZZZZZZZZZZZZ for S3, always."
    assert mask(text) == "Use [masked github token] for CI and [masked aws access key] for S3, always."


def test_mask_value_walks_json_like_values() -> None:
    value = {"a": ["x", "AKIAZZZZZZZZZZZZZZZZ"], "b": 3, "c": None, "d": {"e": "DB_PASSWORD=hunter2x"}}
    assert mask_value(value) == {"a": ["x", "[masked aws access key]"], "b": 3, "c": None,
                                 "d": {"e": "DB_PASSWORD=[masked password]"}}


def test_an_unterminated_private_key_block_is_masked_to_the_end() -> None:
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75\nqQ2"
    assert mask(text) == "key:\n[masked private key]"


def test_importing_the_detector_compiles_no_pattern_until_it_is_used() -> None:
    """Every command that may mask imports the module: its patterns compile at their first use,
    not at import (they were 15-35 ms of `memory list`'s start-up)."""
    import subprocess
    import sys

    probe = ("import base64, binascii, json, math, re, collections, dataclasses\n"  # the module's own imports
             "import autopatch_tui.core.bounded_json\n"  # shared; loaded by every command that reads a file
             "count = [0]\nreal = re.compile\n"
             "def counting(*a, **k):\n    count[0] += 1\n    return real(*a, **k)\n"
             "re.compile = counting\n"
             "import autopatch_tui.core.secrets as s\nat_import = count[0]\n"
             "found = s.has_secret('password = hunter2hunter2 and ghp_' + 'a' * 36)\n"
             "print(at_import, count[0] > 0, found)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["0", "True", "True"]
