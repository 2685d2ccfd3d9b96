"""The Memory quality corpus: bilingual conversations (Chinese, English, mixed), the candidates a
scripted model proposes for them (right and deliberately wrong) and the expected outcome.

Each `Case` is a few turns; each `Cand` is one candidate the scripted model proposes when the
batch holds turn `at`, with its sources as `(turn index, role, quote)` and `expect` either "kept"
or the semantic-gate / policy rule that must refuse it. Expected active items are the kept
candidates' kinds unless `items` overrides them; `hits` are `(query, subject)` pairs
`memory search` must find, `misses` queries that must find nothing; `consolidate` changes the
primary consolidation reply (the repair is honest) and `consolidation_rule` is the rule the
repair request must carry; `violation` an extraction contract rule sent to the one repair.

A kept candidate's `lasting` (when set) is the standing the evidence gives it: True = stored `hard`
+ `always` whatever the model proposed, False = `soft` + `on_match`.

`round29=True` marks a case written in issue 29's round: a sentence of our own for each mechanism the gate
gained (withdrawn, relayed, ironic, complaint/question mood, policy vs fact, confirmations, "Area: rule"
bullets, standing) and the look-alike a careless implementation gets wrong.
`round29b=True` marks a case written in issue 29's second round (irony without a marker word, policy in
the present tense, aliases that add, a decision kept without an English alias, reversal and bare "ok"
adoptions) and its look-alike.
`round_two_wrong=True` marks a round-three case that the round-two gate got wrong, measured the same way.
`round_one_wrong=True` marks a round-two case (issue #19, generalization) that the round-one
evidence gate got wrong, measured the same way against that gate's code.
`careless=True` marks a case the validator before the semantic gate got wrong (it stored the
wrong candidate, or missed the refusal the case names; measured by running the corpus against
that code: every flagged case and no other fails there); `trap=True` marks a legitimate form a naive marker matcher would refuse
("先写测试再写实现", "Always use tabs, OK?", "check whether…", "尽可能"); `legit=True` marks every
legitimate form that must be kept (a failing one is a false refusal)."""

from __future__ import annotations

from dataclasses import dataclass, field

KEPT = "kept"


@dataclass(frozen=True)
class Turn:
    user: str
    assistant: str = "OK."
    intent: str = "general_chat"
    paths: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cand:
    at: int
    kind: str
    subject: str
    statement: str
    src: tuple[tuple[int, str, str], ...]
    expect: str = KEPT
    origin: str = "explicit"
    strength: str = "soft"
    recall_mode: str = "on_match"
    paths: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    content: str | None = None
    roles: tuple[str, ...] = ()
    lasting: bool | None = None  # kept: True = must be stored hard + always, False = soft + on_match


@dataclass(frozen=True)
class Case:
    id: str
    lang: str  # zh | en | mixed
    turns: tuple[Turn, ...]
    cands: tuple[Cand, ...]
    careless: bool = False
    trap: bool = False
    legit: bool = False
    round_one_wrong: bool = False  # the round-one evidence gate got it wrong (measured against its code)
    round_two_wrong: bool = False  # the round-two gate got it wrong (issue #19 round three; measured against its code)
    round29: bool = False  # written in issue 29's round (deliverables 1 and 3): a mechanism's sentence or its look-alike
    round29b: bool = False  # written in issue 29's second round: a mechanism's sentence or its look-alike
    repair: tuple[Cand, ...] | None = None
    consolidate: dict = field(default_factory=dict)
    consolidation_rule: str | None = None
    violation: str | None = None
    items: tuple[str, ...] | None = None
    forbidden: tuple[str, ...] = ()
    hits: tuple[tuple[str, str], ...] = ()
    misses: tuple[str, ...] = ()
    revisions: dict = field(default_factory=dict)


P, D, X = "user_preference", "project_decision", "discussion_context"


def u(i: int, quote: str) -> tuple[int, str, str]:
    return (i, "user", quote)


def a(i: int, quote: str) -> tuple[int, str, str]:
    return (i, "assistant", quote)


def t(user: str, assistant: str = "OK.", **kw) -> Turn:
    return Turn(user, assistant, **kw)


def c(kind: str, subject: str, statement: str, *src: tuple[int, str, str], at: int | None = None, **kw) -> Cand:
    return Cand(at=max(i for i, _, _ in src) if at is None else at, kind=kind, subject=subject, statement=statement,
                src=src, **kw)


def one(id: str, lang: str, user: str, cand_kind: str, subject: str, statement: str, quote: str | None = None, *,
        expect: str = KEPT, assistant: str = "OK.", **kw) -> Case:
    """A one-turn case with one candidate quoting `quote` (default: the whole user text)."""
    ckw = {k: kw.pop(k) for k in ("aliases", "keywords", "paths", "strength", "recall_mode", "origin", "content",
                                  "lasting") if k in kw}
    cand = c(cand_kind, subject, statement, u(0, quote or user), expect=expect, **ckw)
    forbidden = kw.pop("forbidden", () if expect == KEPT else (cand_kind,))
    return Case(id, lang, (t(user, assistant),), (cand,), forbidden=forbidden, **kw)


ZH_SCHEMA = "旧 memory schema 不兼容，直接删除。"
ZH_SCHEMA_Q = "旧 memory schema 不兼容，直接删除"
REPEAT = "Don't use var; use let for block scope."


def _schema(aliases: tuple[str, ...], expect: str = KEPT) -> Cand:
    return c(D, "旧 memory schema", ZH_SCHEMA_Q, u(0, ZH_SCHEMA_Q), aliases=aliases, expect=expect)


def _reviews(*extra: Turn) -> tuple[Turn, ...]:
    return tuple(Turn(REPEAT if i < 3 else "", "Patched.", intent="patch_revise", paths=(p,), keys=(k,))
                 for i, (p, k) in enumerate((("src/a.js", "scan-1:F1"), ("src/b.js", "scan-1:F2"),
                                             ("src/c.js", "scan-2:F7")))) + extra


def _inferred(expect: str = KEPT) -> Cand:
    return Cand(at=2, kind=P, subject="let over var", statement="Prefer let over var for block scope.",
                src=(u(0, "use let"), u(1, "use let"), u(2, "use let")), origin="inferred_repetition",
                keywords=("let", "var"), expect=expect)


def adopt(id: str, lang: str, proposal: str, reply: str, kind: str, subject: str, statement: str, *,
          expect: str = KEPT, quote_a: str | None = None, quote_u: str | None = None, **kw) -> Case:
    """An assistant proposal (turn 0, after the user's question) and the user's reply (turn 1): an
    adopted-proposal candidate citing both."""
    ckw = {k: kw.pop(k) for k in ("aliases", "keywords", "strength", "recall_mode", "lasting") if k in kw}
    cand = c(kind, subject, statement, a(0, quote_a or proposal), u(1, quote_u or reply), origin="adopted_proposal",
             expect=expect, **ckw)
    forbidden = kw.pop("forbidden", () if expect == KEPT else (kind,))
    return Case(id, lang, (t("What would you do here?", proposal), t(reply, "OK.")), (cand,), forbidden=forbidden,
                **kw)


CASES: tuple[Case, ...] = (
    # ------------------------------------------------------------------ code facts
    one("zh-code-fact-pom", "zh", "pom.xml 里现在配置的是 Java 17。", D, "Java 17 配置", "项目使用 Java 17",
        "pom.xml 里现在配置的是 Java 17", expect="code_fact", aliases=("java 17 build target", "jdk version"),
        careless=True, misses=("Java 17",)),
    one("en-code-fact-gradle", "en", "build.gradle currently targets Java 21.", D, "Java 21 target",
        "The build targets Java 21.", expect="code_fact", careless=True, misses=("Java 21",)),
    one("en-code-fact-ci-python", "en", "The CI currently runs on Python 3.10.", P, "CI Python version",
        "CI runs on Python 3.10.", expect="code_fact", careless=True),
    one("zh-code-fact-db", "zh", "目前配置的数据库是 PostgreSQL 14。", D, "数据库配置", "数据库使用 PostgreSQL 14",
        expect="code_fact", aliases=("postgresql database choice", "database engine"), careless=True),
    one("mixed-code-fact-react", "mixed", "我们的 package.json 现在用的是 React 18。", D, "React 版本",
        "前端使用 React 18", expect="code_fact", aliases=("react 18 frontend framework",), careless=True),
    one("en-file-name-subject", "en", "Keep pom.xml tidy and sorted.", P, "pom.xml", "Keep pom.xml tidy and sorted.",
        expect="code_fact", careless=True),
    one("en-code-fact-settings", "en", "The timeout is set to 30 seconds in settings.py.", D, "request timeout",
        "The request timeout is 30 seconds.", expect="code_fact", careless=True),
    Case("en-discussion-code-fact-currently", "en",
         (t("Should we change how config is loaded? Let's keep discussing it.", "Sure."),),
         (c(X, "config loading", "Currently config is loaded from YAML by the loader; switch formats?",
            u(0, "Should we change how config is loaded?"), expect="code_fact"),),
         careless=True, forbidden=(X,)),
    Case("zh-discussion-code-fact", "zh", (t("配置加载方式要不要改？以后再讨论。", "好的。"),),
         (c(X, "配置加载", "目前配置由 YAML 加载，是否更换格式", u(0, "配置加载方式要不要改？"), expect="code_fact"),),
         careless=True, forbidden=(X,)),
    one("en-legit-target-from-now-on", "en", "From now on the build targets Java 21.", D, "Java version",
        "The build targets Java 21 from now on.", legit=True, hits=(("Java version", "Java version"),)),
    one("zh-legit-java-21", "zh", "以后统一用 Java 21 编译。", D, "Java 版本", "以后统一用 Java 21 编译",
        aliases=("java 21 build", "compile target"), legit=True, hits=(("compile target", "Java 版本"),)),
    one("en-legit-path-scope", "en", "Always use tabs in src/legacy/*.py files.", P, "legacy indentation",
        "Use tabs for indentation in src/legacy/*.py.", paths=("src/legacy/*.py",), legit=True,
        hits=(("legacy indentation", "legacy indentation"),)),
    one("mixed-legit-path-scope", "mixed", "src/api/ 下面的代码不要用 print，用 logging。", P, "src/api 日志",
        "src/api/ 下面的代码不要用 print，用 logging", paths=("src/api/",), legit=True,
        hits=(("logging", "src/api 日志"),), keywords=("logging", "print")),
    # ------------------------------------------------------------------ one-off scope
    one("en-one-off-this-answer", "en", "For this answer, keep it short.", P, "Short answers",
        "Keep answers short.", expect="one_off_scope", careless=True, misses=("short answers",)),
    one("en-one-off-this-time", "en", "This time, skip the tests.", P, "tests", "Skip the tests.",
        expect="one_off_scope"),
    one("en-one-off-for-now", "en", "For now, just print the errors.", P, "error output", "Print the errors.",
        expect="one_off_scope"),
    one("en-one-off-this-reply", "en", "Answer in bullet points in this reply.", P, "bullet point answers",
        "Answer in bullet points.", expect="one_off_scope", careless=True),
    one("en-one-off-temporarily", "en", "Temporarily disable the flaky test.", D, "flaky test",
        "Disable the flaky test.", expect="one_off_scope", careless=True),
    one("zh-one-off-this-time", "zh", "这次先不要写测试。", P, "测试", "不要写测试", expect="one_off_scope"),
    one("zh-one-off-this-answer", "zh", "这个回答用英文。", P, "回答语言", "回答用英文", expect="one_off_scope",
        careless=True),
    one("zh-one-off-xian", "zh", "先用 print 调试一下。", P, "调试方式", "用 print 调试", expect="one_off_scope",
        careless=True),
    one("zh-one-off-zanshi", "zh", "暂时关掉类型检查。", D, "类型检查", "关掉类型检查", expect="one_off_scope",
        aliases=("disable type checking",), careless=True),
    one("mixed-one-off-here", "mixed", "这里用 f-string 就行。", D, "f-string", "用 f-string",
        aliases=("use f-string formatting", "string formatting"), expect="one_off_scope"),
    Case("en-one-off-beside-lasting", "en",
         (t("For this answer, keep it short. Going forward, always include type hints.", "Sure."),),
         (c(P, "Short answers", "Keep answers short.", u(0, "For this answer, keep it short."),
            expect="one_off_scope"),
          c(P, "type hints", "Always include type hints.", u(0, "Going forward, always include type hints."),
            strength="hard")),
         careless=True, hits=(("type hints", "type hints"),), misses=("short answers",)),
    Case("zh-one-off-beside-lasting", "zh", (t("这次先跳过 lint。以后提交前都要跑 lint。", "好的。"),),
         (c(P, "跳过 lint", "跳过 lint", u(0, "这次先跳过 lint"), expect="one_off_scope"),
          c(P, "提交前 lint", "以后提交前都要跑 lint", u(0, "以后提交前都要跑 lint"), keywords=("lint",))),
         hits=(("lint", "提交前 lint"),)),
    one("zh-legit-xian-sequence", "zh", "以后都先写测试再写实现。", P, "测试先行", "以后都先写测试再写实现",
        keywords=("tdd", "测试"), legit=True, trap=True, hits=(("tdd", "测试先行"),)),
    one("zh-legit-youxian", "zh", "优先使用 pathlib 处理路径。", P, "路径处理", "优先使用 pathlib 处理路径",
        keywords=("pathlib",), legit=True, trap=True, hits=(("pathlib", "路径处理"),)),
    one("en-legit-please", "en", "Please always answer in English.", P, "answer language",
        "Always answer in English.", legit=True, strength="hard", hits=(("answer language", "answer language"),)),
    one("zh-legit-buyao", "zh", "不要在代码里写死密钥。", P, "密钥", "不要在代码里写死密钥", keywords=("secrets",),
        legit=True, hits=(("secrets", "密钥"),)),
    # ------------------------------------------------------------------ undecided, questions, hedges
    Case("en-undecided-vector-db", "en",
         (t("We have not decided whether to use a vector database. Let's continue next week.", "Fine."),),
         (c(D, "vector database", "Use a vector database.",
            u(0, "We have not decided whether to use a vector database."), expect="undecided"),
          c(X, "vector database question", "Open question: whether to use a vector database.",
            u(0, "We have not decided whether to use a vector database."))),
         careless=True, forbidden=(D,), hits=(("vector database", "vector database question"),)),
    Case("zh-undecided-redis", "zh", (t("还没决定要不要上 Redis，下次再聊。", "好的。"),),
         (c(D, "Redis 缓存", "使用 Redis 做缓存", u(0, "还没决定要不要上 Redis"), aliases=("redis cache adoption",),
            expect="undecided"),
          c(X, "Redis", "是否引入 Redis 尚未决定", u(0, "还没决定要不要上 Redis"))),
         careless=True, forbidden=(D,), hits=(("Redis", "Redis"),)),
    Case("en-assistant-conclusion-toml", "en",
         (t("Should we switch to TOML? Not sure yet.", "We have decided: TOML it is."),),
         (c(D, "config format", "The project uses TOML for configuration.",
            u(0, "Should we switch to TOML?"), expect="assistant_conclusion"),
          c(D, "config format decided", "Use TOML.", a(0, "We have decided: TOML it is."),
            expect="current_batch_source")),
         careless=True, forbidden=(D, P), misses=("TOML",)),
    one("zh-undecided-shifou", "zh", "是否要把日志改成 JSON 格式？", P, "日志格式", "日志使用 JSON 格式",
        expect="undecided", careless=True),
    one("en-undecided-should-we", "en", "Should we drop Python 3.8 support?", D, "Python 3.8 support",
        "Drop Python 3.8 support.", expect="undecided", careless=True),
    one("en-hedge-maybe", "en", "Maybe we should use Poetry for packaging.", D, "packaging tool",
        "Use Poetry for packaging.", expect="hedged", careless=True),
    one("zh-hedge-yexu", "zh", "也许可以试试 Ruff 做 lint。", P, "lint 工具", "用 Ruff 做 lint", expect="hedged",
        careless=True),
    one("en-question-what", "en", "What indentation does this project use?", P, "indentation",
        "Use the project's indentation.", expect="user_question", careless=True),
    one("zh-question-shenme", "zh", "项目里的缩进用什么？", P, "缩进", "项目缩进", expect="user_question",
        careless=True),
    one("en-info-request", "en", "Tell me how config loading works.", P, "config loading",
        "Explain config loading.", expect="request_for_info", careless=True),
    one("zh-info-request", "zh", "解释一下这个缓存是怎么工作的。", D, "缓存", "缓存的工作方式",
        aliases=("cache design explanation",), expect="request_for_info", careless=True),
    one("en-legit-question-tag", "en", "Always use tabs, OK?", P, "indentation", "Always use tabs.",
        strength="hard", legit=True, trap=True, hits=(("indentation", "indentation"),)),
    one("zh-legit-question-tag", "zh", "以后都用四个空格缩进，好吗？", P, "缩进", "以后都用四个空格缩进",
        keywords=("indentation",), legit=True, trap=True, hits=(("indentation", "缩进"),)),
    one("en-legit-go-with", "en", "We'll go with PostgreSQL for the main database.", D, "main database",
        "Use PostgreSQL for the main database.", legit=True, hits=(("PostgreSQL", "main database"),)),
    one("en-legit-lets-use", "en", "Let's use pytest for all new tests.", D, "test framework",
        "Use pytest for all new tests.", legit=True, hits=(("test framework", "test framework"),)),
    one("en-legit-whether-check", "en", "Always check whether the input is None before using it.", P,
        "input checks", "Always check whether the input is None.", legit=True, trap=True,
        hits=(("input checks", "input checks"),)),
    one("zh-legit-shifou-check", "zh", "始终检查输入是否为空。", P, "输入检查", "始终检查输入是否为空",
        keywords=("null check",), legit=True, trap=True, hits=(("null check", "输入检查"),)),
    one("en-legit-hedge-after-rule", "en", "Never use eval because it might be unsafe.", P, "eval",
        "Never use eval.", legit=True, trap=True, hits=(("eval", "eval"),)),
    one("zh-legit-jinkeneng", "zh", "尽可能用类型注解。", P, "类型注解", "尽可能用类型注解", keywords=("type hints",),
        legit=True, trap=True, hits=(("type hints", "类型注解"),)),
    one("en-legit-polite-request", "en", "Could you please always reply in English from now on?", P,
        "reply language", "Always reply in English.", legit=True, trap=True,
        hits=(("reply language", "reply language"),)),
    # ------------------------------------------------------------------ acknowledgements and adoption
    Case("zh-ack-continue", "zh",
         (t("缩进用什么好？", "我建议项目统一使用 tabs 缩进。"), t("继续吧", "好的。")),
         (c(D, "缩进", "项目统一使用 tabs 缩进", u(1, "继续吧"), aliases=("tab indentation policy",),
            expect="acknowledgement_only"),),
         careless=True, forbidden=(D,)),
    Case("zh-legit-adopt-continue", "zh",
         (t("缩进用什么好？", "我建议项目统一使用 tabs 缩进。"), t("继续吧", "好的。")),
         (c(D, "缩进", "项目统一使用 tabs 缩进", a(0, "我建议项目统一使用 tabs 缩进"), u(1, "继续吧"),
            origin="adopted_proposal", aliases=("tab indentation policy",)),),
         legit=True, hits=(("tab indentation policy", "缩进"),)),
    one("en-ack-sounds-good", "en", "Sounds good.", P, "answer style", "Give detailed answers.",
        expect="acknowledgement_only", careless=True),
    one("zh-ack-thanks", "zh", "好的，谢谢", D, "部署流程", "部署前先跑测试", aliases=("deploy pipeline tests",),
        expect="acknowledgement_only", careless=True),
    Case("en-legit-adopt", "en",
         (t("How should we version the API?", "I propose we version the API in the URL path, like /v2/users."),
          t("Sounds good, let's do that.", "Recorded.")),
         (c(D, "API versioning", "Version the API in the URL path.",
            a(0, "I propose we version the API in the URL path"), u(1, "Sounds good, let's do that."),
            origin="adopted_proposal"),),
         legit=True, hits=(("API versioning", "API versioning"),)),
    Case("zh-legit-adopt", "zh",
         (t("错误应该怎么返回？", "我建议所有错误响应都使用 RFC 7807 格式。"), t("同意，就按这个方案定下来。", "好的。")),
         (c(D, "错误响应格式", "所有错误响应都使用 RFC 7807 格式", a(0, "我建议所有错误响应都使用 RFC 7807 格式"),
            u(1, "同意，就按这个方案定下来"), origin="adopted_proposal",
            aliases=("use problem details for error responses", "error responses")),),
         legit=True, hits=(("error responses", "错误响应格式"),)),
    Case("en-adopt-unsure", "en",
         (t("What about old Pythons?", "I suggest we drop Python 3.8 support."), t("Should we? I'm not sure.", "ok")),
         (c(D, "Python 3.8 support", "Drop Python 3.8 support.", a(0, "I suggest we drop Python 3.8 support."),
            u(1, "Should we? I'm not sure."), origin="adopted_proposal", expect="not_confirmed"),),
         careless=True, forbidden=(D,)),
    Case("en-adopted-discussion", "en", (t("Should we add a plugin system? Let's come back to it.", "Maybe."),),
         (c(X, "plugin system", "Open question: add a plugin system?",
            u(0, "Should we add a plugin system?"), origin="adopted_proposal", expect="discussion_origin"),),
         careless=True, forbidden=(X,)),
    # ------------------------------------------------------------------ assistant-only conclusions
    Case("en-discussion-assistant-decided", "en",
         (t("Should we switch to TOML? Not sure yet.", "We have decided: TOML it is."),),
         (c(X, "config format", "TOML was chosen by the assistant; it is decided.",
            u(0, "Should we switch to TOML?"), expect="assistant_conclusion"),),
         careless=True, forbidden=(X,)),
    Case("zh-discussion-assistant-decided", "zh",
         (t("要不要把配置从 YAML 换成 TOML，还没想好。", "建议直接换成 TOML，已决定。"),),
         (c(X, "配置格式", "已决定换成 TOML", u(0, "要不要把配置从 YAML 换成 TOML，还没想好"),
            expect="assistant_conclusion"),),
         careless=True, forbidden=(X,)),
    Case("en-discussion-assistant-terms", "en",
         (t("Should we add caching? Let's think about it later.", "Use Redis with a five minute TTL and LRU eviction."),),
         (c(X, "caching", "Open: caching with Redis, LRU eviction and a five minute TTL.",
            u(0, "Should we add caching?"), expect="assistant_conclusion"),),
         careless=True, forbidden=(X,)),
    Case("en-legit-discussion", "en",
         (t("Should we split the monolith into services? Let's continue next week.", "It depends on the team."),),
         (c(X, "monolith split", "Open question: split the monolith into services?",
            u(0, "Should we split the monolith into services?")),),
         legit=True, hits=(("split the monolith", "monolith split"),)),
    Case("zh-legit-discussion", "zh",
         (t("我在考虑要不要把配置从 YAML 换成 TOML，还没想好，下次继续讨论。", "TOML is simpler; I recommend switching now."),),
         (c(X, "配置格式", "待讨论：配置是否从 YAML 换成 TOML", u(0, "要不要把配置从 YAML 换成 TOML，还没想好")),),
         legit=True, hits=(("YAML or TOML", "配置格式"),)),
    # ------------------------------------------------------------------ consolidation escalation
    Case("en-consolidation-origin-escalation", "en", (t("From now on, all logs must be JSON.", "OK."),),
         (c(D, "log format", "All logs must be JSON.", u(0, "From now on, all logs must be JSON.")),),
         consolidate={"origin": "adopted_proposal"}, consolidation_rule="origin_escalation", careless=True),
    Case("en-consolidation-kind-escalation", "en",
         (t("Should we move secrets to a vault? Let's discuss later.", "OK."),),
         (c(X, "secrets vault", "Open question: move secrets to a vault?", u(0, "Should we move secrets to a vault?")),),
         consolidate={"kind": "project_decision"}, consolidation_rule="kind_escalation", forbidden=(D,)),
    # (issue 29: a kept preference is hard itself; a discussion stays soft, so consolidation may not raise it)
    Case("en-consolidation-strength-escalation", "en",
         (t("Should the partner API be GraphQL or REST? Haven't decided yet.", "OK."),),
         (c(X, "partner API style", "Open point: GraphQL or REST for the partner API.",
            u(0, "Should the partner API be GraphQL or REST? Haven't decided yet.")),),
         consolidate={"strength": "hard"}, consolidation_rule="strength_escalation"),
    Case("en-consolidation-empty-subject", "en", (t("Never commit generated files.", "OK."),),
         (c(P, "generated files", "Never commit generated files.", u(0, "Never commit generated files.")),),
         consolidate={"subject": "???"}, consolidation_rule="empty_identity", careless=True,
         hits=(("generated files", "generated files"),)),
    Case("en-consolidation-discussion-conclusion", "en",
         (t("Should we adopt GraphQL? Let's decide next sprint.", "REST is fine."),),
         (c(X, "GraphQL", "Open question: adopt GraphQL?", u(0, "Should we adopt GraphQL?")),),
         consolidate={"statement": "GraphQL was rejected; decided to stay on REST."},
         consolidation_rule="assistant_conclusion", careless=True, hits=(("GraphQL", "GraphQL"),)),
    Case("zh-consolidation-origin-escalation", "zh", (t("以后所有接口都必须返回 JSON。", "好的。"),),
         (c(D, "接口格式", "以后所有接口都必须返回 JSON", u(0, "以后所有接口都必须返回 JSON"),
            aliases=("api responses return json",)),),
         consolidate={"origin": "adopted_proposal"}, consolidation_rule="origin_escalation", careless=True,
         hits=(("api responses return json", "接口格式"),)),
    # ------------------------------------------------------------------ empty identity and empty proof
    one("en-empty-subject-zwsp", "en", "Always use tabs.", P, "\u200b", "Always use tabs.",
        expect="empty_identity", careless=True),
    one("en-empty-subject-question-marks", "en", "Always use tabs.", P, "???", "Always use tabs.",
        expect="empty_identity", careless=True),
    one("en-empty-subject-dashes", "en", "Always use tabs.", P, "---", "Always use tabs.",
        expect="empty_identity", careless=True),
    one("en-empty-subject-spaces", "en", "Always use tabs.", P, "   ", "Always use tabs.",
        expect="empty_identity", careless=True),
    one("zh-empty-statement", "zh", "以后都用 tab。", P, "缩进", "。。。", expect="empty_identity", careless=True),
    one("en-whitespace-quote", "en", "Always use tabs.   Really.", P, "indentation", "Always use tabs.", "   ",
        expect="quote_without_word", careless=True),
    one("en-punctuation-quote", "en", "Always use tabs!!!", P, "indentation", "Always use tabs.", "!!!",
        expect="quote_without_word", careless=True),
    # ------------------------------------------------------------------ Chinese decisions' English aliases
    Case("zh-alias-old", "zh", (t(ZH_SCHEMA, "好的。"),), (_schema(("old",)),),
         repair=(_schema(("backward compatibility", "delete legacy schema")),),
         violation="cjk_decision_needs_english_alias", careless=True,
         hits=(("backward compatibility", "旧 memory schema"),)),
    Case("zh-alias-legacy", "zh", (t(ZH_SCHEMA, "好的。"),), (_schema(("legacy",)),),
         repair=(_schema(("backward compatibility",)),), violation="cjk_decision_needs_english_alias",
         careless=True, hits=(("backward compatibility", "旧 memory schema"),)),
    Case("zh-alias-copied", "zh", (t(ZH_SCHEMA, "好的。"),), (_schema(("memory schema",)),),
         repair=(_schema(("backward compatibility", "delete legacy schema")),),
         violation="cjk_decision_needs_english_alias", hits=(("delete legacy schema", "旧 memory schema"),)),
    Case("zh-legit-alias-spec", "zh", (t(ZH_SCHEMA, "好的。"),), (_schema(("backward compatibility",)),),
         legit=True, hits=(("backward compatibility", "旧 memory schema"),)),
    one("zh-legit-alias-tabs", "zh", "项目统一用 tabs 缩进。", D, "缩进方式", "项目统一用 tabs 缩进",
        aliases=("tab indentation", "use tabs everywhere"), legit=True, hits=(("tab indentation", "缩进方式"),)),
    one("zh-legit-alias-json", "zh", "所有接口都必须返回 JSON。", D, "接口返回格式", "所有接口都必须返回 JSON",
        aliases=("api returns json", "json responses"), legit=True, hits=(("json responses", "接口返回格式"),)),
    # ------------------------------------------------------------------ the user's words off the meaning
    one("en-off-meaning", "en", "I like short functions.", P, "indentation", "Use tabs for indentation.",
        expect="off_meaning", careless=True),
    one("zh-off-meaning", "zh", "我喜欢短小的函数。", P, "缩进", "缩进用 tab", expect="off_meaning", careless=True),
    one("en-off-meaning-thanks", "en", "Thanks for explaining the parser.", P, "type hints",
        "Always add type hints.", expect="no_directive", careless=True),
    # ------------------------------------------------------------------ inferred repetition (repair reviews)
    Case("en-legit-inferred", "en", _reviews(), (_inferred(),), legit=True, hits=(("let", "let over var"),)),
    Case("en-inferred-counter-example", "en",
         _reviews(Turn("Keep var in src/d.js, it is intentional.", "Kept.", intent="patch_revise",
                       paths=("src/d.js",), keys=("scan-2:F9",))),
         (_inferred("inferred_counter_example"),), careless=True, forbidden=(P,)),
    Case("zh-inferred-counter-example", "zh",
         _reviews(Turn("这里保留 var，不要改。", "已保留。", intent="patch_revise", paths=("src/e.js",),
                       keys=("scan-3:F2",))),
         (_inferred("inferred_counter_example"),), careless=True, forbidden=(P,)),
    Case("zh-repair-one-off", "zh",
         (Turn("这里不要用 var，改成 let。", "已修改。", intent="patch_revise", paths=("src/a.js",), keys=("s:1",)),),
         (c(P, "let 代替 var", "不要用 var，改成 let", u(0, "不要用 var，改成 let"), expect="one_off_scope"),),
         forbidden=(P,)),
    # ------------------------------------------------------------------ more legitimate forms
    one("en-legit-dont-ever", "en", "Don't ever commit generated files.", P, "generated files",
        "Don't commit generated files.", legit=True, hits=(("generated files", "generated files"),)),
    one("mixed-legit-commit-english", "mixed", "以后 commit message 都用英文写。", P, "commit message 语言",
        "以后 commit message 都用英文写", keywords=("commit message",), legit=True,
        hits=(("commit message", "commit message 语言"),)),
    one("en-legit-utc", "en", "In this project, all timestamps must be UTC.", D, "timestamps",
        "All timestamps must be UTC.", strength="hard", legit=True, hits=(("timestamps", "timestamps"),)),
    one("en-legit-snake-case", "en", "Please use snake_case for all Python function names.", P,
        "function naming", "Use snake_case for Python function names.", legit=True,
        hits=(("snake_case", "function naming"),)),
    one("en-legit-keep-supporting", "en", "We'll keep supporting Python 3.9 until 2026.", D, "Python 3.9 support",
        "Keep supporting Python 3.9 until 2026.", legit=True, hits=(("Python 3.9 support", "Python 3.9 support"),)),
    one("en-legit-changelog", "en", "From now on, every PR needs a changelog entry.", D, "changelog entries",
        "Every PR needs a changelog entry.", strength="hard", legit=True, hits=(("changelog entries", "changelog entries"),)),
    one("zh-legit-buyao-print", "zh", "不要用 print 调试，用 logging。", P, "调试日志", "不要用 print 调试，用 logging",
        keywords=("logging",), legit=True, hits=(("logging", "调试日志"),)),
    one("mixed-legit-pytest", "mixed", "测试统一用 pytest，不要用 unittest。", D, "测试框架",
        "测试统一用 pytest，不要用 unittest", aliases=("use pytest not unittest", "test framework"), legit=True,
        hits=(("test framework", "测试框架"),)),
    Case("en-fact-beside-intent", "en",
         (t("pom.xml currently pins Jackson 2.15; from now on we upgrade dependencies every month.", "Noted."),),
         (c(D, "Jackson version", "Jackson is pinned to 2.15.", u(0, "pom.xml currently pins Jackson 2.15"),
            expect="code_fact"),
          c(D, "dependency upgrades", "Upgrade dependencies every month.",
            u(0, "from now on we upgrade dependencies every month"))),
         careless=True, hits=(("dependency upgrades", "dependency upgrades"),), misses=("Jackson",)),
    one("en-legit-do-not", "en", "Do not use eval.", P, "eval usage", "Do not use eval.", legit=True,
        hits=(("eval usage", "eval usage"),)),
    one("en-legit-should-target", "en", "Tests should target the public API.", P, "test scope",
        "Tests should target the public API.", legit=True, trap=True, hits=(("test scope", "test scope"),)),
    one("en-legit-kind-of", "en", "This kind of error must be logged.", D, "error logging",
        "This kind of error must be logged.", legit=True, trap=True, hits=(("error logging", "error logging"),)),
    one("en-task-request", "en", "Could you fix the bug in the parser?", P, "parser bugs", "Fix parser bugs.",
        expect="user_question", careless=True),
    one("mixed-legit-snake-case-api", "mixed", "以后 API 返回值统一用 snake_case 字段。", D, "API 字段命名",
        "以后 API 返回值统一用 snake_case 字段", aliases=("snake_case api fields", "response field naming"),
        legit=True, hits=(("response field naming", "API 字段命名"),)),
    one("zh-legit-sql-params", "zh", "所有 SQL 都必须参数化，不要拼接字符串。", D, "SQL 参数化",
        "所有 SQL 都必须参数化，不要拼接字符串", aliases=("parameterized sql", "no string concatenation"),
        legit=True, hits=(("parameterized sql", "SQL 参数化"),)),
    one("mixed-legit-pytest-before-commit", "mixed", "commit 之前必须跑 pytest。", P, "commit 前测试",
        "commit 之前必须跑 pytest", keywords=("pytest",), legit=True, hits=(("pytest", "commit 前测试"),)),
    one("mixed-code-fact-django", "mixed", "我们现在用的是 Django 4.2。", D, "Django 版本", "项目使用 Django 4.2",
        aliases=("django framework version",), expect="code_fact", careless=True),
    one("mixed-code-fact-dockerfile", "mixed", "目前 Dockerfile 里的 base image 是 python:3.11-slim。", D,
        "base image", "base image 使用 python:3.11-slim", aliases=("docker base image choice",),
        expect="code_fact", careless=True),
    one("mixed-undecided-ci", "mixed", "要不要把 CI 从 Travis 换成 GitHub Actions？", D, "CI 平台",
        "CI 使用 GitHub Actions", aliases=("move ci to github actions",), expect="undecided", careless=True),
    one("mixed-one-off-pr", "mixed", "这次的 PR 先不加 changelog。", D, "changelog", "PR 不加 changelog",
        aliases=("skip changelog entries",), expect="one_off_scope"),
    one("mixed-legit-ok-with-content", "mixed", "OK，就用 uv 吧。", D, "包管理工具", "用 uv 管理依赖",
        aliases=("use uv for dependencies", "package manager"), keywords=("uv",), legit=True,
        hits=(("package manager", "包管理工具"),)),
    one("zh-hedge-try", "zh", "我觉得可以用 uv 试试。", P, "包管理工具", "用 uv 管理依赖", keywords=("uv",),
        expect="hedged", careless=True),
    one("mixed-legit-ruff", "mixed", "用 ruff 替代 flake8，以后都这样。", D, "linter", "用 ruff 替代 flake8",
        aliases=("replace flake8 with ruff", "linter choice"), legit=True, hits=(("linter choice", "linter"),)),
    one("en-hedge-guess", "en", "I guess tabs are fine.", P, "tabs", "Use tabs.", expect="hedged", careless=True),
    one("en-legit-i-think-should", "en", "I think we should always pin dependencies.", D, "dependency pinning",
        "Always pin dependencies.", legit=True, hits=(("dependency pinning", "dependency pinning"),)),
    # ------------------------------------------------------------------ revisions
    Case("en-revision", "en",
         (t("Use YAML for config files.", "OK."), t("Actually, from now on config files must be TOML.", "OK.")),
         (c(D, "config format", "Use YAML for config files.", u(0, "Use YAML for config files.")),
          Cand(at=1, kind=D, subject="config format", statement="Config files must be TOML.",
               src=(u(1, "from now on config files must be TOML"),))),
         items=(D,), legit=True, revisions={"config format": 2}, hits=(("config format", "config format"),)),
    Case("zh-revision", "zh",
         (t("日志统一用纯文本。", "好的。"), t("改一下：以后日志都用 JSON。", "好的。")),
         (c(D, "日志格式", "日志统一用纯文本", u(0, "日志统一用纯文本"), aliases=("plain text logs", "log format")),
          Cand(at=1, kind=D, subject="日志格式", statement="以后日志都用 JSON", src=(u(1, "以后日志都用 JSON"),),
               aliases=("json logs", "log format"))),
         items=(D,), legit=True, revisions={"日志格式": 2}, hits=(("json logs", "日志格式"),)),
    Case("zh-revision-refused-one-off", "zh",
         (t("日志统一用 JSON。", "好的。"), t("这次日志先用纯文本。", "好的。")),
         (c(D, "日志格式", "日志统一用 JSON", u(0, "日志统一用 JSON"), aliases=("json logs", "log format")),
          Cand(at=1, kind=D, subject="日志格式", statement="日志用纯文本", src=(u(1, "这次日志先用纯文本"),),
               aliases=("plain text logs", "log format"), expect="one_off_scope")),
         revisions={"日志格式": 1}, hits=(("json logs", "日志格式"),)),
    # ------------------------------------------------------------------ issue 19: evidence, not the absence of bad words
    # Each pair: the form the gate must refuse and its legitimate look-alike. Our own sentences, one per
    # mechanism (written for mechanisms the independent corpus exposed, never with its words).
    one("e19-en-negated-hedge", "en", "No ifs or buts: every migration ships a down script.", D,
        "migration rollback scripts", "Every migration ships a down script.", legit=True, lasting=True),
    one("e19-en-real-hedge", "en", "Maybe every migration should ship a down script.", D,
        "migration rollback scripts", "Every migration ships a down script.", expect="hedged"),
    one("e19-zh-no-doubt", "zh", "毫无疑问，所有密码都要加盐哈希。", D, "密码存储", "所有密码都要加盐哈希",
        aliases=("hash passwords with salt",), legit=True, lasting=True),
    one("e19-zh-non-negotiable", "zh", "所有服务都必须有健康检查接口，这个没什么好讨论的。", D, "健康检查接口",
        "所有服务都必须有健康检查接口", aliases=("require health check endpoints",), legit=True, lasting=True),
    one("e19-zh-still-to-discuss", "zh", "所有服务要不要都加健康检查接口，还得再讨论。", D, "健康检查接口",
        "所有服务都加健康检查接口", aliases=("require health check endpoints",), expect="undecided"),
    one("e19-en-decision-label", "en", "Final call: we're retiring the SOAP gateway.", D, "SOAP gateway",
        "Retire the SOAP gateway.", legit=True, lasting=True),
    one("e19-en-progressive-change", "en", "heads up, we're switching the mobile builds over to Fastlane", D,
        "mobile build tooling", "Switch the mobile builds to Fastlane.", legit=True),
    one("e19-en-progressive-state", "en", "We're using Fastlane for the iOS builds.", D, "mobile build tooling",
        "Use Fastlane for iOS builds.", expect="code_fact"),
    one("e19-zh-stop-maintaining", "zh", "这个老的导出接口我们不准备再维护了，相关代码直接砍掉。", D, "旧导出接口",
        "不再维护旧导出接口，删除相关代码", aliases=("stop maintaining legacy export API", "remove export endpoint code"),
        legit=True),
    one("e19-zh-nobody-uses-it", "zh", "这个老的导出接口已经没人用了。", D, "旧导出接口", "旧导出接口下线",
        aliases=("retire legacy export API",), expect="code_fact"),
    one("e19-en-relative-that", "en", "Add a Makefile target that runs the linters.", D, "lint target",
        "Add a Makefile target that runs the linters.", strength="hard", recall_mode="always", legit=True,
        lasting=True),  # issue 29: no "kept but lowered": a kept statement without a limit is hard + always
    one("e19-en-deictic-task", "en", "Add a docstring to this function.", P, "docstrings",
        "Add docstrings to functions.", expect="one_off_scope"),
    one("e19-en-negated-limit-declarative", "en",
        "Not only in the billing service: every service emits OpenTelemetry traces.", D, "tracing",
        "Every service emits OpenTelemetry traces.", legit=True, lasting=True),
    one("e19-en-quantified-fact", "en", "Every worker pod mounts the shared config volume.", D, "config volume",
        "Every worker pod mounts the shared config volume.", expect="code_fact"),
    one("e19-en-quantified-norm", "en", "Every public endpoint needs an OpenAPI example.", D, "OpenAPI examples",
        "Every public endpoint needs an OpenAPI example.", legit=True, lasting=True),
    one("e19-en-polite-lasting", "en",
        "Would you mind always linking the ADR when you mention an architecture decision? ty", P, "ADR links",
        "Always link the ADR when mentioning an architecture decision.", legit=True, lasting=True),
    one("e19-en-polite-task", "en", "Would you mind linking the ADR?", P, "ADR links", "Link the ADR.",
        expect="user_question"),
    one("e19-mixed-start-point", "mixed", "从这个 sprint 开始，所有 PR 都要附上截图。", D, "PR 截图",
        "所有 PR 都要附上截图", aliases=("require screenshots on every PR",), legit=True, lasting=True),
    one("e19-mixed-this-sprint", "mixed", "这个 sprint 先不用附截图。", D, "PR 截图", "PR 不用附截图",
        aliases=("skip PR screenshots",), expect="one_off_scope"),
    one("e19-en-reason-hedge", "en", "Always pin Docker base images by digest because tags might move.", D,
        "base image pinning", "Pin Docker base images by digest.", legit=True, lasting=True),
    one("e19-zh-even-one-line", "zh", "哪怕是一行的修改，也要先跑单元测试。", P, "单元测试", "任何修改都要先跑单元测试",
        legit=True, lasting=True),
    Case("e19-en-contrast-hotfix", "en",
         (t("Skip the screenshot for this hotfix, but every UI PR after it needs one.", "OK."),),
         (c(D, "hotfix screenshot", "Skip the screenshot.", u(0, "Skip the screenshot for this hotfix"),
            expect="one_off_scope"),
          c(D, "UI PR screenshots", "Every UI PR needs a screenshot.", u(0, "every UI PR after it needs one"),
            lasting=True)),
         legit=True, hits=(("UI PR screenshots", "UI PR screenshots"),), misses=("hotfix screenshot",)),
    one("e19-en-hedge-only-clause", "en", "cache API responses for five minutes, maybe", P, "API response cache",
        "Cache API responses for five minutes.", expect="hedged"),
    one("e19-en-remark-after-rule", "en", "Cache API responses for five minutes, it might save a few calls.", P,
        "API response cache", "Cache API responses for five minutes.", legit=True, lasting=True),
    Case("e19-en-doubt-comment", "en", (t("Put feature flags in LaunchDarkly. Still undecided.", "OK."),),
         (c(D, "feature flags", "Put feature flags in LaunchDarkly.", u(0, "Put feature flags in LaunchDarkly."),
            expect="undecided"),), forbidden=(D,)),
    Case("e19-en-question-is-no-comment", "en",
         (t("Put feature flags in LaunchDarkly. Should we also use it for experiments?", "OK."),),
         (c(D, "feature flags", "Put feature flags in LaunchDarkly.", u(0, "Put feature flags in LaunchDarkly.")),),
         legit=True),
    one("e19-en-either-or-question", "en", "are we squashing commits on merge, or rebasing?", D, "merge strategy",
        "Squash commits on merge.", expect="user_question"),
    one("e19-en-tagged-rule", "en", "Squash commits on merge from now on, ok?", D, "merge strategy",
        "Squash commits on merge.", legit=True, lasting=True),
    one("e19-en-until-event", "en", "Keep the old endpoint alive until the mobile release is out.", D,
        "old endpoint", "Keep the old endpoint alive.", expect="one_off_scope"),
    one("e19-en-until-year", "en", "Keep the v1 endpoints alive until 2027.", D, "v1 endpoints",
        "Keep the v1 endpoints alive until 2027.", legit=True),
    one("e19-en-rest-of-session", "en", "For the rest of this session, reply tersely.", P, "reply style",
        "Reply tersely.", expect="one_off_scope"),
    one("e19-zh-not-today", "zh", "今天先别发版。", D, "发版", "暂停发版", aliases=("pause releases",),
        expect="one_off_scope"),
    one("e19-en-hedge-with-every", "en", "We'll probably want structured logs in every service.", D,
        "structured logs", "Use structured logs in every service.", expect="hedged"),
    # adoption: an affirmative reply to a proposal (not a question, not a report)
    adopt("e19-adopt-offer-lasting", "en", "I can add a one-line risk note at the end of every review from now on.",
          "yes please", P, "review risk note", "End every review with a one-line risk note.", legit=True,
          lasting=True),
    adopt("e19-adopt-recommend", "en", "I'd recommend pinning the Terraform provider versions in the lock file.",
          "👍 do it", D, "Terraform providers", "Pin the Terraform provider versions in the lock file.", legit=True,
          strength="hard", recall_mode="always", lasting=True),
    adopt("e19-adopt-question", "en", "Would you like me to pin the provider versions?", "yes, sounds good", D,
          "Terraform providers", "Pin the provider versions.", expect="not_a_proposal"),
    adopt("e19-adopt-report", "en", "I've pinned the provider versions in versions.tf.", "great, thanks", D,
          "Terraform providers", "Pin the provider versions.", expect="not_a_proposal"),
    adopt("e19-adopt-deferral", "en", "I suggest moving the cron jobs to Airflow.",
          "good idea, but let me run it by the data team first", D, "job scheduler", "Move the cron jobs to Airflow.",
          expect="not_confirmed"),
    adopt("e19-adopt-negation", "en", "I suggest moving the cron jobs to Airflow.", "nah, cron is fine", D,
          "job scheduler", "Move the cron jobs to Airflow.", expect="not_confirmed"),
    adopt("e19-adopt-time-limit", "en", "How about freezing the schema while we migrate?",
          "ok, for this migration only", D, "schema freeze", "Freeze the schema while migrating.",
          expect="one_off_scope"),
    adopt("e19-zh-adopt-withdrawn", "zh", "建议把定时任务迁到 Airflow。", "算了，先不动", D, "定时任务",
          "定时任务迁到 Airflow", aliases=("move cron jobs to airflow",), expect="not_confirmed"),
    adopt("e19-zh-adopt-settled", "zh", "建议所有对外接口统一加上请求 ID。", "行，就这么定", D, "请求 ID",
          "所有对外接口统一加上请求 ID", aliases=("add request ids to public APIs",), legit=True, lasting=True),
    one("e19-zh-sequence-then", "zh", "写文档的时候先给例子再讲原理。", P, "文档结构", "写文档时先给例子再讲原理",
        legit=True, lasting=True),  # "…的时候" is a recurring condition: lasting (round two)
    one("e19-zh-for-now-then-see", "zh", "先用内存队列顶着再说。", D, "消息队列", "用内存队列", aliases=("use in-memory queue",),
        expect="one_off_scope"),
    adopt("e19-adopt-module-only", "en", "I suggest enabling strict mode in tsconfig for the whole repo.",
          "ok, only in this module", D, "TypeScript strict mode", "Enable strict mode in tsconfig.",
          expect="one_off_scope"),
    one("e19-en-verbless-norm", "en", "One migration per pull request.", D, "migrations per PR",
        "One migration per pull request.", legit=True),
    one("e19-en-fragment-after-fact", "en", "The service reads its settings from Vault, not from files.", D,
        "settings source", "Read settings from Vault, not from files.", expect="code_fact"),
    one("e19-en-never-past", "en", "We never shipped on a Friday.", D, "Friday releases", "Never ship on a Friday.",
        expect="code_fact"),
    one("e19-en-never-present", "en", "We never ship on a Friday.", D, "Friday releases", "Never ship on a Friday.",
        legit=True, lasting=True),
    one("e19-zh-capability", "zh", "这些脚本都能直接跑。", P, "脚本", "脚本直接运行", expect="code_fact"),
    one("e19-en-each-answer", "en", "Please don't restate my question at the start of each answer.", P,
        "answer openings", "Don't restate the question at the start of an answer.", legit=True, lasting=True),
    # discussion: an open point the user raised
    one("e19-discussion-is-a-rule", "en", "Always version protobuf packages.", X, "protobuf versioning",
        "Open question: version protobuf packages?", expect="discussion_not_open"),
    one("e19-discussion-weighing", "en",
        "I'm weighing Kafka against NATS for the event bus; let's talk it through next time.", X, "event bus",
        "Open: Kafka or NATS for the event bus", "I'm weighing Kafka against NATS for the event bus", legit=True),
    # ------------------------------------------------------------------ issue 19, round two: generalization
    # One mechanism per group (docs/memory.md, "Reading across clauses"), our own sentences in other
    # domains, each beside the look-alike that must still be refused. Written for the mechanisms the
    # lead described from the sealed set's failures, never with their words.
    one("r2-en-contracted-negated-limit", "en",
        "This isn't only for the search page — every list view supports keyboard navigation.", D,
        "keyboard navigation", "Every list view supports keyboard navigation.",
        "every list view supports keyboard navigation", legit=True, lasting=True, round_one_wrong=True),
    one("r2-en-stated-limit", "en", "It's only for the launch page — inline the critical CSS.", P, "critical CSS",
        "Inline the critical CSS.", expect="one_off_scope", round_one_wrong=True),
    one("r2-en-fronted-reason", "en", "I review most of these diffs on a tablet, so wrap prose at 80 columns.", P,
        "prose wrapping", "Wrap prose at 80 columns.", legit=True, round_one_wrong=True),
    one("r2-zh-reason-time-limit", "zh", "今天我用手机看，所以回复里别放表格。", P, "回复格式", "回复里别放表格",
        expect="one_off_scope"),
    one("r2-en-limit-attribute", "en", "Temporary feature toggles must carry an expiry date.", D, "feature toggles",
        "Temporary feature toggles must carry an expiry date.", legit=True, lasting=True, round_one_wrong=True),
    one("r2-zh-limit-attribute", "zh", "临时目录一律在任务结束后清理。", D, "临时目录", "临时目录一律在任务结束后清理",
        aliases=("clean up temp directories after each job",), legit=True, lasting=True, round_one_wrong=True),
    one("r2-en-limit-on-the-act", "en", "Add a temporary feature toggle for the beta banner.", P, "feature toggles",
        "Add a feature toggle for the beta banner.", expect="one_off_scope"),
    one("r2-en-emphasis-locative", "en", "No exceptions here: every cron job logs when it starts and ends.", D,
        "cron job logging", "Every cron job logs when it starts and ends.", legit=True, lasting=True,
        round_one_wrong=True),
    one("r2-en-bare-here", "en", "Here: log when the cron job starts.", D, "cron job logging",
        "Log when the cron job starts.", expect="one_off_scope"),
    one("r2-zh-step-order", "zh", "发起合并请求前先跑一遍单元测试。", P, "合并前测试", "发起合并请求前先跑单元测试",
        legit=True, round_one_wrong=True),
    one("r2-zh-negated-xian", "zh", "别先贴代码，先说思路。", P, "回答顺序", "先说思路再贴代码", legit=True,
        round_one_wrong=True),
    one("r2-zh-recurring-condition", "zh", "做代码评审的时候先看测试再看实现。", P, "评审顺序", "评审时先看测试再看实现",
        legit=True, lasting=True, round_one_wrong=True),
    one("r2-zh-xian-for-now", "zh", "先用 SQLite 凑合一下。", D, "数据库", "用 SQLite", aliases=("use sqlite",),
        expect="one_off_scope"),
    Case("r2-en-maintained-description", "en",
         (t("Release notes are generated from commit messages. Keep it that way.", "OK."),),
         (c(D, "release notes", "Release notes are generated from commit messages.",
            u(0, "Release notes are generated from commit messages."), lasting=True),),
         legit=True, round_one_wrong=True, hits=(("release notes", "release notes"),)),
    Case("r2-zh-maintained-description", "zh", (t("接口错误码都定义在 errors.go 里。以后也照这个来。", "好的。"),),
         (c(D, "错误码位置", "接口错误码都定义在 errors.go 里", u(0, "接口错误码都定义在 errors.go 里。"),
            aliases=("define error codes in errors.go",), lasting=True),),
         legit=True, round_one_wrong=True),
    Case("r2-en-corrected-description", "en",
         (t("Release notes are written by hand. Automate that.", "OK."),),
         (c(D, "release notes", "Release notes are written by hand.", u(0, "Release notes are written by hand."),
            expect="code_fact"),), forbidden=(D,)),
    one("r2-en-fronted-desire", "en", "for every public API change I want a migration note", P, "migration notes",
        "Every public API change comes with a migration note.", legit=True, lasting=True, round_one_wrong=True),
    one("r2-en-fronted-desire-local", "en", "for this API change I want a migration note", P, "migration notes",
        "API changes come with a migration note.", expect="one_off_scope", round_one_wrong=True),
    Case("r2-en-lasting-fragment", "en", (t("No vendored binaries in git. Ever.", "OK."),),
         (c(D, "vendored binaries", "No vendored binaries in git.", u(0, "No vendored binaries in git."),
            lasting=True),), legit=True, round_one_wrong=True),
    Case("r2-en-fragment-after-fact", "en", (t("The release build is signed. Always.", "OK."),),
         (c(D, "release signing", "Sign the release build.", u(0, "The release build is signed."),
            expect="code_fact"),), forbidden=(D,)),
    adopt("r2-adopt-relative-later", "en", "I suggest enabling Dependabot for the npm packages.",
          "sure, and the same for any repo we create later", D, "Dependabot", "Enable Dependabot for npm packages.",
          legit=True, lasting=True, round_one_wrong=True),
    adopt("r2-zh-adopt-relative-later", "zh", "建议所有服务都接入统一的配置中心。", "好，回头新建的服务也一样", D,
          "配置中心", "所有服务都接入统一的配置中心", aliases=("use the central config service for all services",),
          legit=True, lasting=True, round_one_wrong=True),
    adopt("r2-adopt-deferred", "en", "I suggest enabling Dependabot for the npm packages.",
          "sure, we'll wire it up later", D, "Dependabot", "Enable Dependabot for npm packages.",
          expect="not_confirmed"),
    one("r2-en-conversation-scope", "en", "For the remainder of our chat, skip the code comments.", P,
        "code comments", "Skip code comments.", expect="one_off_scope", round_one_wrong=True),
    one("r2-zh-conversation-scope", "zh", "这轮对话里都不用写注释。", P, "注释", "不用写注释", expect="one_off_scope",
        round_one_wrong=True),
    one("r2-zh-every-conversation", "zh", "以后所有对话都不用写客套话。", P, "客套话", "不用写客套话", legit=True,
        lasting=True),
    one("r2-en-system-habit", "en", "Cache always expires after an hour.", D, "cache expiry",
        "Cache entries expire after an hour.", expect="code_fact", round_one_wrong=True),
    one("r2-zh-system-habit", "zh", "定时任务每天都跑一次全量备份。", D, "全量备份", "每天跑一次全量备份",
        aliases=("run a full backup daily",), expect="code_fact", round_one_wrong=True),
    one("r2-zh-system-habit-norm", "zh", "定时任务以后每天都要跑一次全量备份。", D, "全量备份", "每天跑一次全量备份",
        aliases=("run a full backup daily",), legit=True, lasting=True),
    one("r2-en-contrast-norm", "en", "Named exports, not default exports.", P, "exports",
        "Use named exports, not default exports.", legit=True, round_one_wrong=True),
    one("r2-en-contrast-version", "en", "Java 21, not 17.", D, "Java version", "Use Java 21.", expect="code_fact"),
    # L. aliases that only restate the object ("caching", "cache layer") are no action, even after the repair
    Case("r2-zh-alias-restates-object", "zh", (t("接口响应统一加缓存层。", "好的。"),),
         (c(D, "缓存层", "接口响应统一加缓存层", u(0, "接口响应统一加缓存层"), aliases=("caching", "cache layer"),
            expect="cjk_decision_needs_english_alias"),),
         repair=(c(D, "缓存层", "接口响应统一加缓存层", u(0, "接口响应统一加缓存层"), aliases=("cache", "caching layer"),
                   expect="cjk_decision_needs_english_alias"),),
         violation="cjk_decision_needs_english_alias", forbidden=(D,), round_one_wrong=True),
    Case("r2-zh-alias-names-action", "zh", (t("接口响应统一加缓存层。", "好的。"),),
         (c(D, "缓存层", "接口响应统一加缓存层", u(0, "接口响应统一加缓存层"), aliases=("caching", "cache layer")),),
         repair=(c(D, "缓存层", "接口响应统一加缓存层", u(0, "接口响应统一加缓存层"),
                   aliases=("cache api responses", "response cache"), lasting=True),),
         violation="cjk_decision_needs_english_alias", legit=True, round_one_wrong=True,
         hits=(("cache api responses", "缓存层"),)),
    # Chinese decisions: the aliases name the action/trade-off, not just the object
    Case("e19-zh-alias-object-only", "zh", (t("认证统一迁到 OAuth2，旧的 session 登录直接下线。", "好的。"),),
         (c(D, "认证方式", "认证统一迁到 OAuth2，旧的 session 登录直接下线", u(0, "认证统一迁到 OAuth2，旧的 session 登录直接下线"),
            aliases=("OAuth2", "session login"), expect="cjk_decision_needs_english_alias"),),
         violation="cjk_decision_needs_english_alias", forbidden=(D,)),
    Case("e19-zh-alias-repaired", "zh", (t("认证统一迁到 OAuth2，旧的 session 登录直接下线。", "好的。"),),
         (c(D, "认证方式", "认证统一迁到 OAuth2，旧的 session 登录直接下线", u(0, "认证统一迁到 OAuth2，旧的 session 登录直接下线"),
            aliases=("session login",)),),
         repair=(c(D, "认证方式", "认证统一迁到 OAuth2，旧的 session 登录直接下线",
                   u(0, "认证统一迁到 OAuth2，旧的 session 登录直接下线"),
                   aliases=("migrate auth to OAuth2", "retire session login"), lasting=True),),
         violation="cjk_decision_needs_english_alias", legit=True, hits=(("retire session login", "认证方式"),)),
    # ---------------------------------------------------------------- round three (issue #19)
    # M7. a discussion whose fields assert an outcome the undecided user never drew is refused; an open
    # trade-off phrased as two 是-clauses, or one the user asks to keep track of, is kept
    Case("r3-en-discussion-outcome", "en",
         (t("GraphQL or REST for the partner API? still weighing it, no rush.", "REST looks like the better fit."),),
         (c(X, "partner API style", "Partner API style: conclusion so far is that REST wins over GraphQL.",
            u(0, "GraphQL or REST for the partner API? still weighing it"), expect="assistant_conclusion"),),
         forbidden=(X,), round_two_wrong=True),
    Case("r3-zh-discussion-confirmed", "zh",
         (t("消息队列用 Kafka 还是 RabbitMQ，我还在犹豫。", "两者各有优劣。"),),
         (c(X, "消息队列选型", "消息队列选型：已确认用 Kafka", u(0, "消息队列用 Kafka 还是 RabbitMQ，我还在犹豫"),
            expect="assistant_conclusion"),),
         forbidden=(X,), round_two_wrong=True),
    Case("r3-zh-discussion-decided-switch", "zh",
         (t("要不要把前端构建迁到 Vite，我还没拿定主意。", "Vite 的冷启动确实快很多。"),),
         (c(X, "前端构建工具", "决定改用 Vite 构建前端", u(0, "要不要把前端构建迁到 Vite，我还没拿定主意"),
            expect="assistant_conclusion"),),
         forbidden=(X,), round_two_wrong=True),
    Case("r3-zh-discussion-two-sides", "zh",
         (t("服务端渲染是产品想要的，纯静态是我们维护得起的。我还没想好选哪个。", "这确实是个取舍。"),),
         (c(X, "前端渲染方式", "前端渲染：服务端渲染与纯静态之间的取舍，尚未决定",
            u(0, "服务端渲染是产品想要的，纯静态是我们维护得起的")),),
         legit=True, round_two_wrong=True),
    Case("r3-en-discussion-keep-track", "en",
         (t("keep track of this one for me: shared schema vs per-tenant DBs, haven't decided",
            "Noted. I'll keep both sides in mind: stronger isolation with separate databases versus lower "
            "operational overhead with one schema."),),
         (c(X, "tenant data layout", "Open trade-off: stronger isolation versus lower operational overhead "
            "(separate databases per tenant or one shared schema).",
            u(0, "keep track of this one for me: shared schema vs per-tenant DBs, haven't decided")),),
         legit=True, round_two_wrong=True),
    # M1. a directive with a tag asking for agreement, a polite request to drop a habit: requests
    one("r3-zh-tag-ack", "zh", "从今天起接口返回的时间都用 ISO 8601，懂了吗？", P, "时间格式", "接口返回时间用 ISO 8601",
        legit=True, lasting=True, round_two_wrong=True),
    one("r3-en-polite-quit", "en", "could you quit wrapping every call in try/except?", P, "exception handling",
        "Don't wrap every call in try/except.", legit=True),
    one("r3-en-polite-one-task", "en", "could you restart the dev server?", P, "dev server", "Restart the dev server.",
        expect="user_question"),
    # M2. a decision frame, an interjection, a pointing-back sentence, a contrasted alternative
    one("r3-en-frame-dash", "en", "team rule — every migration ships with a rollback script", D, "migration rollbacks",
        "Every migration ships with a rollback script.", "every migration ships with a rollback script", legit=True,
        lasting=True, round_two_wrong=True),
    one("r3-en-frame-label-fact", "en", "rule evaluation: every rule runs in file order", D, "rule evaluation order",
        "Every rule runs in file order.", expect="code_fact"),
    one("r3-en-interjection", "en", "Usually — and I mean for every service — config is read from env vars", D,
        "config source", "Config is read from env vars.", "config is read from env vars", legit=True, lasting=True,
        round_two_wrong=True),
    one("r3-en-points-back", "en", "Releases are cut from main. we settled that in the spring and I want you to "
        "keep to it", D, "release branch", "Releases are cut from main.", "Releases are cut from main.", legit=True,
        lasting=True, round_two_wrong=True),
    one("r3-en-decision-undone", "en", "we decided last spring to move to Bazel, but it got dropped", D, "build tool",
        "Move the build to Bazel.", expect="code_fact", round_two_wrong=True),
    one("r3-en-alternative-named", "en", "we format with ruff, not black — stop suggesting black", D, "formatter",
        "Format with ruff, not black.", "we format with ruff, not black", legit=True, lasting=True,
        round_two_wrong=True),
    one("r3-en-no-apostrophe", "en", "we cant release without a signed tag", D, "release tags",
        "Releases need a signed tag.", legit=True, round_two_wrong=True),
    # M3. a lasting sentence pointing back
    one("r3-en-that-is-how", "en", "Name feature flags after the ticket. From now on that's how every team does it.",
        P, "feature flag names", "Name feature flags after the ticket.", "Name feature flags after the ticket.",
        legit=True, lasting=True, round_two_wrong=True),
    # M4. a start point after a local clause
    one("r3-mixed-start-after-local", "mixed", "这个模块的 sleep 先留着，from now on 测试里不许用 sleep 等待", P,
        "测试等待", "测试里不许用 sleep 等待", "from now on 测试里不许用 sleep 等待", legit=True, lasting=True,
        round_two_wrong=True),
    # M5. a system habit with 会, an event report, a reassurance
    one("r3-zh-system-will", "zh", "每个合并请求都会自动部署一个预览环境", D, "预览环境", "每个合并请求自动部署预览环境",
        aliases=("deploy a preview per merge request",), expect="code_fact", round_two_wrong=True),
    one("r3-en-event-report", "en", "deploy failed again because the token expired, it's always the token", D,
        "deploy token", "Deploys fail when the token expires.", expect="code_fact", round_two_wrong=True),
    one("r3-en-reassurance", "en", "the queue always gets drained at night, so don't worry about it", D,
        "queue draining", "The queue is drained at night.", expect="code_fact", round_two_wrong=True),
    # M6. a limit bounded by an event or a version
    one("r3-en-until-version", "en", "till 5.0 ships, no new public APIs", D, "public API freeze",
        "No new public APIs.", expect="one_off_scope", round_two_wrong=True),
    one("r3-zh-until-done", "zh", "在压测做完之前先别调连接池参数", P, "连接池参数", "别调连接池参数",
        expect="one_off_scope"),
    one("r3-en-before-every", "en", "before every release, regenerate the API docs", P, "API docs",
        "Regenerate the API docs before every release.", legit=True, lasting=True),
    # M8. an alias naming the action with a constraint word or a verb after a negation
    Case("r3-zh-alias-constraint", "zh", (t("状态不能只靠颜色区分，要配图标或文字。", "好的。"),),
         (c(D, "状态颜色", "状态不能只靠颜色区分，要配图标或文字", u(0, "状态不能只靠颜色区分，要配图标或文字"),
            aliases=("don't rely on colour alone for status",)),),
         legit=True, round_two_wrong=True),
    Case("r3-zh-alias-object-only", "zh", (t("状态不能只靠颜色区分，要配图标或文字。", "好的。"),),
         (c(D, "状态颜色", "状态不能只靠颜色区分，要配图标或文字", u(0, "状态不能只靠颜色区分，要配图标或文字"),
            aliases=("status colour", "colours"), expect="cjk_decision_needs_english_alias"),),
         repair=(c(D, "状态颜色", "状态不能只靠颜色区分，要配图标或文字", u(0, "状态不能只靠颜色区分，要配图标或文字"),
                   aliases=("colour", "colouring"), expect="cjk_decision_needs_english_alias"),),
         violation="cjk_decision_needs_english_alias", forbidden=(D,)),
    # ---------------------------------------------------------------- issue 29 (this round: `round29=True`)
    # D3. no "kept but lowered": a standing rule stated without any limit is stored hard + always
    one("i29-en-plain-prefer", "en", "Prefer pathlib over os.path in new helpers", P, "path handling",
        "Prefer pathlib over os.path.", legit=True, lasting=True, round29=True),
    one("i29-zh-plain-rule", "zh", "报错信息统一写英文", P, "报错语言", "报错信息写英文", legit=True, lasting=True,
        round29=True),
    one("i29-en-plain-imperative", "en", "Keep commit subjects under 72 characters.", P, "commit subjects",
        "Keep commit subjects under 72 characters.", legit=True, lasting=True, round29=True),
    # the look-alike: the same rule with a limit is refused, never stored lowered
    one("i29-en-plain-imperative-limited", "en", "Keep commit subjects under 72 characters in this PR.", P,
        "commit subjects", "Keep commit subjects under 72 characters.", expect="one_off_scope", round29=True),
    # D1.1 taken back: a later clause of the same message, or the next turn, withdraws it
    one("i29-en-withdrawn-same-message", "en",
        "Pin every dependency to an exact version — actually no, scratch that, ranges are fine", D,
        "dependency pinning", "Pin dependencies to exact versions.", "Pin every dependency to an exact version",
        expect="withdrawn", round29=True),
    one("i29-en-dismissal-with-object", "en",
        "Scratch that old Makefile target; from now on every task goes through just", D, "task runner",
        "Every task goes through just.", "from now on every task goes through just", legit=True, lasting=True,
        round29=True),
    one("i29-zh-withdrawn-same-message", "zh", "以后接口都加版本前缀。算了，当我没说。", D, "接口版本前缀",
        "接口加版本前缀", "以后接口都加版本前缀", aliases=("prefix api routes with a version",), expect="withdrawn",
        round29=True),
    Case("i29-en-withdrawn-next-turn", "en",
         (t("Always squash merge feature branches.", "OK."),
          # a repair intent: the harness then processes both turns as one batch (`memory process`)
          t("ignore what I said about squash merging, we keep merge commits", "OK.", intent="code_audit")),
         (Cand(at=1, kind=D, subject="merge strategy", statement="Squash merge feature branches.",
               src=(u(0, "Always squash merge feature branches."),), expect="withdrawn"),),
         forbidden=(D,), round29=True),
    Case("i29-en-next-turn-withdraws-another", "en",
         (t("Always squash merge feature branches.", "OK."), t("ignore what I said about the changelog", "OK.", intent="code_audit")),
         (Cand(at=1, kind=D, subject="merge strategy", statement="Squash merge feature branches.",
               src=(u(0, "Always squash merge feature branches."),), lasting=True),),
         legit=True, round29=True),
    # D1.2 someone else's words: reported speech, a block quote; endorsed, they are the user's
    one("i29-en-relayed-wiki", "en",
        "our platform wiki says every service must expose /healthz, no idea if that's still current", D,
        "health endpoint", "Every service must expose /healthz.", "every service must expose /healthz",
        expect="relayed", round29=True),
    one("i29-en-relayed-block-quote", "en", "the reviewer left this:\n> never log request bodies\nthoughts?", P,
        "request logging", "Never log request bodies.", "never log request bodies", expect="relayed", round29=True),
    one("i29-en-relayed-endorsed", "en", "My lead says we should never log request bodies, and I agree.", P,
        "request logging", "Never log request bodies.", "we should never log request bodies", legit=True,
        lasting=True, round29=True),
    one("i29-en-as-the-guide-says", "en", "as the style guide says, no wildcard imports", P, "imports",
        "No wildcard imports.", "no wildcard imports", legit=True, lasting=True, round29=True),
    one("i29-zh-relayed-hearsay", "zh", "网上有人说 Go 里别用 init 函数，我没细看", P, "init 函数", "别用 init 函数",
        "Go 里别用 init 函数", expect="relayed", round29=True),
    # D1.3 irony after a proposal; a plain yes adopts
    adopt("i29-adopt-ironic", "en", "I suggest we migrate every service to Kubernetes this sprint.",
          "oh sure, all of them in one sprint, what could possibly go wrong", D, "Kubernetes migration",
          "Migrate every service to Kubernetes.", expect="ironic", round29=True),
    adopt("i29-adopt-plain-yes-emoji", "en", "I'd move the retry logic into a decorator.", "sure, do it 👍", D,
          "retry logic", "Move the retry logic into a decorator.", legit=True, lasting=True, round29=True),
    # D1.4 a rule in the shape of a complaint or a rhetorical question; a real question stays one
    one("i29-en-complaint-nth-time", "en", "for the third time: no bare excepts in the worker code", P,
        "exception handling", "No bare excepts in the worker code.", legit=True, lasting=True, round29=True),
    one("i29-en-why-do-you-keep", "en", "why do you keep putting imports inside functions?", P, "imports",
        "Don't put imports inside functions.", legit=True, lasting=True, round29=True),
    one("i29-en-why-real-question", "en", "why do you keep the retry count at 3?", P, "retry count",
        "Keep the retry count at 3.", expect="user_question", round29=True),
    one("i29-zh-complaint-how-many", "zh", "跟你说了几遍了，测试里别连真实数据库", P, "测试数据库", "测试里别连真实数据库",
        legit=True, lasting=True, round29=True),
    one("i29-en-we-dont-here", "en", "can you quit adding emoji to log messages? we don't do that here", P,
        "log messages", "Don't add emoji to log messages.", legit=True, lasting=True, round29=True),
    one("i29-en-plain-here-stays-local", "en", "put the retry helper in here", P, "retry helper",
        "Put the retry helper in this module.", expect="one_off_scope", round29=True),
    # D1.5 policy vs what the repo has: "No X … yet" describes, "No X without Y" rules
    one("i29-en-no-yet-fact", "en", "No Helm chart for the worker yet", D, "worker deployment",
        "No Helm chart for the worker.", expect="code_fact", round29=True),
    one("i29-en-no-rule", "en", "No Helm charts without a values schema", D, "Helm charts",
        "Helm charts need a values schema.", legit=True, lasting=True, round29=True),
    # D1.6 short confirmations of a plain proposal (no "I suggest"); a doubt or a deferral adopts nothing
    adopt("i29-adopt-k-plain-proposal", "en", "Might be worth splitting the settings module per environment.", "k",
          D, "settings layout", "Split the settings module per environment.", legit=True, lasting=True, round29=True),
    adopt("i29-adopt-thumbs-suggest", "en", "Suggest we vendor the protobuf files under third_party/.", "👍", D,
          "protobuf files", "Vendor the protobuf files under third_party/.", legit=True, lasting=True, round29=True),
    adopt("i29-adopt-k-deferred", "en", "Might be worth splitting the settings module per environment.",
          "k, but let's wait for the refactor to land", D, "settings layout",
          "Split the settings module per environment.", expect="not_confirmed", round29=True),
    adopt("i29-adopt-gerund-would", "en", "Moving the fixtures into conftest.py would remove the duplication.", "行", D,
          "test fixtures", "Move the fixtures into conftest.py.", legit=True, lasting=True, round29=True),
    # D1.7 the shapes of rule files: "Area: rule" bullets are rules; a command listing describes the repo
    one("i29-en-area-rule-bullet", "en", "- **Errors:** wrap every returned error with context", P, "error wrapping",
        "Wrap every returned error with context.", legit=True, lasting=True, round29=True),
    one("i29-en-area-rule-plain", "en", "**Naming:** use snake_case for SQL columns", D, "SQL column naming",
        "Use snake_case for SQL columns.", legit=True, lasting=True, round29=True),
    one("i29-en-command-listing", "en", "- Lint: `golangci-lint run`", D, "lint command", "Lint with golangci-lint.",
        expect="code_fact", round29=True),
    one("i29-en-command-in-a-rule", "en", "- Lint: run `golangci-lint run` before pushing", D, "lint command",
        "Run golangci-lint before pushing.", legit=True, lasting=True, round29=True),
    one("i29-zh-area-rule", "zh", "- 配置：一律从环境变量读", D, "配置来源", "配置一律从环境变量读",
        aliases=("read config from env vars only",), legit=True, lasting=True, round29=True),
    # D1.8 a Chinese decision's alias names its action with any verb (no fixed list): a verb + object +
    # prepositional argument, or a verbal suffix; a noun phrase alone is still no action
    Case("i29-zh-alias-any-verb", "zh", (t("上传的图片统一转成 webp 再存。", "好的。"),),
         (c(D, "图片格式", "上传的图片统一转成 webp 再存", u(0, "上传的图片统一转成 webp 再存"),
            aliases=("transcode images to webp",), lasting=True),),
         legit=True, hits=(("transcode images to webp", "图片格式"),), round29=True),
    Case("i29-zh-alias-noun-phrase", "zh", (t("上传的图片统一转成 webp 再存。", "好的。"),),
         (c(D, "图片格式", "上传的图片统一转成 webp 再存", u(0, "上传的图片统一转成 webp 再存"),
            aliases=("webp image format",), expect="cjk_decision_needs_english_alias"),),
         repair=(c(D, "图片格式", "上传的图片统一转成 webp 再存", u(0, "上传的图片统一转成 webp 再存"),
                   aliases=("webp images",), expect="cjk_decision_needs_english_alias"),),
         violation="cjk_decision_needs_english_alias", forbidden=(D,), round29=True),
    # ---------------------------------------------------------- issue 29, second round (`round29b=True`)
    # irony without a marker word: praise, then an exaggeration or a counterexample of the same proposal
    adopt("i29b-adopt-praise-escalation", "en", "I suggest we add type hints to the public API functions.",
          "brilliant, and while we're at it let's annotate every single test helper too, what a productive week",
          D, "type hints", "Add type hints to the public API functions.", expect="ironic", round29b=True),
    adopt("i29b-adopt-praise-counterexample", "en", "Let's keep deploys small and ship them on Fridays.",
          "love it, small Friday deploys, just like the one that took checkout down all weekend", D,
          "deploy day", "Ship small deploys on Fridays.", expect="ironic", round29b=True),
    adopt("i29b-zh-adopt-praise-escalation", "zh", "建议把所有配置项都加上注释。",
          "太好了，干脆把整个仓库的每一行代码都加上注释吧，真是高效啊", D, "配置注释", "配置项都加上注释",
          aliases=("comment every config option",), expect="ironic", round29b=True),
    adopt("i29b-adopt-reduplicated-yes", "en", "I'd put the feature flags behind one settings object.",
          "yes yes, go for it 👍", D, "feature flags", "Put the feature flags behind one settings object.",
          legit=True, lasting=True, round29b=True),
    adopt("i29b-zh-adopt-reduplicated", "zh", "建议日志统一输出成 JSON 行。", "好好好，就这么办", D, "日志格式",
          "日志统一输出成 JSON 行", aliases=("emit logs as json lines",), legit=True, lasting=True, round29b=True),
    adopt("i29b-adopt-praise-plain-addition", "en", "I suggest we validate the request body with pydantic.",
          "great, and while we're at it add the same validation to the CLI input", D, "request validation",
          "Validate the request body with pydantic.", legit=True, lasting=True, round29b=True),
    adopt("i29b-adopt-praise-precedent", "en", "Let's put a circuit breaker in front of the payment client.",
          "nice, like the one we set up for the mail client", D, "circuit breaker",
          "Put a circuit breaker in front of the payment client.", legit=True, lasting=True, round29b=True),
    # team policy in the present tense: exclusives, a passive "never", "nobody … without" state a rule
    one("i29b-en-policy-only-channel", "en", "secrets live in the vault, services only read them through the config client",
        D, "secrets access", "Services read secrets only through the config client.",
        "services only read them through the config client", legit=True, lasting=True, round29b=True),
    one("i29b-en-policy-passive-only", "en", "hotfix branches are cut from the release tag only", D, "hotfix branches",
        "Cut hotfix branches from the release tag only.", legit=True, lasting=True, round29b=True),
    one("i29b-en-policy-passive-never", "en", "production is never deployed to by hand", D, "production deploys",
        "Never deploy to production by hand.", legit=True, lasting=True, round29b=True),
    one("i29b-en-policy-nobody-without", "en", "nobody merges to main without a green build", D, "merging to main",
        "Merge to main only with a green build.", legit=True, lasting=True, round29b=True),
    one("i29b-zh-policy-only", "zh", "配置只从环境变量读取，不读本地文件", D, "配置来源", "配置只从环境变量读取",
        aliases=("read config from environment variables only",), legit=True, lasting=True, round29b=True),
    one("i29b-en-only-quantity-fact", "en", "the scheduler only retries once after a timeout", D, "scheduler retries",
        "The scheduler retries once after a timeout.", expect="code_fact", round29b=True),
    one("i29b-en-only-pronoun-fact", "en", "it only breaks on the arm runners", D, "arm runners",
        "Breaks on the arm runners.", expect="code_fact", round29b=True),
    one("i29b-en-only-definite-fact", "en", "the gateway only forwards json", D, "gateway", "The gateway forwards json.",
        expect="code_fact", round29b=True),
    one("i29b-en-never-active-fact", "en", "the cache never evicts pinned keys", D, "cache eviction",
        "The cache never evicts pinned keys.", expect="code_fact", round29b=True),
    one("i29b-zh-copula-description-fact", "zh", "线上缓存是两个节点，写请求都走主节点", D, "缓存拓扑",
        "写请求都走主节点", aliases=("route writes to the primary node",), expect="code_fact", round29b=True),
    # an alias may not add a number, a duration or a code-like token the user never said
    one("i29b-zh-alias-adds-duration", "zh", "会话数据统一放 Redis", D, "会话存储", "会话数据统一放 Redis",
        aliases=("store sessions in redis with 24h expiry",), expect="alias_adds", round29b=True),
    one("i29b-zh-alias-adds-number", "zh", "合并前必须有人 review", D, "合并前 review", "合并前必须有人 review",
        aliases=("require two approvals before merging",), expect="alias_adds", round29b=True),
    one("i29b-zh-alias-adds-code-token", "zh", "外部请求统一用指数退避重试", D, "重试策略", "外部请求统一用指数退避重试",
        aliases=("retry external calls with max_retries backoff",), expect="alias_adds", round29b=True),
    one("i29b-zh-alias-number-said", "zh", "每个 PR 都要两个人 review", D, "PR review", "每个 PR 都要两个人 review",
        aliases=("require two reviewers per pull request",), legit=True, lasting=True, round29b=True),
    one("i29b-zh-alias-acronym-translation", "zh", "对外接口统一返回分页结构", D, "接口分页", "对外接口统一返回分页结构",
        aliases=("paginate public API responses",), legit=True, lasting=True, round29b=True),
    # a Chinese decision whose repair still has no English alias at all is kept (missing, not wrong)
    Case("i29b-zh-alias-missing-kept", "zh", (t("部署脚本统一放到 deploy 目录下。", "好的。"),),
         (c(D, "部署脚本位置", "部署脚本统一放到 deploy 目录下", u(0, "部署脚本统一放到 deploy 目录下")),),
         repair=(c(D, "部署脚本位置", "部署脚本统一放到 deploy 目录下", u(0, "部署脚本统一放到 deploy 目录下"),
                   lasting=True),),
         violation="cjk_decision_needs_english_alias", legit=True, items=(D,), round29b=True),
    # a reversal as the later step makes the first one temporary; a plain order is no limit
    one("i29b-zh-reversal-temporary", "zh", "先把超时调到 60 秒，压测完再调回来", D, "超时设置", "超时调到 60 秒",
        aliases=("raise the timeout to 60 seconds",), expect="one_off_scope", round29b=True),
    one("i29b-en-reversal-temporary", "en", "bump the log level to debug and set it back afterwards", P, "log level",
        "Bump the log level to debug.", expect="one_off_scope", round29b=True),
    # a bare "ok" answering a proposed rule in a chat adopts it; in a patch review it is about that patch
    adopt("i29b-adopt-bare-ok-rule", "en", "I suggest we name test files after the module they cover.", "ok", D,
          "test file naming", "Name test files after the module they cover.", legit=True, lasting=True, round29b=True),
    adopt("i29b-zh-adopt-bare-hao", "zh", "建议所有脚本都加上 set -euo pipefail。", "好的", D, "脚本安全选项",
          "所有脚本都加上 set -euo pipefail", aliases=("add strict mode to every shell script",), legit=True,
          lasting=True, round29b=True),
    Case("i29b-adopt-ok-in-review", "en",
         (t("What would you do here?", "I suggest we wrap this call in a retry.", intent="patch_revise"),
          t("ok", "Applied.", intent="patch_revise")),
         (c(D, "retry wrapper", "Wrap this call in a retry.", a(0, "I suggest we wrap this call in a retry."),
            u(1, "ok"), origin="adopted_proposal", expect="apply_only"),),
         forbidden=(D,), round29b=True),
    # a rule proposed to the assistant as a question lasts; a one-time "how about" stays a question
    one("i29b-en-how-about-always", "en", "how about we always run the formatter before committing?", P, "formatting",
        "Run the formatter before committing.", legit=True, lasting=True, round29b=True),
    one("i29b-en-how-about-once", "en", "how about we run the formatter on this file?", P, "formatting",
        "Run the formatter on this file.", expect="user_question", round29b=True),
    # relayed words the user judges right in the same message are the user's; a doubt is no endorsement
    one("i29b-en-relayed-judged-right", "en", "my lead says never log request bodies, and she's right", P,
        "request logging", "Never log request bodies.", "never log request bodies", legit=True, lasting=True,
        round29b=True),
    one("i29b-zh-relayed-judged-right", "zh", "同事说接口错误统一返回错误码，说得对", D, "接口错误", "接口错误统一返回错误码",
        "接口错误统一返回错误码", aliases=("return error codes for api errors",), legit=True, lasting=True, round29b=True),
    one("i29b-zh-relayed-doubted", "zh", "同事说接口错误统一返回错误码，我不觉得有道理", D, "接口错误",
        "接口错误统一返回错误码", "接口错误统一返回错误码", aliases=("return error codes for api errors",),
        expect="relayed", round29b=True),
)
