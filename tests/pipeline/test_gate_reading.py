"""The gate's reading of one user clause (`core/pipeline/reading.py`) on its own: for every form the
forms it must refuse, with the rule, and the legitimate look-alike it must keep, with its standing.
Pure functions, no store, no HTTP. These sentences are our own (written before the independent
corpus was run); every mechanism has a pair a careless implementation gets wrong."""

from __future__ import annotations

import pytest

from autopatch_tui.core.pipeline.reading import (
    confirmation_refusal,
    proposal_refusal,
    read_quote,
)

KEEP, LAST = None, "lasting"

# (user text, quote or None = the whole text, expected rule or None, lasting: True/False/None = either)
EXPLICIT = [
    # ------------------------------------------------------------ imperatives and their standing
    ("Use black for formatting.", None, None, False),
    ("Always run mypy before you push.", None, None, True),
    ("never log raw request bodies", None, None, True),
    ("pls always show me the diff first", None, None, True),
    ("Going forward, name branches after the ticket.", None, None, True),
    ("From here on, put migrations in their own PR.", None, None, True),
    ("Be concise.", None, None, False),
    ("Run tests first, then lint.", None, None, False),
    ("Prefer composition over inheritance in new classes.", None, None, None),
    ("Don't use wildcard imports.", None, None, None),
    ("No print statements in library code.", None, None, None),
    ("Stop adding emoji to commit messages.", None, None, None),
    ("Make sure every endpoint has an integration test.", None, None, True),
    ("When in doubt, ask before deleting files.", None, None, None),
    ("English please.", None, None, False),
    ("Remember this: deployment scripts live outside the repo and must never be generated.", None, None, True),
    ("Keep in mind for later that I want short commit subjects.", None, None, True),
    ("Could you always include the file path in your answers?", None, None, True),
    ("Can you from now on answer in German? thx", None, None, True),
    ("能不能以后都先给结论再解释？", None, None, True),
    ("Always write a docstring, OK?", None, None, True),
    ("Never hardcode credentials, because leaked keys are expensive and it might happen to anyone.", None, None, True),
    ("I think we should always squash feature branches.", None, None, True),
    ("imo we should never vendor dependencies", None, None, True),
    ("Try to keep modules below 400 lines.", None, None, None),
    # ------------------------------------------------------------ first-person commitments and preferences
    ("We'll use Terraform for all infrastructure.", None, None, True),
    ("we're going with gRPC for internal services, decided.", None, None, True),
    ("This is settled: the mobile app talks to the BFF only.", None, None, True),
    ("Our convention is kebab-case for CLI flags.", None, None, True),
    ("We decided to drop Windows support.", None, None, None),
    ("I prefer early returns over nested ifs.", None, None, None),
    ("I want you to cite the docs when you explain an API.", None, None, None),
    ("I'd rather have small PRs.", None, None, None),
    ("I hate magic numbers.", None, None, None),
    ("We never force-push to shared branches.", None, None, True),
    ("we use structlog for every service", None, None, True),
    ("Let's keep the public API stable until v3.", None, None, None),
    ("Let's standardize on UTF-8 everywhere.", None, None, True),
    ("All new endpoints must be versioned.", None, None, True),
    ("Secrets should be read from the environment.", None, None, None),
    # ------------------------------------------------------------ Chinese directives and commitments
    ("以后变量名都用英文。", None, None, True),
    ("统一用 UTC 存时间。", None, None, True),
    ("请不要在测试里访问网络。", None, None, None),
    ("别用 print 调试。", None, None, None),
    ("接口文档一律用中文写。", None, None, True),
    ("我们决定不再支持 IE11。", None, None, True),
    ("我希望回答里先给出代码再解释。", None, None, None),
    ("就用 Celery 做任务队列吧。", None, None, None),
    ("从这一版开始都用 semver 打 tag。", None, None, True),
    ("记住：数据库迁移必须可回滚。", None, None, True),
    ("不只是这次，以后合并前都要 rebase。", None, None, True),
    ("配置文件改用 TOML，以后都这样。", None, None, True),
    ("我们统一用 pnpm 管理前端依赖。", None, None, True),
    # ------------------------------------------------------------ negated limits and lasting phrases with local words
    ("Not just for this service — every service should log in JSON.", None, None, True),
    ("not only in this file, everywhere: use pathlib", None, None, True),
    ("Run the formatter even for one-line fixes.", None, None, True),
    ("This isn't a one-off: always pin the base image digest.", None, None, True),
    ("不仅仅是这里，所有地方都不要吞异常。", None, None, True),
    ("从这里开始，所有日志都带 request id。", None, None, True),
    # ------------------------------------------------------------ one-offs: a temporal or local limit on the clause
    ("For this reply, skip the code samples.", None, "one_off_scope", None),
    ("Just today, leave the cache disabled.", None, "one_off_scope", None),
    ("Only in this function, use a plain loop.", None, "one_off_scope", None),
    ("Leave the feature flag on until the launch is over.", None, "one_off_scope", None),
    ("For the rest of this conversation, answer in French.", None, "one_off_scope", None),
    ("Skip the e2e suite for the demo.", None, "one_off_scope", None),
    ("Right now just make it compile.", None, "one_off_scope", None),
    ("for now use sqlite", None, "one_off_scope", None),
    ("In this PR, don't touch the generated client.", None, "one_off_scope", None),
    ("Use mocks in this test.", None, "one_off_scope", None),
    ("Rename this variable to total.", None, "one_off_scope", None),
    ("今天先别升级依赖。", None, "one_off_scope", None),
    ("这个函数里先用同步调用。", None, "one_off_scope", None),
    ("发版之前先不要合并新功能。", None, "one_off_scope", None),
    ("这次回答用表格。", None, "one_off_scope", None),
    ("暂时把超时调到 60 秒。", None, "one_off_scope", None),
    ("这个 PR 里别改公共接口。", None, "one_off_scope", None),
    ("Just this once, push straight to main.", None, "one_off_scope", None),
    # ------------------------------------------------------------ code facts: a declarative of what code/config/CI is
    ("The worker pool has eight threads.", None, "code_fact", None),
    ("Our staging cluster runs Kubernetes 1.29.", None, "code_fact", None),
    ("CI is always green on main.", None, "code_fact", None),
    ("All 57 integration tests passed.", None, "code_fact", None),
    ("The API returns dates as ISO strings.", None, "code_fact", None),
    ("We're on Node 20.", None, "code_fact", None),
    ("The frontend is built with Vite.", None, "code_fact", None),
    ("Every handler logs to stdout.", None, "code_fact", None),
    ("Redis holds the session data.", None, "code_fact", None),
    ("前端打包用的是 webpack 5。", None, "code_fact", None),
    ("测试全都通过了。", None, "code_fact", None),
    ("数据库连接池大小是 20。", None, "code_fact", None),
    ("所有接口目前都返回 XML。", None, "code_fact", None),
    ("nginx 监听 443 端口。", None, "code_fact", None),
    # ------------------------------------------------------------ hedges (epistemic modality)
    ("We might move to Bazel.", None, "hedged", None),
    ("Probably we should switch to ruff.", None, "hedged", None),
    ("I'll likely always want verbose output.", None, "hedged", None),
    ("Perhaps new services should use Go.", None, "hedged", None),
    ("We could try pnpm at some point.", None, "hedged", None),
    ("I think we'll eventually drop the v1 API.", None, "hedged", None),
    ("说不定以后要换成 MySQL。", None, "hedged", None),
    ("可能得把日志改成结构化的。", None, "hedged", None),
    ("或许可以考虑用 Rust 重写。", None, "hedged", None),
    # ------------------------------------------------------------ questions, requests for information, open points
    ("Which logger do we use?", None, "user_question", None),
    ("Is it better to use tabs?", None, "user_question", None),
    ("Could you rename the helper?", None, "user_question", None),
    ("Explain how the retry decorator works.", None, "request_for_info", None),
    ("Show me where the config is loaded.", None, "request_for_info", None),
    ("这个缓存为什么这么慢？", None, "user_question", None),
    ("Should we split the repo?", None, "undecided", None),
    ("Not sure yet whether to adopt GraphQL.", None, "undecided", None),
    ("还没想好要不要用 Kafka。", None, "undecided", None),
    ("Let's revisit the ORM choice next month.", None, "undecided", None),
    # ------------------------------------------------------------ acknowledgements and chatter
    ("ok thanks!", None, "acknowledgement_only", None),
    ("好的，明白了", None, "acknowledgement_only", None),
    ("I had a long week.", None, "no_directive", None),
    # ------------------------------------------------------------ mixed clauses: the quoted clause is judged
    ("Skip the changelog this time, but from now on every PR updates it.", "from now on every PR updates it",
     None, True),
    ("Skip the changelog this time, but from now on every PR updates it.", "Skip the changelog this time",
     "one_off_scope", None),
    ("The linter config is in setup.cfg; from now on keep it in pyproject.toml.",
     "from now on keep it in pyproject.toml", None, True),
    ("The linter config is in setup.cfg; from now on keep it in pyproject.toml.", "The linter config is in setup.cfg",
     "code_fact", None),
    ("这次先不写文档，不过以后每个模块都要有 README。", "以后每个模块都要有 README", None, True),
    ("这次先不写文档，不过以后每个模块都要有 README。", "这次先不写文档", "one_off_scope", None),
    ("Maybe later for the CLI, but always validate inputs in the API.", "always validate inputs in the API",
     None, True),
]


@pytest.mark.parametrize("text,quote,rule,lasting", EXPLICIT)
def test_explicit_clause(text, quote, rule, lasting):
    r = read_quote(text, quote or text)
    assert r.refusal() == rule, (r, text)
    if rule is None and lasting is not None:
        assert r.lasting == lasting, (r, text)


def test_a_repair_turn_keeps_only_what_is_said_to_last():
    assert read_quote("Use a context manager here.", "Use a context manager", repair=True).refusal() == "one_off_scope"
    assert read_quote("Use a context manager instead.", "Use a context manager instead.",
                      repair=True).refusal() == "one_off_scope"
    r = read_quote("From now on, always use a context manager for files.", "always use a context manager for files",
                   repair=True)
    assert r.refusal() is None and r.lasting


CONFIRMATIONS = [
    ("Yes, let's do that.", None),
    ("sgtm", None),
    ("perfect, go ahead", None),
    ("No problem, do it.", None),
    ("可以，就这么定。", None),
    ("行，按你说的来", None),
    ("没问题", None),
    ("👍", None),
    ("no, keep the current layout", "not_confirmed"),
    ("hmm, let me run it by the team first", "not_confirmed"),
    ("maybe later", "not_confirmed"),
    ("I'll think about it.", "not_confirmed"),
    ("ok but not yet", "not_confirmed"),
    ("Sounds good?", "not_confirmed"),
    ("算了，还是保持原样", "not_confirmed"),
    ("先不要", "not_confirmed"),
    ("回头再说吧", "not_confirmed"),
    ("ok, for this release only", "one_off_scope"),
    ("行，这次先这么做", "one_off_scope"),
]


@pytest.mark.parametrize("text,rule", CONFIRMATIONS)
def test_an_adoption_needs_an_affirmative_confirmation(text, rule):
    assert confirmation_refusal(text) == rule


PROPOSALS = [
    ("I suggest we move the feature flags into a config service.", None),
    ("How about caching the token for its lifetime?", None),
    ("My recommendation: keep one migration per release.", None),
    ("We could store the blobs in S3 instead.", None),
    ("建议统一用 ISO 8601 格式。", None),
    ("不如把这两个服务合并。", None),
    ("Do you want me to add retries?", "not_a_proposal"),
    ("Which database are you using?", "not_a_proposal"),
    ("The scheduler currently runs every five minutes.", "not_a_proposal"),
    ("I've updated the README with the new flags.", "not_a_proposal"),
    ("已经改好了，测试都通过。", "not_a_proposal"),
]


@pytest.mark.parametrize("text,rule", PROPOSALS)
def test_an_adopted_assistant_quote_is_a_proposal(text, rule):
    assert proposal_refusal(text) == rule
