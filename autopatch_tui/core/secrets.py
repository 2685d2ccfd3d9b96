"""Secret text: find it and mask it (contracts §10: a secret never becomes Memory).

`find_secrets(text)` returns the spans of the secret *values* in `text` (never the key word before
them), sorted and merged; `mask(text)` replaces each with `[masked <kind>]`; `has_secret(text)` is
the quick yes/no the gate asks per candidate.

The patterns follow detect-secrets 1.5.0 (Yelp, Apache-2.0: `detect_secrets/plugins/*.py`) — its
provider plugins (AWS, GitHub, GitLab, Slack, Stripe, npm, PyPI, OpenAI, SendGrid, Discord,
Telegram, Twilio, private key blocks, JWT, basic auth in URLs) and its keyword denylist — widened
where providers issue newer formats (OpenAI `sk-proj-`, Anthropic `sk-ant-`, GitHub `github_pat_`,
Google `AIza`, Stripe test keys, `npm_`). The library itself is not a dependency: it costs ~360 ms
to import, pulls pyyaml and requests, and scans one chat-sized line in ~6.5 ms with its default
plugins; the gate runs per candidate within ~1 ms (`bench/secrets.py`). Chat text is not a source
file, so its entropy plugins (which flag every long word) are replaced by one narrower rule: a
high-entropy token right after a key word ("token", "api key", "bearer", …).

Deliberately not secret: UUIDs and hex digests on their own (commit hashes, `sha256` sums), long
snake_case identifiers, a key word followed by an ordinary word ("the token is expired") or by code
(`password = os.environ["PW"]`, `token = get_token()`)."""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from autopatch_tui.core import bounded_json

__all__ = ["Span", "find_secrets", "has_secret", "mask", "mask_once", "mask_value"]


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str  # a few plain words: "github token", "password", "private key"


# (kind, literal anchors (any one must be in the text before the pattern runs), pattern, group of
# the secret value: 0 = the whole match)
_PROVIDERS: tuple[tuple[str, tuple[str, ...], str, int], ...] = (
    ("private key", ("-----BEGIN",), (r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                                      r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)"), 0),
    ("private key", ("PuTTY-User-Key-File",), r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC: *\S+|\Z)", 0),
    ("anthropic key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}", 0),
    ("openai key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{32,}", 0),
    ("aws access key", ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
     r"\b(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}\b", 0),
    ("github token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36,}", 0),
    ("github token", ("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{22,}", 0),
    ("gitlab token", ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glptt-", "glimt-", "glagent-", "gloas-",
                      "glcbt-"),
     r"\b(?:glpat|gldt|glft|glsoat|glrt|glptt|glimt|glagent|gloas|glcbt)-[A-Za-z0-9_-]{20,}", 0),
    ("gitlab token", ("GR1348941",), r"\bGR1348941[A-Za-z0-9_-]{20,50}", 0),
    ("slack token", ("xox",), r"\bxox(?:a|b|p|o|s|r)-(?:\d+-)+[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", 0),
    ("slack webhook", ("hooks.slack.com",),
     r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+", 0),
    ("google api key", ("AIza",), r"\bAIza[0-9A-Za-z_-]{35}", 0),
    ("stripe key", ("_live_", "_test_"), r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{24,}", 0),
    ("npm token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    ("npm token", (":_authToken",), r"//\S+/:_authToken=\s*(\S+)", 1),
    ("pypi token", ("pypi-AgE",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}", 0),
    ("sendgrid key", ("SG.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b", 0),
    ("discord token", (".",), r"\b[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27}\b", 0),
    ("telegram token", (":",), r"\b\d{8,10}:[0-9A-Za-z_-]{35}\b", 0),
    ("twilio key", ("AC", "SK"), r"\b(?:AC|SK)[a-z0-9]{32}\b", 0),
    ("huggingface token", ("hf_",), r"\bhf_[A-Za-z0-9]{34,}\b", 0),
    ("password in a url", ("://",), r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@{}]*:([^\s@/{}]{3,})@[^\s@]", 1),  # user may be empty
)
class _Lazy:
    """A pattern compiled at its first use: every command that may mask imports this module, and
    compiling its ~20 patterns cost 15-35 ms of each command's start-up (bench/startup.py)."""

    __slots__ = ("_args", "_re")

    def __init__(self, *args: object) -> None:
        self._args = args
        self._re: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._re is None:
            self._re = re.compile(*self._args)  # type: ignore[call-overload]
        return self._re

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self._get().match(text, pos)

    def search(self, text: str) -> re.Match[str] | None:
        return self._get().search(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self._get().finditer(text)


_PROVIDER_RES = tuple((kind, anchors, _Lazy(p, re.DOTALL), g) for kind, anchors, p, g in _PROVIDERS)
_JWT = _Lazy(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")

# detect-secrets' keyword denylist plus the words chat uses for the same things
_KEY_WORDS = (r"api[_ -]?key|apikey|auth[_ -]?key|service[_ -]?key|account[_ -]?key|db[_ -]?key|database[_ -]?key"
              r"|priv(?:ate)?[_ -]?key|client[_ -]?key|access[_ -]?key|secret[_ -]?key|signing[_ -]?key"
              r"|db[_ -]?pass|database[_ -]?pass|key[_ -]?pass|password|passwd|passphrase|pwd|secret"
              r"|contraseña|contrasena|token|access[_ -]?token|auth[_ -]?token|credentials?|密码|密钥|令牌")
_KEY_HIT = _Lazy(rf"(?i)(?:{_KEY_WORDS}|bearer|authorization)")
_KEY_HIT_LOWER = _Lazy(rf"(?:{_KEY_WORDS}|bearer|authorization)")  # on lowered text: ~10x faster
# from a key word: `password = hunter2`, `PASSWORD_DB: "x"`, `secret => y`, `the password is Hunter2!`
_ASSIGNMENT = _Lazy(
    rf"(?i)(?:{_KEY_WORDS})[A-Za-z0-9_]{{0,20}}[\"'\]]{{0,2}}"
    r"\s*(::=|=>|==|=|:|\bis\b|\bwas\b|是|为|：)\s*(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|`([^`\n]{4,200})`"
    r"|([^\s\"'`,;()\[\]{}<>]{4,200}))")
# from a key word: at most three words, then a long token (`token for CI: Zk8…`, `Bearer abc…`)
_NEAR_KEY = _Lazy(rf"(?i)(?:{_KEY_WORDS}|bearer|authorization)\W{{1,3}}(?:\w+\W{{1,3}}){{0,3}}?"
                       r"([A-Za-z0-9+/_.=-]{20,})")
_PLACEHOLDER = _Lazy(r"(?i)^(?:<[^>]*>|\$\{?[A-Z_][A-Z0-9_]*\}?|%\(?\w+\)?s?|\{\{?[^}]*\}\}?|x{4,}|\*{3,}"
                          r"|\.{3,}|…|(?:your|my|the|some|a|an)[_-].*|changeme|redacted|placeholder|example"
                          r"|dummy|none|null|true|false|required|optional|secret|password|token)$")
# an attribute path, an ALL_CAPS name, a snake_case or kebab-case name, a CamelCase type (`SecretStr`)
_CODE_REF = _Lazy(r"^(?:[A-Za-z_][\w]*\.)+[A-Za-z_]\w*$|^[A-Z][A-Z0-9_]*$|^[a-z]+(?:[_-][a-z0-9]+)+$"
                       r"|^(?:[A-Z][a-z]+){2,}$")
_HEX = _Lazy(r"^[0-9a-fA-F-]+$")
_UUID = _Lazy(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HASH_WORDS = _Lazy(r"(?i)\b(?:sha\d*|md5|hash|digest|checksum|commit|rev(?:ision)?|uuid|id)\b")
def _entropy(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def _classes(value: str) -> int:
    return (any(c.islower() for c in value) + any(c.isupper() for c in value) + any(c.isdigit() for c in value)
            + any(not c.isalnum() and c not in "_-." for c in value))


def _looks_secret(value: str, *, worded: bool = False, long: bool = False) -> bool:
    """A value after a key word that reads as a secret, not as a word, a placeholder or code.
    `worded` (joined by "is", not by a sign): it must hold a digit or a symbol besides letters.
    `long` (only near the key word): at least 20 characters of high entropy."""
    value = value.strip().rstrip(".,;:!?)")
    if len(value) < (20 if long else 6) or _PLACEHOLDER.match(value) or _CODE_REF.match(value):
        return False
    if len(value.split()) > 2:  # prose ("it contains a secret (a key, …)"), not a value
        return False
    if _UUID.match(value) or (_HEX.match(value) and len(value) in (7, 8, 12, 40, 64)):
        return False  # an ID or a digest, not a key
    if long and (_entropy(value) < 3.5 or not (any(c.isdigit() for c in value)
                                                or (any(c.isupper() for c in value) and any(c.islower() for c in value)))):
        return False  # "secret/key/session/nonce" is words, not a token
    if worded and not (any(c.isalpha() for c in value)
                       and any(c.isdigit() or not c.isalnum() and c not in "_-." for c in value)):
        return False
    return _classes(value) >= 2


_JWT_HEADER_DEPTH = 8  # a real header is one flat object


def _jwt_ok(token: str) -> bool:
    """Whether the token's header decodes to a JSON object. The bounded parser: a header nested past
    any real one (a `RecursionError` in `json.loads`) is redacted all the same — fails closed."""
    head = token.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
        return isinstance(bounded_json.parse(raw, "a token header", max_depth=_JWT_HEADER_DEPTH), dict)
    except bounded_json.JsonFileError as exc:
        return exc.reason == bounded_json.TOO_DEEP
    except (ValueError, binascii.Error):
        return False


def find_secrets(text: str) -> list[Span]:
    """Spans of secret values in `text`, sorted by start, overlaps merged (the first kind kept)."""
    if not text:
        return []
    found: list[Span] = []
    for kind, anchors, regex, group in _PROVIDER_RES:
        if any(a in text for a in anchors):  # a substring test first: the pattern runs only where it can match
            for m in regex.finditer(text):
                if m.group(group):
                    found.append(Span(m.start(group), m.end(group), kind))
    if "eyJ" in text:
        for m in _JWT.finditer(text):
            if _jwt_ok(m.group(0)):
                found.append(Span(m.start(), m.end(), "json web token"))
    low = text.lower()
    # the lowered text's offsets are the text's unless lowering changed a length (a few non-ASCII letters)
    hits = _KEY_HIT_LOWER.finditer(low) if len(low) == len(text) else _KEY_HIT.finditer(text)
    for hit in hits:
        found += _after_key_word(text, hit.start())
    return _merged(found)


def _after_key_word(text: str, at: int) -> list[Span]:
    out: list[Span] = []
    m = _ASSIGNMENT.match(text, at)
    if m is not None:
        g = next(i for i in range(2, 6) if m.group(i) is not None)
        value = m.group(g)
        bare = g == 5
        if not (bare and text[m.end(g):m.end(g) + 1] in ("(", "[")):  # a call or an index: code, not a value
            worded = m.group(1).lower() in ("is", "was", "是", "为")
            if _looks_secret(value, worded=worded and bare):
                end = m.start(g) + len(value.rstrip(".,;:!?)")) if bare else m.end(g)
                kind = "password" if re.search(r"(?i)pass|pwd|contrase|密码", m.group(0)) else "secret"
                out.append(Span(m.start(g), end, kind))
    n = _NEAR_KEY.match(text, at)
    if n is not None:
        value = n.group(1)
        if not (_HASH_WORDS.search(text[max(0, at - 24):n.start(1)]) and _HEX.match(value)) \
                and _looks_secret(value, worded=True, long=True):
            out.append(Span(n.start(1), n.start(1) + len(value.rstrip(".,;:!?)")), "token"))
    return out


def _merged(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if out and s.start < out[-1].end:
            if s.end > out[-1].end:
                out[-1] = Span(out[-1].start, s.end, out[-1].kind)
            continue
        out.append(s)
    return out


def has_secret(text: str) -> bool:
    return bool(find_secrets(text))


def mask(text: str) -> str:
    """`text` with every secret value replaced by `[masked <kind>]`; unchanged when it holds none."""
    spans = find_secrets(text)
    if not spans:
        return text
    parts, at = [], 0
    for s in spans:
        parts += [text[at:s.start], f"[masked {s.kind}]"]
        at = s.end
    parts.append(text[at:])
    return "".join(parts)


_verdicts: dict[str, bool] = {}  # key (an item revision's ID: its text never changes) -> has a secret
MAX_VERDICTS = 65536


def mask_once(key: str, text: str) -> str:
    """`mask(text)` for a text that never changes under `key`: the search runs once per key (the
    Memory Map's lines, on the turn path), then a dict lookup."""
    found = _verdicts.get(key)
    if found is None:
        if len(_verdicts) >= MAX_VERDICTS:
            _verdicts.clear()
        found = _verdicts[key] = has_secret(text)
    return mask(text) if found else text


def mask_value(value: object) -> object:
    """`mask` applied to every string inside a JSON-like value (dicts, lists, tuples); the rest as is."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: mask_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_value(v) for v in value]
    return value
