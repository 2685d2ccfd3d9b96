"""Tests for the deterministic recall tokenizer (autopatch_tui.core.recall.terms)."""

from __future__ import annotations

import ast
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autopatch_tui.core.recall import terms as T
from autopatch_tui.core.recall import paths as P
from autopatch_tui.core.recall.paths import normalize_path, path_covers, path_specificity
from autopatch_tui.core.recall.terms import (
    MAX_CJK_BIGRAMS_PER_RUN,
    MAX_CONTENT_TERMS,
    MAX_PATH_TERMS,
    MAX_PHRASE_TERMS,
    MAX_QUERY_TERMS,
    MAX_TERM_CHARS,
    MAX_WHOLE_CJK_RUN,
    content_terms,
    fold_plural,
    is_check_id,
    normalize_phrase,
    normalize_text,
    path_terms,
    phrase_terms,
    query_terms,
    split_identifier,
)


def matches(phrase: str, query: str) -> bool:
    """The recall rule for one stored phrase: every phrase term is a query term."""
    needed = set(phrase_terms(phrase))
    return bool(needed) and needed <= set(query_terms(query))


def content_hits(content: str, query: str) -> int:
    return len(set(content_terms(content)) & set(query_terms(query)))


# --------------------------------------------------------------------------- module hygiene


def test_module_is_stdlib_only_and_never_imports_textual() -> None:
    """The tokenizer and its path helpers use the standard library only (plus each other)."""
    for module in (T, P):
        tree = ast.parse(pathlib.Path(module.__file__).read_text(encoding="utf-8"))
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
        stdlib = {"__future__", "re", "unicodedata", "collections.abc", "functools"}
        assert imported <= stdlib | {"autopatch_tui.core.recall.paths"}, module.__name__


def test_caps_have_the_documented_values() -> None:
    assert (MAX_QUERY_TERMS, MAX_PHRASE_TERMS, MAX_CONTENT_TERMS, MAX_CJK_BIGRAMS_PER_RUN) == (
        32,
        8,
        64,
        32,
    )


# --------------------------------------------------------------------------- normalization


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("   ", ""),
        ("  Hello   World \n\t", "hello world"),
        ("ＡＢＣ　ｄｅｆ１２３", "abc def123"),  # full-width + ideographic space
        ("Straße", "strasse"),  # casefold, not lower
        ("ﬁle", "file"),  # NFKC ligature
        ("Backward-Compatibility!", "backward-compatibility!"),  # punctuation kept
        ("向后  兼容", "向后 兼容"),
    ],
)
def test_normalize_text(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Backward-Compatibility!", "backward compatibility"),
        ("  backward   compatibility ", "backward compatibility"),
        ("user_config", "user config"),
        ("java:S1128", "java s1128"),
        ("...!!!", ""),
        ("", ""),
        ("向后兼容。", "向后兼容"),
        ("ＡＰＩ（ｖ２）", "api v2"),
        ("naïve café", "naïve café"),  # letters with marks are kept
        ("हिन्दी", "हिन्दी"),  # combining marks (Mn/Mc) are not punctuation
    ],
)
def test_normalize_phrase(text: str, expected: str) -> None:
    assert normalize_phrase(text) == expected


def test_normalize_phrase_identifies_spelling_variants() -> None:
    variants = ["Backward compatibility", "backward-compatibility", "BACKWARD COMPATIBILITY.", "ｂａｃｋｗａｒｄ　compatibility"]
    assert {normalize_phrase(v) for v in variants} == {"backward compatibility"}


# --------------------------------------------------------------------------- split_identifier


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("parseUserConfig", ["parse", "user", "config"]),
        ("ParseUserConfig", ["parse", "user", "config"]),
        ("parse_user_config", ["parse", "user", "config"]),
        ("PARSE_USER_CONFIG", ["parse", "user", "config"]),
        ("parse-user-config", ["parse", "user", "config"]),
        ("HTTPServer2Config", ["http", "server", "2", "config"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("IPv6Address", ["i", "pv", "6", "address"]),
        ("S1128", ["s", "1128"]),
        ("utf8", ["utf", "8"]),
        ("x86_64", ["x", "86", "64"]),
        ("__init__", ["init"]),
        ("user.config", ["user", "config"]),
        ("simple", ["simple"]),
        ("ＰａｒｓｅＣｏｎｆｉｇ", ["parse", "config"]),
        ("Straße", ["strasse"]),
        ("", []),
        ("___", []),
        ("Ünïcode_Wörter", ["ünïcode", "wörter"]),
    ],
)
def test_split_identifier(token: str, expected: list[str]) -> None:
    assert split_identifier(token) == expected


def test_split_identifier_keeps_combining_marks_with_their_letter() -> None:
    decomposed = "cafe\u0301Bar"  # NFKC composes é; the mark never starts a part
    assert split_identifier(decomposed) == ["café", "bar"]


# --------------------------------------------------------------------------- is_check_id


@pytest.mark.parametrize(
    "token",
    [
        "S1128",
        "s1128",
        "java:S1128",
        "squid:S00112",
        "PMD:UnusedImports",
        "B101",
        "E501",
        "W0611",
        "RUF100",
        "SC2086",
        "no-unused-vars",
        "prefer-const",
        "bugprone-use-after-move",
        "color-no-invalid-hex",
        "CWE-79",
        "CVE-2021-44228",
        "B101:assert_used",
        "clippy::needless_return",
        "react/prop-types",
        "@typescript-eslint/no-explicit-any",
        "  E501  ",
        "ＣＷＥ－７９",  # full-width
    ],
)
def test_is_check_id_accepts(token: str) -> None:
    assert is_check_id(token)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "   ",
        "hello",
        "user_config",
        "parseUserConfig",
        "src/app",
        "src/app/user_config.py",
        "backward-compatible",
        "well-known",
        "12:30",
        "http://example.com",
        "a1",
        "utf8",
        "3.11",
        "E501 W0611",
        "向后兼容",
        "S" + "1" * 200,
    ],
)
def test_is_check_id_rejects(token: str) -> None:
    assert not is_check_id(token)


# --------------------------------------------------------------------------- plural folding


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("configs", "config"),
        ("keywords", "keyword"),
        ("dependencies", "dependency"),
        ("queries", "query"),
        ("classes", "class"),
        ("pushes", "push"),
        ("patches", "patch"),
        ("branches", "branch"),
        ("searches", "search"),
        ("indexes", "index"),
        ("caches", "cache"),
        ("aliases", "alias"),
        ("alias", "alias"),
        ("statuses", "status"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("class", "class"),
        ("news", "news"),
        ("bus", "bus"),  # too short
        ("ties", "tie"),  # 'ies' rule needs > 4 letters
        ("vars", "var"),
        ("s1128", "s1128"),  # not purely alphabetic
        ("schémas", "schémas"),  # not ASCII
        ("向后", "向后"),
    ],
)
def test_fold_plural(term: str, expected: str) -> None:
    assert fold_plural(term) == expected


@pytest.mark.parametrize(
    ("singular", "plural"),
    [
        ("config", "configs"),
        ("dependency", "dependencies"),
        ("class", "classes"),
        ("alias", "aliases"),
        ("status", "statuses"),
        ("branch", "branches"),
        ("cache", "caches"),
        ("schema", "schemas"),
        ("user config", "user configs"),
        ("userConfig", "userConfigs"),
    ],
)
def test_plural_folding_is_symmetric_between_phrase_and_query(singular: str, plural: str) -> None:
    assert matches(singular, f"about the {plural} here")
    assert matches(plural, f"one {singular} only")


# --------------------------------------------------------------------------- phrase_terms


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("", []),
        ("   ", []),
        ("!!!", []),
        ("a", []),  # single ASCII letter
        ("7", []),  # single digit
        ("Backward Compatibility", ["backward", "compatibility"]),
        ("the memory schema", ["memory", "schema"]),
        ("to be or not to be", ["to", "be", "or", "not"]),  # stopwords only: kept
        ("user config", ["user", "config"]),
        ("user_config", ["userconfig", "user", "config"]),
        ("parseUserConfig", ["parseuserconfig", "parse", "user", "config"]),
        ("java:S1128", ["java:s1128", "java", "s1128", "1128"]),
        ("no-unused-vars", ["no-unused-vars", "no", "unused", "var"]),
        ("CWE-79", ["cwe-79", "cwe", "79"]),
        ("backward-compatible", ["backward", "compatible"]),
        ("Python 3.11", ["python", "11"]),
        ("向后兼容", ["向后", "后兼", "兼容"]),  # index side: bigrams only, no whole run
        ("兼容", ["兼容"]),
        ("旧", ["旧"]),
        ("旧 memory schema", ["旧", "memory", "schema"]),
        ("Ｍｅｍｏｒｙ　Ｓｃｈｅｍａ", ["memory", "schema"]),
        ("config config CONFIG configs", ["config"]),
    ],
)
def test_phrase_terms(phrase: str, expected: list[str]) -> None:
    assert phrase_terms(phrase) == expected


def test_phrase_terms_cap_keeps_the_first_terms() -> None:
    words = [f"word{chr(ord('a') + i)}x" for i in range(20)]
    assert phrase_terms(" ".join(words)) == words[:MAX_PHRASE_TERMS]


def test_phrase_terms_long_cjk_run_is_capped() -> None:
    run = "".join(chr(0x4E00 + i) for i in range(20))
    assert phrase_terms(run) == [run[i : i + 2] for i in range(MAX_PHRASE_TERMS)]


def test_overlong_terms_are_dropped_not_truncated() -> None:
    long_word = "x" * (MAX_TERM_CHARS + 1)
    assert phrase_terms(long_word) == []  # never indexed, so never a vacuous match
    assert phrase_terms(long_word + " alpha") == ["alpha"]
    assert query_terms(long_word[:-1] + " alpha") == [long_word[:-1], "alpha"]
    # Truncation would have made a 129-char token equal to its 128-char prefix.
    assert not matches(long_word, long_word[:-1])
    assert phrase_terms("z" * MAX_TERM_CHARS) == ["z" * MAX_TERM_CHARS]


# --------------------------------------------------------------------------- content_terms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("The schema is old and it is not compatible.", ["schema", "old", "compatible"]),
        ("to be or not to be", []),  # content never keeps stopwords
        ("config CONFIG configs Config", ["config"]),
        ("旧 memory schema 不兼容，直接删除", ["旧", "memory", "schema", "不兼", "兼容", "直接", "接删", "删除"]),
    ],
)
def test_content_terms(text: str, expected: list[str]) -> None:
    assert content_terms(text) == expected


def test_content_terms_cap_and_first_occurrence_order() -> None:
    words = [f"term{chr(ord('a') + i // 26)}{chr(ord('a') + i % 26)}x" for i in range(100)]
    text = " ".join(words + words[:10])
    assert content_terms(text) == words[:MAX_CONTENT_TERMS]


def test_content_matches_when_two_distinct_terms_meet() -> None:
    content = "Drop the legacy memory schema instead of migrating it."
    assert content_hits(content, "should we migrate the memory schema?") >= 2
    assert content_hits(content, "what is the schema of the config?") == 1


# --------------------------------------------------------------------------- query_terms


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", []),
        ("what about backward compatibility?", ["backward", "compatibility"]),
        ("the a an and or of to", []),
        ("Is THIS compatible?", ["compatible"]),
        ("我们要不要向后兼容", ["我们", "们要", "要不", "不要", "要向", "向后", "后兼", "兼容"]),  # 9 chars: no whole run
        ("向后看，兼容性", ["向后", "后看", "向后看", "兼容", "容性", "兼容性"]),  # whole runs on the query side
        ("fix src/app/user_config.py", ["fix", "src", "app", "userconfig", "user", "config", "py"]),
    ],
)
def test_query_terms(query: str, expected: list[str]) -> None:
    assert query_terms(query) == expected


def test_query_terms_priority_order_and_dedup() -> None:
    assert query_terms("gamma beta", "alpha beta", "delta") == ["gamma", "beta", "alpha", "delta"]


def test_query_terms_cap_prefers_earlier_texts() -> None:
    assert query_terms("alpha beta", "gamma delta", cap=3) == ["alpha", "beta", "gamma"]
    assert query_terms("alpha", cap=0) == []
    many = " ".join(f"w{i:03d}x" for i in range(100))
    assert len(query_terms(many)) == MAX_QUERY_TERMS
    assert query_terms(many)[0] == "w000x"


@pytest.mark.parametrize("cap", [-1, -100])
def test_query_terms_rejects_negative_cap(cap: int) -> None:
    with pytest.raises(ValueError):
        query_terms("alpha", cap=cap)


@pytest.mark.parametrize("cap", [1.5, "3", True])
def test_query_terms_rejects_non_int_cap(cap: object) -> None:
    with pytest.raises(TypeError):
        query_terms("alpha", cap=cap)  # type: ignore[arg-type]


def test_query_whole_cjk_run_only_up_to_limit() -> None:
    short = "".join(chr(0x4E00 + i) for i in range(MAX_WHOLE_CJK_RUN))
    long = "".join(chr(0x4E00 + i) for i in range(MAX_WHOLE_CJK_RUN + 1))
    assert short in query_terms(short)
    assert long not in query_terms(long, cap=100)
    assert short not in phrase_terms(short)  # index side never emits the whole run


def test_cjk_bigrams_per_run_are_bounded_from_the_start() -> None:
    run = "".join(chr(0x4E00 + i) for i in range(50))
    got = query_terms(run, cap=1000)
    assert got == [run[i : i + 2] for i in range(MAX_CJK_BIGRAMS_PER_RUN)]
    assert len(content_terms(run)) == MAX_CJK_BIGRAMS_PER_RUN


# --------------------------------------------------------------------------- phrase-matches-query table

MATCHING = [
    # English
    ("backward compatibility", "what about backward compatibility?"),
    ("Compatibility", "what about backward compatibility?"),
    ("Backward-Compatibility", "Is it backward compatible? We need backward compatibility."),
    # identifiers in the query
    ("user config", "why does parseUserConfig fail?"),
    ("user config", "look at parse_user_config()"),
    ("user config", "see src/app/user_config.py line 3"),
    ("user config", "ParseUserConfig.java"),
    ("parseUserConfig", "the PARSE_USER_CONFIG helper"),
    ("parse_user_config", "call ParseUserConfig()"),
    ("user_config.py", "in src/app/user_config.py"),
    ("HTTPServer", "the HttpServer class"),
    # check IDs
    ("S1128", "Sonar reports java:S1128 here"),
    ("java:S1128", "Sonar reports java:S1128 here"),
    ("PMD:UnusedImports", "fix PMD:UnusedImports"),
    ("UnusedImports", "fix PMD:UnusedImports"),
    ("B101", "bandit B101 fires on asserts"),
    ("E501", "ignore e501 please"),
    ("no-unused-vars", "eslint says no-unused-vars"),
    ("CWE-79", "this is CWE-79 (XSS)"),
    ("ＣＷＥ－７９", "cwe-79"),
    # CJK
    ("向后兼容", "我们要不要向后兼容"),
    ("兼容", "不兼容直接删除"),
    ("兼容", "旧 memory schema 不兼容，直接删除"),
    ("memory schema", "旧 memory schema 不兼容，直接删除"),
    ("直接删除", "旧 memory schema 不兼容，直接删除"),
    ("旧", "旧 memory schema 不兼容，直接删除"),
    ("後方互換", "後方互換性を保つべきですか"),
    ("호환성", "하위 호환성을 유지해야 하나요"),
    ("向后兼容", "我们要不要向后兼容ＡＰＩ"),  # CJK next to Latin splits runs
    # normalization
    ("memory schema", "ＭＥＭＯＲＹ　ＳＣＨＥＭＡ"),
    ("Straße", "STRASSE"),
    # plurals
    ("keyword", "list all keywords"),
    ("dependencies", "which dependency?"),
]

NOT_MATCHING = [
    ("backward compatibility", "forward compatibility"),
    ("backward compatibility", "backward steps"),
    ("user config", "parseUserSettings"),
    ("parseUserConfig", "parse the user config"),  # an identifier phrase needs the identifier
    ("java:S1128", "S1128"),  # a namespaced ID needs the namespace
    ("S1128", "S1129"),
    ("CWE-79", "CWE-89 at line 79"),
    ("no-unused-vars", "no unused vars"),
    ("向后兼容", "向后看，兼容性"),  # 后兼 is absent
    ("兼容", "兼顾容量"),
    ("向后兼容", "向后"),
    ("旧", "陈旧的数据"),  # one-character phrases only match a standalone character
    ("a", "a b c"),  # an empty phrase never matches
    ("", "anything at all"),
    ("to be", "to be or not to be"),  # stopword-only phrases keep terms the query drops
]


@pytest.mark.parametrize(("phrase", "query"), MATCHING)
def test_phrase_matches_query(phrase: str, query: str) -> None:
    assert matches(phrase, query), (phrase_terms(phrase), query_terms(query))


@pytest.mark.parametrize(("phrase", "query"), NOT_MATCHING)
def test_phrase_does_not_match_query(phrase: str, query: str) -> None:
    assert not matches(phrase, query), (phrase_terms(phrase), query_terms(query))


def test_identifier_query_keeps_whole_and_parts() -> None:
    got = query_terms("parseUserConfig")
    assert got == ["parseuserconfig", "parse", "user", "config"]
    assert set(query_terms("parse_user_config")) == set(got)


def test_check_id_query_keeps_whole_and_parts() -> None:
    assert query_terms("java:S1128") == ["java:s1128", "java", "s1128", "1128"]
    assert query_terms("PMD:UnusedImports") == ["pmd:unusedimports", "pmd", "unusedimport", "unused", "import"]
    assert query_terms("B101") == ["b101", "101"]


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", ""),
        (".", ""),
        ("./", ""),
        ("/", ""),
        ("src/app/a.py", "src/app/a.py"),
        ("./src/app/", "src/app"),
        ("/src//app///a.py", "src/app/a.py"),
        ("src\\app\\A.py", "src/app/A.py"),
        ("././src/./a.py", "src/a.py"),
        ("../outside/x", "../outside/x"),
        ("  src/App.java  ", "src/App.java"),  # case kept
        ("/ src / my docs /a.py", "src/my docs/a.py"),  # whitespace around segments goes
        ("a/ /b/ . /c", "a/b/c"),
        ("ｓｒｃ／ａ．ｐｙ", "src/a.py"),  # NFKC
        ("**/*.java", "**/*.java"),
        ("pages/[id].tsx", "pages/[id].tsx"),
    ],
)
def test_normalize_path(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


def test_path_terms_example() -> None:
    assert path_terms("src/app/UserConfig.java") == [
        "src/app/userconfig.java",
        "userconfig.java",
        "userconfig",
        "user",
        "config",
        "app",
        "src",
        "java",
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", []),
        ("./", []),
        ("README.md", ["readme.md", "readme", "md"]),
        ("Makefile", ["makefile"]),
        (".gitignore", [".gitignore", "gitignore"]),
        ("a", ["a"]),  # the basename is kept verbatim
        ("src/utils/helpers.py", ["src/utils/helpers.py", "helpers.py", "helper", "util", "src", "py"]),
        ("docs\\向后兼容.md", ["docs/向后兼容.md", "向后兼容.md", "向后", "后兼", "兼容", "向后兼容", "doc", "md"]),
    ],
)
def test_path_terms(path: str, expected: list[str]) -> None:
    assert path_terms(path) == expected


def test_path_terms_are_bounded() -> None:
    deep = "/".join(f"d{chr(ord('a') + i)}x" for i in range(20)) + "/file.py"
    got = path_terms(deep)
    assert len(got) == MAX_PATH_TERMS
    assert got[:4] == [deep, "file.py", "file", "dtx"]  # then the nearest directory first
    assert "dax" not in got  # the root-most directories fall off the end


def test_path_terms_drop_an_overlong_whole_path_but_keep_the_rest() -> None:
    deep = "/".join(["segment"] * 30) + "/Main.java"
    assert len(deep) > MAX_TERM_CHARS
    assert path_terms(deep) == ["main.java", "main", "segment", "java"]


def test_path_terms_let_path_keywords_match() -> None:
    terms = set(path_terms("src/app/UserConfig.java"))
    for phrase in ["user config", "UserConfig", "UserConfig.java", "java", "src/app/UserConfig.java"]:
        needed = set(phrase_terms(phrase))
        assert needed and needed <= terms, phrase


@pytest.mark.parametrize(
    ("applies_to", "scope", "expected"),
    [
        ("", "src/a.py", True),
        ("*", "src/a.py", True),
        ("**", "deep/er/x", True),
        ("", "", True),
        ("src/", "src/a.py", True),
        ("src", "src/a.py", True),
        ("src", "src", True),
        ("src/", "src/", True),
        ("src", "srcx/a.py", False),
        ("src", "lib/src/a.py", False),
        ("src", "", False),
        ("src/a.py", "src/a.py", True),
        ("src/a.py", "src/a.pyc", False),
        ("./src/a.py", "src\\a.py", True),
        ("SRC", "src/a.py", False),  # case-sensitive
        ("**/*.java", "Foo.java", True),
        ("**/*.java", "a/b/Foo.java", True),
        ("**/*.java", "a/b/Foo.javax", False),
        ("*.java", "a/b/Foo.java", True),  # no slash: any depth
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/a/b.py", False),  # * never crosses /
        ("src/*.py", "lib/a.py", False),
        ("src/*", "src/a/b.py", True),  # matches the ancestor src/a
        ("src/**", "src", True),
        ("src/**", "src/a/b/c.py", True),
        ("src/**", "srcx/a.py", False),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/a_test.py", False),
        ("src/?.py", "src/a.py", True),
        ("src/?.py", "src/ab.py", False),
        ("pages/[id].tsx", "pages/[id].tsx", True),  # [ is literal
        ("pages/[id].tsx", "pages/i.tsx", False),
        ("*", "", True),
        ("**/*.py", "", False),
    ],
)
def test_path_covers(applies_to: str, scope: str, expected: bool) -> None:
    assert path_covers(applies_to, scope) is expected


def test_path_covers_hostile_glob_is_fast() -> None:
    import time

    pattern = "*a" * 30 + "*b"
    start = time.perf_counter()
    assert not path_covers(pattern, "a" * 200)
    assert time.perf_counter() - start < 2.0


@pytest.mark.parametrize(
    ("applies_to", "expected"),
    [
        ("", 0),
        ("*", 0),
        ("./", 0),
        ("src", 1),
        ("src/", 1),
        ("src/app", 2),
        ("src/app/UserConfig.java", 3),
        ("src/*.py", 1),
        ("**/*.java", 0),
        ("src/**/test_*.py", 1),
        ("/src//app/", 2),
    ],
)
def test_path_specificity(applies_to: str, expected: int) -> None:
    assert path_specificity(applies_to) == expected


def test_path_specificity_ranks_more_specific_higher() -> None:
    ranked = sorted(["", "src", "src/app/x.py", "src/app"], key=path_specificity)
    assert ranked == ["", "src", "src/app", "src/app/x.py"]


# --------------------------------------------------------------------------- properties

_TEXT = st.text(max_size=200)
_MIXED = st.lists(
    st.sampled_from(
        ["user", "Config", "parseUserConfig", "java:S1128", "no-unused-vars", "向后兼容", "兼容",
         "the", "a", "-", ".", "/", "_", " ", "，", "ＡＢ", "1", "42", "é", "\u0301", "ß", "한국어"]
    ),
    max_size=30,
).map("".join)
_ANY = st.one_of(_TEXT, _MIXED)
_PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _well_formed(terms: list[str], cap: int) -> None:
    assert len(terms) <= cap
    assert len(terms) == len(set(terms))
    for term in terms:
        assert term
        assert len(term) <= MAX_TERM_CHARS
        assert not any(ch.isspace() for ch in term)


@_PROPS
@given(_ANY)
def test_term_functions_are_total_deterministic_and_capped(text: str) -> None:
    _well_formed(phrase_terms(text), MAX_PHRASE_TERMS)
    _well_formed(content_terms(text), MAX_CONTENT_TERMS)
    _well_formed(query_terms(text), MAX_QUERY_TERMS)
    assert len(path_terms(text)) <= MAX_PATH_TERMS
    assert len(set(path_terms(text))) == len(path_terms(text))
    assert phrase_terms(text) == phrase_terms(text)
    assert content_terms(text) == content_terms(text)
    assert query_terms(text) == query_terms(text)
    assert path_terms(text) == path_terms(text)
    assert isinstance(is_check_id(text), bool)
    assert split_identifier(text) == split_identifier(text)
    assert all(split_identifier(text))


@_PROPS
@given(_ANY, _ANY, st.integers(min_value=0, max_value=40))
def test_query_terms_cap_and_priority(first: str, second: str, cap: int) -> None:
    got = query_terms(first, second, cap=cap)
    _well_formed(got, cap)
    alone = query_terms(first, cap=cap)
    assert got[: len(alone)] == alone


@_PROPS
@given(_ANY)
def test_normalizers_are_total_and_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
    phrase = normalize_phrase(text)
    assert normalize_phrase(phrase) == phrase
    path = normalize_path(text)
    assert normalize_path(path) == path
    assert not path.startswith("/") and not path.endswith("/") and "//" not in path


@_PROPS
@given(_ANY, _ANY)
def test_path_functions_are_total(applies_to: str, scope: str) -> None:
    assert isinstance(path_covers(applies_to, scope), bool)
    assert path_covers(applies_to, applies_to)  # everything covers itself
    assert path_covers("", scope)
    assert path_specificity(applies_to) >= 0


@_PROPS
@given(_ANY, _ANY, _ANY)
def test_a_phrase_matches_any_query_that_contains_it(phrase: str, before: str, after: str) -> None:
    needed = set(phrase_terms(phrase)) - T.STOPWORDS
    if not needed:
        return
    query = set(query_terms(before, f" {phrase} ", after, cap=10_000))
    assert needed <= query


@_PROPS
@given(_ANY)
def test_content_terms_are_query_terms_of_the_same_text(text: str) -> None:
    assert set(content_terms(text)) <= set(query_terms(text, cap=10_000))


@_PROPS
@given(st.text(alphabet="abcehinrstuxy", max_size=12))
def test_fold_plural_is_idempotent(word: str) -> None:
    once = fold_plural(word)
    assert fold_plural(once) == once


@_PROPS
@given(_ANY)
def test_emitted_terms_are_already_plural_folded(text: str) -> None:
    for term in query_terms(text) + content_terms(text) + phrase_terms(text):
        assert fold_plural(term) == term or term in T.STOPWORDS


def test_long_identifiers_match_like_short_ones() -> None:
    ident = "parse" + "Really" * 12 + "LongUserConfig"  # longer than the token cache limit
    assert len(ident) > 64
    snake = "_".join(split_identifier(ident))
    assert matches(ident, f"call {snake}() now")
    assert not matches(ident, f"call {ident.lower()}() now")  # no case boundaries: no parts
    assert matches(ident, f"call {ident}() now")
    assert matches("user config", f"call {ident}() now")


def test_large_repetitive_input_stays_fast() -> None:
    import time

    text = "the memory schema is not compatible with parseUserConfig, " * 2000  # ~120 KB
    start = time.perf_counter()
    assert query_terms(text) == ["memory", "schema", "compatible", "parseuserconfig", "parse", "user", "config"]
    assert len(content_terms(text)) == 7
    assert time.perf_counter() - start < 5.0
