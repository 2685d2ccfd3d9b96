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


PROBES = [  # more of our own sentences (typos, chat style, both languages)  # (text, expected rule or None, lasting or None)
("The service listens on port 8080.", "code_fact", None),
("Our CI image is Ubuntu 22.04.", "code_fact", None),
("依赖里 requests 是 2.31。", "code_fact", None),
("All 342 tests passed.", "code_fact", None),
("Only in this function, use early returns.", "one_off_scope", None),
("Use the mock server for today's demo.", "one_off_scope", None),
("Don't merge anything into main until the release ships.", "one_off_scope", None),
("For the rest of this chat, answer in Spanish.", "one_off_scope", None),
("今天先别动数据库", "one_off_scope", None),
("CI 上的任务全部是绿的", "code_fact", None),
("all the jobs were green", "code_fact", None),
("Not only for this PR — always squash merge.", None, True),
("从这里开始都用 UTC 时间", None, True),
("Could you always cite the file and line from now on? Thanks!", None, True),
("We'll likely switch to Poetry.", "hedged", None),
("Perhaps we ought to drop 3.9.", "hedged", None),
("Keep in mind for the future: I want type hints on public functions.", None, True),
("We're going with Postgres for all new services, decided.", None, True),
("This is settled: the API speaks JSON only.", None, True),
("the api only speaks json", "code_fact", None),
("make sure u always run the formatter b4 committing", None, True),
("pls never touch the migrations folder", None, True),
("dont use lodash in new code", None, None),
("no lodash in new code plz", None, None),
("going fwd all commits need a ticket id", None, True),
("i prefer tabs tbh", None, None),
("tabs > spaces, always", None, True),
("We use pytest.", "code_fact", None),
("We use pytest for all new tests.", None, True),
("we use 4 spaces", "code_fact", None),  # "we use X" without "for …" or a lasting scope: a state
("Our team writes tests first.", "code_fact", None),  # a habit stated as a state: refused (safe side)
("Prefer f-strings.", None, None),
("f-strings please", None, None),
("Can you use f-strings?", "user_question", None),
("Can you use f-strings from now on?", None, True),
("能不能以后回答都用中文？", None, True),
("你能用中文回答吗？", "user_question", None),
("以后回答都用中文。", None, True),
("回答用中文。", None, None),
("回答是中文的。", "code_fact", None),
("这个项目用的是 Gradle。", "code_fact", None),
("这个项目统一用 Gradle 构建。", None, True),
("我们项目里禁止使用 System.out.println。", None, True),
("请在每个 PR 描述里写上测试方法。", None, True),
("麻烦以后代码注释都用英文。", None, True),
("我觉得以后应该都用 TypeScript。", None, True),
("我觉得 TypeScript 可能更好。", "hedged", None),
("也许以后要上 k8s。", "hedged", None),
("要不要把 ORM 换成 SQLAlchemy？", "undecided", None),
("是否要引入 Redis 还没定。", "undecided", None),
("先用 SQLite 跑起来再说。", "one_off_scope", None),
("先写测试，再写实现。", None, None),
("这周先别合并大的重构。", "one_off_scope", None),
("在这个文件里用 tab。", "one_off_scope", None),
("这里的循环改成 map。", "one_off_scope", None),
("以后这类问题都先给出最小复现。", None, True),
("Keep answers short.", None, None),
("Keep this answer short.", "one_off_scope", None),
("Keep it short.", None, None),
("Keep functions under 40 lines, because long ones are hard to review.", None, None),
("We might need to support Windows at some point.", "hedged", None),
("I guess we should use Black.", "hedged", None),
("We should use Black.", None, None),
("Should we use Black?", "undecided", None),
("What does Black do?", "user_question", None),
("Tell me about Black.", "request_for_info", None),
("Thanks, that helps!", "no_directive", None),
("Cool.", "acknowledgement_only", None),
("Never mind.", "acknowledgement_only", None),
("The tests take 12 minutes on CI.", "code_fact", None),
("Builds are slow.", "code_fact", None),
("This endpoint is slow.", "code_fact", None),
("Redis was down yesterday.", "code_fact", None),
("We migrated to Postgres last year.", "code_fact", None),
("We decided last year to move to Postgres.", None, None),
("Starting today, every new table gets a created_at column.", None, True),
("As of this release, the CLI requires Python 3.11.", None, None),
("From this sprint on, we estimate in hours.", None, True),
("Avoid global state, even in tests.", None, True),
("Never log PII, no exceptions.", None, True),
("Always ask before running destructive commands.", None, True),
("In this repo, use pnpm.", None, True),
("In this file, use pnpm.", "one_off_scope", None),
("Just for now, disable the cache.", "one_off_scope", None),
("Disable the cache for now, we'll revisit.", "undecided", None),
("Temporarily use the staging DB.", "one_off_scope", None),
("this time only: skip lint", "one_off_scope", None),
("skip lint this once", "one_off_scope", None),
("Skip lint.", None, None),
("lint is optional", "code_fact", None),
("Linting is mandatory.", None, None),
("Comments should explain why, not what.", None, None),
("It should work now.", "code_fact", None),
("That should be fine.", "code_fact", None),
("Hmm, not sure about that.", "undecided", None),
("ok let's do it", "acknowledgement_only", None),  # alone it only confirms an adoption
("I'd like you to always show a plan before editing files.", None, True),
("I want to know why the build fails.", "request_for_info", None),
("Explain the auth flow, and from now on always draw a diagram when explaining flows.", None, True),
("alwasy use parameterized queries", None, None),  # a one-slip typo of a key word is read through
("never ever commit .env files", None, True),
("DO NOT use moment.js anymore, we use date-fns now", None, True),
("use date-fns, not moment", None, None),
("moment.js is deprecated in our codebase", "code_fact", None),
("from now on pls write commit msgs in imperative mood", None, True),
("commit messages: imperative mood, always.", None, True),
("I'd appreciate it if you kept answers under 200 words", None, None),
("It would be great if you always included a test plan.", None, True),
("keep PRs small - under 400 lines", None, None),
("we're dropping python 3.8 support in the next release", None, None),
("python 3.8 support ends next release", "code_fact", None),
("Let's not use GraphQL.", None, None),
("Let's talk about GraphQL later.", "undecided", None),
("let me think about graphql", "undecided", None),
("idk if we want graphql", "undecided", None),
("graphql could be nice someday", "hedged", None),
("I think GraphQL would be overkill.", "no_directive", None),
("Just this PR: skip the snapshot tests.", "one_off_scope", None),
("for this ticket, ignore the flaky test", "one_off_scope", None),
("ignore flaky tests in CI reports", None, None),
("Use verbose logging while we debug this.", "one_off_scope", None),
("Use verbose logging in dev.", None, None),
("during the incident, page me for every alert", None, True),  # an event limit with "every" recurs
("Page me for every alert.", None, True),
("这个bug修完之前先别发版", "one_off_scope", None),
("发版前必须跑一遍回归测试", None, True),
("每次发版前都要跑回归", None, True),
("接口返回统一包一层 data", None, True),
("接口返回都包了一层 data", "code_fact", None),
("前端现在是 Vue 3", "code_fact", None),
("前端以后都用 Vue 3 写", None, True),
("我们打算明年迁到 k8s", None, None),
("我们可能明年迁到 k8s", "hedged", None),
("明年迁不迁 k8s 再说", "undecided", None),
("记一下：测试数据不要放在仓库里", None, True),
("这个先这样吧", "one_off_scope", None),
("以后别再用 var 了", None, True),
("别用 var", None, None),
("var 不要用", None, None),
("不要用 var，这次先忍了", "one_off_scope", None),
("代码里不要出现魔法数字，谢谢", None, None),
("Answer in English; the team doesn't read Chinese.", None, None),
("The team doesn't read Chinese.", "code_fact", None),
("Write tests for every bug fix — no exceptions.", None, True),
("Write a test for this bug fix.", "one_off_scope", None),
("hey, could u add type hints to utils.py?", "user_question", None),
("hey, could u always add type hints?", None, True),
("yo always add type hints kthx", None, True),
("Type hints everywhere please.", None, True),
("Do we have type hints everywhere?", "user_question", None),
("Type hints are everywhere already.", "code_fact", None),
]
CONFIRMATIONS_MORE = [("yes, ship it", None), ("Hmm, I need to check with the team first", "not_confirmed"), ("no, keep it as is", "not_confirmed"),
     ("let me sleep on it", "not_confirmed"), ("算了吧", "not_confirmed"), ("sure, go ahead", None), ("ok for this PR only", "one_off_scope"),
     ("sounds good, let's go with that", None), ("yes, but not now", "not_confirmed"), ("可以，先这样", "one_off_scope"),
     ("好，就按你说的办", None), ("不太好吧", "not_confirmed"), ("lgtm 👍", None), ("I don't think so", "not_confirmed"),
     ("that works for me", None), ("perfect, let's do that going forward", None), ("maybe", "not_confirmed"), ("why?", "not_confirmed")]
CONFIRMATIONS_MORE += [("yeah go for it", None), ("ok but only for the API", "one_off_scope"), ("sure thing", None), ("do it", None),
     ("nope", "not_confirmed"), ("hold that thought", "not_confirmed"), ("可以的", None), ("行吧", None),
     ("嗯，先不用", "not_confirmed"), ("这个方案不错，就用它", None), ("好主意，不过下个版本再说", "not_confirmed"),
     ("agreed, let's make that the standard", None), ("yes!! finally", None), ("yes — for now", "one_off_scope"),
     ("that's fine for the prototype", "one_off_scope"), ("go with option 2", None), ("I'd rather not", "not_confirmed"),
     ("let's do it, but check with Sam first", "not_confirmed"), ("ok, do it everywhere", None), ("👍👍", None)]
PROPOSALS_MORE = [("I recommend versioning the API in the path.", None), ("Should I version the API?", "not_a_proposal"),
     ("The API is versioned in headers today.", "not_a_proposal"), ("Let's version the API in the path.", None),
     ("One option is to version the API in the path.", None), ("Version the API in the path, e.g. /v2/users.", None),
     ("I have versioned the API in the path.", "not_a_proposal"), ("我建议把版本号放在 URL 里。", None),
     ("要不要把版本号放在 URL 里？", None), ("版本号目前放在 header 里。", "not_a_proposal")]
PROPOSALS_MORE += [("可以考虑用 Celery 做任务队列。", None), ("Maybe use Celery for the task queue?", None), ("Want me to set up Celery?", "not_a_proposal"),
     ("Celery is already configured in settings.py.", "not_a_proposal"), ("Done — Celery now handles the emails.", "not_a_proposal"),
     ("The cleanest fix is to move the queue to Celery.", None), ("You could also move the queue to Celery.", None),
     ("Option A: Celery. Option B: RQ. I'd pick Celery.", None), ("我觉得用 Celery 比较合适。", None), ("已经把队列迁到 Celery 了。", "not_a_proposal")]

@pytest.mark.parametrize("text,rule,lasting", PROBES)
def test_more_of_our_own_sentences(text, rule, lasting):
    r = read_quote(text, text)
    assert r.refusal() == rule, (r, text)
    if rule is None and lasting is not None:
        assert r.lasting == lasting, (r, text)


@pytest.mark.parametrize("text,rule", CONFIRMATIONS_MORE)
def test_more_confirmations(text, rule):
    assert confirmation_refusal(text) == rule


@pytest.mark.parametrize("text,rule", PROPOSALS_MORE)
def test_more_proposals(text, rule):
    assert proposal_refusal(text) == rule


PROBES_QUOTED = [  # (text, quote or None, expected rule, lasting): long messages, tense, terse norms
("ok so I spent the morning fighting the build again, super annoying. anyway going forward please run `make check` before you tell me something is done, it catches most of this stuff.", "going forward please run `make check` before you tell me something is done", None, True),
("ok so I spent the morning fighting the build again, super annoying.", None, "no_directive", None),
("the staging db is on postgres 15 btw", None, "code_fact", None),
("fyi the staging db runs postgres 15, so keep queries compatible with it", "keep queries compatible with it", None, None),
("Quick one: for the hotfix branch only, bump the version by hand.", None, "one_off_scope", None),
("We deploy on Fridays.", None, "code_fact", None),
("We don't deploy on Fridays.", None, None, None),
("No deploys on Fridays, ever.", None, None, True),
("Deploys happen on Tuesdays.", None, "code_fact", None),
("Deploys should happen on Tuesdays.", None, None, None),
("Going forward we'll deploy on Tuesdays only.", None, None, True),
("Can we deploy on Tuesdays from now on?", None, None, True),
("Can we deploy on Tuesday?", None, "user_question", None),
("这个接口的超时时间现在是 5 秒", None, "code_fact", None),
("这个接口的超时时间改成 5 秒", None, "one_off_scope", None),
("所有外部调用的超时统一设成 5 秒", None, None, True),
("外部调用超时以后都设 5 秒吧", None, None, True),
("外部调用超时或许可以设成 5 秒", None, "hedged", None),
("超时设几秒比较好？", None, "user_question", None),
("timeout 统一 5s，别再改来改去了", None, None, True),
("docs 里的 example 这次先别更新", None, "one_off_scope", None),
("以后 README 的例子都要能直接跑", None, None, True),
("README 的例子都能直接跑", "README 的例子都能直接跑", "code_fact", None),
("I need you to stop apologizing in every answer.", None, None, True),
("Stop apologizing.", None, None, None),
("you keep apologizing lol", None, "code_fact", None),
("Please don't summarize what you just did at the end of each answer, I can read the diff.", "Please don't summarize what you just did at the end of each answer", None, True),
("it's fine, no need to add tests for this one", None, "one_off_scope", None),
("We will never store raw card numbers.", None, None, True),
("We never stored raw card numbers.", None, "code_fact", None),
("Raw card numbers are never stored.", None, "code_fact", None),
("Raw card numbers must never be stored.", None, None, True),
("My rule of thumb: one assertion per test.", None, None, None),
("Rule of thumb: one assertion per test.", None, None, None),
("One assertion per test.", None, None, None),
("the app reads its settings from vault, not from env files", None, "code_fact", None),  # a fragment is no norm
]

@pytest.mark.parametrize("text,quote,rule,lasting", PROBES_QUOTED)
def test_quoted_clauses_of_longer_messages(text, quote, rule, lasting):
    r = read_quote(text, quote or text)
    assert r.refusal() == rule, (r, text)
    if rule is None and lasting is not None:
        assert r.lasting == lasting, (r, text)


CONFIRMATIONS_TERSE = [
    ("do it, but run the tests first", None),  # an extra instruction does not withdraw the yes
    ("absolutely not", "not_confirmed"), ("of course not!", "not_confirmed"), ("no way", "not_confirmed"),
    ("I guess so", "not_confirmed"), ("ok?", "not_confirmed"), ("not a fan", "not_confirmed"),
    ("that's a good idea but not now", "not_confirmed"), ("no objections", None), ("Sure, why not", None),
    ("可以，以后都这样", None), ("行吧，先这样", "one_off_scope"), ("嗯……再想想", "not_confirmed"), ("没意见", None),
]


@pytest.mark.parametrize("text,rule", CONFIRMATIONS_TERSE)
def test_terse_replies_to_a_proposal(text, rule):
    assert confirmation_refusal(text) == rule
