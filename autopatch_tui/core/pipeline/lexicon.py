"""Word classes of the Memory gate's clause reader (`reading.py`), English and Chinese.

These are closed classes of *form* — modal verbs, imperative heads, first-person commitment and
preference frames, interrogatives, epistemic adverbs, deictic scope words, time limits — never
lists of topics: "the service listens on port 8080" is refused because it is a declarative without
a directive, not because "port" is a bad word. Every pattern runs on one normalized, masked segment
(`clauses.py`) and is compiled once. The reasoning behind each class is in docs/memory.md ("The
semantic gate")."""

from __future__ import annotations

import re

from autopatch_tui.core.pipeline.clauses import DEFER, LASTING, LOCAL

_B, _E = r"(?<![a-z0-9_'])", r"(?![a-z0-9_])"  # word edges for English (a Chinese text has none)


def en(*alternatives: str) -> str:
    return _B + "(?:" + "|".join(alternatives) + ")" + _E


def rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(p for p in parts if p))


# ------------------------------------------------------------------------------ scope

# a recurring condition: "部署的时候…", "写文档的时候…" (not a finished or past one: "改完的时候", "刚才…的时候")
ZH_RECURRING = r"(?:^|[，,：:；;])(?:(?!刚才|刚刚|上次|昨天|那次|这次|今天|完|了|好了)[^，。,])+的时候"

# A lasting scope: the clause says it holds from now on, everywhere, for every case.
LASTING_SCOPE = rx(
    ZH_RECURRING,
    re.escape(LASTING),
    en(r"always", r"never", r"from now on", r"going forward", r"moving forward", r"henceforth", r"hereafter",
       r"(?:in|for) (?:the )?future", r"for future \w+", r"every ?time", r"each time", r"whenever", r"wherever",
       r"every(?:thing|where|one)?", r"all (?:new|future|our|of our|the|\w+s)", r"any (?:new|future)", r"for (?:all|each)",
       r"each (?!of\b|other\b)\w+", r"(?:for|to|on|in|with|at) any(?:thing|one|body)?\b", r"^any \w+",
       r"(?:for|on|in|to|with|across) new [a-z]+",  # "on new pages", "in new code": every future one
       r"by default", r"as a (?:rule|default|standard|convention|policy)", r"at all times", r"ever again", r"ever",
       r"across (?:the )?(?:board|project|repo|repository|codebase|code base|services|stack|org|company|team)",
       r"(?:project|repo|codebase|org|company|team)[- ]wide", r"any ?more", r"no longer", r"for good",
       r"permanently", r"no exceptions?", r"without exception", r"keep in mind", r"bear in mind",
       r"remember(?: to)?", r"(?:don't|do not|never) forget", r"for the record", r"make a note", r"settled",
       r"(?:is|it's|that's|this is) final", r"final (?:decision|answer|call|word)", r"decided", r"set in stone",
       r"standardi[sz]e[sd]?", r"consistently", r"must(?:n't| not)?", r"shall",
       r"in (?:this|our|the whole|the entire) (?:project|repo|repository|codebase|code base|team|org|company|monorepo)",
       r"(?:our|the team's) (?:standard|convention|policy|rule|default|style)",
       r"(?:is|are) (?:not allowed|forbidden|banned|prohibited|mandatory|required)",
       r"(?:don't|do not|never|stop) (?:\S+ ){1,5}?again",  # "don't suggest X again"
       ),
    r"以后|日后|将来都|从此|从今往后|从今以后|始终|总是|一直|永远|一律|统一|所有|全部|一切|每次|每个|每一|每当|凡是"
    r"|每(?:天|晚|日|周|月|年|小时|季度|回)|任何|默认|一概"
    r"|禁止|不许|不准|不允许|绝不|决不|绝对不|不要再|别再|不再|再也|项目里|整个项目|全项目|全局|记住|记得|别忘了|牢记|定了"
    r"|记一下|记下来|记着"
    r"|就这么定|定下来|最终|长期|永久|规范|约定|原则上|必须|务必|都要|一向|向来",
)

# A start point in time: a declarative under it is a commitment about the future ("From now on the
# build targets Java 21", "从这里开始，所有日志都带 request id"), unlike "always"/"all", which facts hold too.
LASTING_START = rx(re.escape(LASTING), en(r"from now on", r"going forward", r"moving forward", r"henceforth",
                                          r"hereafter", r"(?:in|for) (?:the )?future"), r"以后|今后|从今以后|从此|日后")
EN_ALWAYS_HEAD = re.compile(r"^(?:(?:please|just|also|so|and|ok|then)\s+)*(?:always|never)\b")
ZH_USE = re.compile(r"用(?!的是|的|了|过|着|户|法|例|途|量)")

# A one-off or local limit: this time, today, until an event, this chat, here, this file/PR/function.
_LOCAL_NOUNS = (r"patch(?:es)?|diffs?|prs?|pull requests?|mrs?|merge requests?|commits?|changes?|fix(?:es)?|"
                r"branch(?:es)?|files?|functions?|methods?|class(?:es)?|modules?|lines?|tests?|specs?|bugs?|issues?|"
                r"tickets?|scripts?|snippets?|blocks?|loops?|query|queries|endpoints?|components?|pages?|screens?|"
                r"views?|cases?|ones?|calls?|steps?|tasks?|jobs?|builds?|runs?|migrations?|cells?|notebooks?|"
                r"sections?|paragraphs?|tables?|examples?|hunks?|variables?|vars?|params?|parameters?|"
                r"arguments?|answers?|repl(?:y|ies)|responses?|messages?|explanations?|questions?|outputs?|"
                r"demo|release|version|sprint|iteration|week|weekend|morning|afternoon|evening|time|once|session|"
                r"conversation|chat|thread|discussion|review|helper|handler|service|folder|directory|dir|"
                r"hotfix|workaround|draft|revision|attempt|try|experiment|spike|prototype|poc")
LOCAL_SCOPE = rx(
    re.escape(LOCAL),
    en(r"(?:just |only )?(?:this|that) (?:time|once|one time)", r"just once", r"for once", r"one[- ]off",
       r"one[- ]time(?! (?:passwords?|passcodes?|codes?|tokens?|pins?|keys?|pads?|links?|secrets?)\b)",
       r"one[- ]time (?:thing|exception|change|fix)", r"today", r"tonight", r"tomorrow", r"for now", r"right now",
       r"just now", r"for the moment", r"at the moment", r"for the time being", r"in the meantime", r"meanwhile",
       r"temporar(?:y|ily)", r"for a (?:while|bit)", r"(?:just|only) (?:here|now|for now|for today)",
       r"(?:in|inside|within|on|at|for|to|of|during|throughout|from) (?:the )?(?:rest of )?(?:this|that|these|those"
       r"|the current|the present|this particular|this one|your next)(?: \w+)?? (?:" + _LOCAL_NOUNS + r")",
       r"(?:this|these|the current) (?:\w+ )?(?:" + _LOCAL_NOUNS + r")",  # not "that": "a hook that runs"
       r"in your (?:next )?(?:answer|reply|response|message)", r"(?:in )?here", r"right here", r"over here",
       r"for the (?:rest|remainder) of (?:the|this|our|my|today|tonight|the day)(?: \w+)?", r"while (?:we|i|you)(?:'re|'m)?",
       # a limit stated of the request itself ("this is only for the staging push"), a throwaway thing
       r"(?:this|that|it)(?:'s| is| was) (?:only|just|solely|purely|merely|strictly) (?:for|about|meant for)",
       r"throw[- ]?away", r"interim", r"ad[- ]hoc"),
    r"这次|本次|此次|这回|这一次|这一回|今天|今晚|明天|这周|本周|这两天|这几天|这段时间|这阵子|眼下|暂时|临时|暂且|姑且|先这样"
    r"|下不为例|仅此一次|就这一次|这一?版(?!本号)|本版(?!本)|(?:只是|仅仅是|仅是|只)(?:为了|针对|用于)|这里|这儿|此处|这处|这一处|这行|这一行|演示|demo"
    r"|(?:这一?轮|本轮|这场|本场|这段|这次|本次|此次|当前|这个)\s*的?\s*(?:对话|会话|聊天|交流|问答|沟通)"
    r"|(?:这个|这份|这段|这条|这些|本|该|当前)\s*(?:文件|函数|方法|类|模块|补丁|pr|mr|提交|commit|分支|测试|用例|bug|问题|回答"
    r"|回复|对话|会话|脚本|片段|接口|页面|任务|版本|迭代|需求|改动|变更|地方|循环|查询|组件|步骤|功能|服务|目录|diff)",
)
# A limit relative to an event: one-off unless the clause says it recurs ("Don't merge until the release
# ships" is a freeze; "发版前必须跑一遍回归" / "always run it before the release" hold for every release).
EVENT_SCOPE = rx(
    en(r"until(?! (?:\d{4}|v?\d+(?:\.\d+)*|version|release \d))",
       # an event bounded by a version or a change landing: "until 3.0 ships", "till the migration is merged"
       r"(?:until|before) (?:[^,.;:]|\.(?=\d)){1,30}? (?:ships|lands|is out|goes out|is released|gets released|releases|is done|"
       r"merges|is merged|gets merged|finishes|is finished|is over|ends|is live|goes live|launches|is fixed|gets fixed|"
       r"comes out|is ready|is cut|is tagged|lands on main)", r"(?:before|during|for|after) (?:the |our |my |"
       r"this |today's |tomorrow's )?(?:demo|launch|release|deadline|freeze|cutover|presentation|meeting|"
       r"hotfix|incident|outage|rollout|go[- ]live|code freeze|audit)"),
    r"(?:发版|上线|发布|演示|冻结|封版|交付|验收|答辩)(?:之前|前|以前|期间)|直到"
    # a bound at the next version or a later time: "这一版先关掉，下一版再开"
    r"|(?:下一?版|下个版本|下个迭代|下次发版|下周|下个月|明天|回头|改天)(?:再|才)|(?<![a-z])等[^，。,]{1,12}(?:之后|以后|再)"
    # "这个 bug 修完之前先别发版": before a finished or named event (not "合并之前先 rebase", a step order)
    r"|(?:这|那|该|本)[^，。,]{0,10}(?:之前|以前)先|(?:完|好|结束|搞定|落地|修复)(?:之前|以前)先"
    # before an event is completed: "在迁移完成之前别改表结构", "审计结束以前"
    r"|(?:完成|结束|搞定|落地|修好|弄好|做完|跑完|迁完|合完|审完|发完)(?:之前|以前)",
)

# "先…" (for now, first) is one-off unless it starts a sequence ("先写测试再写实现"); compounds are not it.
XIAN = re.compile(r"(?<![首优预原事祖领率抢争事])(?<!不用)(?<!不要)(?<![别])(?<!不必)(?<!无需)(?<!没必要)(?<!用不着)"
                  r"先(?!生|进|前|例|锋|导|驱|天|行|后|于|把|头)")
XIAN_NEGATED = re.compile(r"(?:不用|不要|别|不必|无需|没必要|用不着)[^，。,]{0,3}先")
# a report of what was done: a past time word and a perfective 了 ("刚才部署的时候先跑了一遍冒烟测试")
ZH_PAST = re.compile(r"(?:刚才|刚刚|昨天|前天|上次|上周|之前|早就|已经)[^，。]*?了|[\u4e00-\u9fff]了(?:一|两|几)(?:遍|次|下|轮)")
# a statement limiting the request it comments on: "this is only for the staging push", "这只是为了这次演示"
LIMIT_STATEMENT = re.compile(r"^(?:(?:this|that|it)(?:'s| is| was) (?:only|just|solely|purely|merely|strictly)\b"
                             r"|(?:这|这个|这些|那)?(?:只是|仅仅是|仅是|就是)(?:为了|针对|用于)?)")
# 先 after a condition is a step order ("提交前先跑 lint", "部署的时候先跑冒烟测试"), not "for now"
XIAN_CONDITION = re.compile(r"(?:前|之前|以前|时|时候|之后|后)\s*[,，]?\s*先")
# a clause-final 再说/再看看 defers ("先用 SQLite 跑起来再说"); followed by an object it is the sequence's
# second step ("先列 blocking issues 再说 nit")
# a *reversal* as the sequence's later step makes the first a temporary measure: "先把日志调成 debug，查完
#再改回来", "turn on verbose logging and switch it back afterwards" (a particle of return on a verb)
REVERSAL = re.compile(r"(?:改|调|切|换|设|开|关|降|升)回(?:来|去)?|恢复原样|还原回去|"
                      r"\b(?:change|switch|set|turn|put|flip|dial) (?:it|them|that|this|those) back\b|"
                      r"\brevert (?:it|them|that|this) (?:afterwards|after|later|when)\b")
XIAN_SEQUENCE = re.compile(r"再(?!(?:说|看看|议|讨论|决定|商量)(?:吧|呗)?\s*(?:[,，。!！?？]|$))|然后|之后|接着|随后")

# ------------------------------------------------------------------------------ mood

# Leading words that do not change a clause's mood: fillers, stance markers, scope phrases,
# subordinate "when/if …," clauses. Stripped (repeatedly) before the head is read.
EN_LEAD = re.compile(
    r"^(?:(?:please|kindly|also|and|so|then|now|just|ok|alright|all right|right|well|oh|hey|yeah|yes|yep|sure|anyway|"
    r"anyways|ugh|look|listen|fine|yo|hi|hello|srsly|oh and|one thing|quick note|note|fyi|"
    r"by the way|for your info|one more thing|honestly|seriously|really|actually|again|in my opinion|"
    r"to be honest|personally|i (?:think|believe|feel)(?: that)?|guys|folks|team|" + re.escape(LASTING) + r"|"
    + re.escape(LOCAL) + r"|"
    r"always|never|generally|in general|from now on|going forward|moving forward|henceforth|by default|"
    r"as a rule|(?:in|for) (?:the )?future|everywhere|definitely|absolutely|strictly|only|simply|"
    r"(?:just |only )?(?:for now|right now|for the moment|for the time being|today|tonight|this time|once|"
    r"this once|temporarily|for today)|"
    r"in (?:this|our|the) (?:project|repo|repository|codebase|code base|team)|"
    r"(?:for|in|on|with|across) (?:all|every|each|any|new|our|the) [^,]{1,30},|"
    r"(?:when|whenever|if|once|after|before|while|unless|in|for|on|at|as|with|across) [^,]{1,40},)"
    r"(?![a-z0-9_'])\s*[,:;!.-]*\s*)+")
ZH_LEAD = re.compile(
    r"^(?:(?:暂时|临时|今天|今晚|明天|这次|本次|此次|这回|这一次|眼下|请|麻烦(?:你|您)?|劳驾|记得|记住|务必|一定(?:要)?|千万(?:要)?|以后|今后|往后|日后|从今以后|从今往后|"
    + re.escape(LASTING) + r"|" + re.escape(LOCAL) + r"|首先|先|都|也|就|还是|直接|统一|一律|全部|全都|尽量|尽可能|最好|永远|始终|总是|每次|默认|咱们|我们"
    r"|大家|你|您|所有的?|凡是|另外|还有|然后|对了|顺便|好的?|嗯|那就|那|ok|行|可以|对|是的)[,，、:：\s]*)+")

# An imperative head: a base-form verb of giving instructions (any domain).
BASE_VERBS = frozenset("""
apply use add write keep put run make avoid prefer stop start skip include exclude remove delete drop rename move split merge
squash rebase commit push pull tag release deploy ship pin lock bump upgrade downgrade update migrate switch replace
convert format lint test check validate verify ensure document comment annotate type log print raise throw catch handle
return wrap name call prefix suffix indent align sort order group limit cap cache retry reuse refactor extract inline
declare define import export mock stub fake assert guard sanitize escape encode decode hash encrypt store save load read
fetch send answer reply respond cite quote reference link mention list give ask confirm default target support maintain
follow stick treat mark flag label version favor favour choose pick opt standardize standardise adopt enable disable turn
set configure pass leave let allow forbid ban block require enforce reject accept approve review clean wipe purge trim
strip compress bundle build compile package publish vendor gate execute invoke schedule batch paginate stream parse
serialize deserialize measure benchmark profile trace monitor alert notify lead begin end open close finish stay remain
be do get have try aim strive lean place attach append prepend insert break chunk pad double-check rerun re-run spell
capitalize lowercase uppercase abbreviate translate localize prioritize prioritise minimize maximize reduce increase
decrease lower bound clamp truncate cut omit ignore silence suppress hide expose route proxy throttle debounce cancel
abort kill restart reload refresh rebuild reinstall install uninstall structure organize organise model design plan
prototype go speak talk communicate respect honor keep-in-mind unit-test separate isolate split-out centralize
consolidate generate regenerate emit produce show display render highlight summarize summarise explain describe tell
walk state note page ping email message cc escalate share post report upload download back up backup restore archive
""".split())
# Closed-class words that never head an imperative: prepositions, conjunctions, interjections,
# pronouns, determiners, time and degree adverbs. An open-class word heading a clause and followed
# by an object (`OBJECT_START`) is an imperative even when BASE_VERBS lacks it ("narrate each step").
FUNCTION_WORDS = frozenset("""
about above after against along amid among around at before behind below beneath beside besides between beyond but
by despite down during except for from in inside into like near of off on onto out outside over past since through
throughout till to toward towards under underneath unless until up upon via with within without and or nor so yet
because although though whereas whether if once while when whenever where wherever what which who whom whose why how
i me my mine we us our you your he him his she her it its they them their this that these those here there
a an the some any no every each all both either neither half most many much more less few several enough such
yes yeah yep nope ok okay hey hi hello oh ah uh um hmm wow oops sorry thanks thank please great nice cool fine
sure well anyway also just only even still already again too very really quite rather almost maybe perhaps
weird strange funny odd interesting crazy awesome glad sad bummer shame pity surprising amazing reminder ps note
now then today tonight tomorrow yesterday soon later earlier recently lately sometimes often usually never always
not don't doesn't didn't won't can't isn't aren't wasn't weren't done kinda sorta btw
is are was were be been being am do does did have has had will would can could should shall may might must
""".split())
OBJECT_START = frozenset("the a an each every all any my our your this these those it them its their his her".split())

# Verbs of a comment that carries no proposition of its own ("not sure yet", "let's see", "idk")
COMMENT_VERBS = frozenset("be do have know see think guess sure get".split())

# After an imperative head, one of these within three words means the head was a noun ("Test
# coverage is low", "Log files are rotated"): a declarative.
FINITE = frozenset("""
is are was were 's has have had does do did will would can could should must may might shall isn't aren't wasn't
weren't hasn't haven't doesn't don't didn't won't can't cannot goes contains lacks sits seems looks happens exists
depends belongs means""".split())

# A prepositional or conditional phrase fronted without a comma, before the subject of a desire, a
# commitment or an instruction: "for every new endpoint I'd like an example", "on new pages I want …"
EN_FRONTED = re.compile(r"^(?:for|on|in|with|across|at|inside|within|under|during|when|whenever|after|before|while|"
                        r"throughout|to|if)\s[^,]{1,60}?\s(?=(?:i|we|you)(?:'d|'ll|'re|'m)?\s)")
EN_QUANTIFIED = re.compile(r"\b(?:all|every|each|any|new|future)\b")
# irregular past forms after a noun heading a clause: an event report ("build broke", "the job ran")
PAST_IRREGULAR = frozenset("broke ran went took got fell hung blew died froze threw stuck sent made wrote".split())
# frequency adverbs: between a noun and its verb they mark a statement ("lint always runs first")
FREQUENCY = frozenset("always never usually often sometimes normally typically generally still already "
                      "automatically currently rarely seldom constantly regularly occasionally".split())

EN_PROHIBITION = re.compile(r"^(?:don't|do not|never|no more|stop|avoid|quit|refrain from|no need to)\b"
                            r"|^no (?!problem|worries|idea|way|thanks|thank|doubt|objection)[a-z]")
# "No X" with an aspect adverb of a state is a description, not a prohibition (issue 29): "no CI for the
# docs site yet", "no Docker image so far" (beside "No default exports", a rule)
EN_STATE_ASPECT = re.compile(en(r"yet", r"so far", r"as of (?:now|today|yet)", r"currently", r"at the moment", r"still"))
EN_LETS = re.compile(r"^(?:let's|let us)\b(?! (?:see|think|discuss|talk|revisit|wait|hold|come back|circle back|park"
                     r"|table|decide|figure|look into|check|explore|consider|brainstorm|sleep|chat|meet|sync))")
EN_REMEMBER = re.compile(r"^(?:make sure|be sure|ensure|remember|keep in mind|bear in mind|note that|mind that|"
                         r"(?:don't|do not) forget|be careful to|take care to)\b|^" + re.escape(LASTING))
EN_YOU = re.compile(r"^you (?:should|must|need to|have to|'ve got to|have got to|shall|will|'ll|are to|may not|"
                    r"can't|cannot|mustn't|shouldn't|never|always|don't|do not|ought to)\b")
EN_PREFERENCE = re.compile(
    r"^(?:i|we)(?:\s+(?:really|strongly|definitely|personally|always|do|just|would|still))*\s*(?:want|need|'d like|would like|"
    r"like|love|hate|dislike|don't like|do not like|can't stand|cannot stand|prefer|'d prefer|'d rather|rather|"
    r"expect|insist|require|ask that|'d appreciate|appreciate|'m a fan of|am a fan of|'m not a fan of|am not a fan of|"
    r"favou?r)\b(?! to (?:know|understand|see how|learn|ask|check|hear|find out|clarify))"
    r"|^(?:my|our) (?:preference|pref|wish)\b|^what i (?:want|prefer|like)\b|^it (?:would|'d) be (?:great|nice|good|"
    r"best|better) if you\b|^i'd (?:love|be happy) (?:it )?if\b")
EN_COMMIT = re.compile(
    r"^(?:we|our team|the team|we all)\s*(?!(?:always|never) (?:\w+ed|had|was|were|did|went|got|made|took|ran|wrote|"
    r"saw|broke|built|sent|kept|left)\b)(?:will|'ll|shall|are going to|'re going to|should|must|need to|have to|"
    r"ought to|are moving to|'re moving to|are switching to|'re switching to|are migrating to|'re migrating to|"
    r"are going with|'re going with|go with|stick with|stick to|standardi[sz]e|always|never|don't|do not|no longer|"
    r"won't|will not|decided|have decided|'ve decided|agreed|have agreed|'ve agreed|settled|chose|have chosen|"
    r"'ve chosen|picked|opted|require|commit|keep|only|avoid|ban|forbid|(?:can't|can not) \S+(?: \S+){0,3} (?:without|unless)|use \S+(?: \S+){0,3} (?:for|in|across|on)"
    r" (?:all|every|each|any|new|our)|use [^,]* " + re.escape(LASTING) + r")\b"
    r"|^(?:our|the|my|team) (?:rule|policy|convention|standard|default|decision|choice|plan|approach|guideline|"
    r"preference)s? (?:is|are|will be|here is)\b"
    r"|^(?:that|this|it)(?:'s| is| will be) (?:the|our) (?:plan|rule|decision|standard|convention|default|policy|way)\b"
    # a label announcing the decision: "decision time:", "decided:", "final call:"
    r"|^(?:decision|decided|final (?:decision|call)|the decision|verdict|ruling)(?: time| made)?$"
    r"|^(?:my |our |the |team |house )?(?:rule of thumb|rule|convention|policy|guideline|principle|standard)s?$"
    # a planned change in the progressive: "we're moving the jobs to Airflow", "we are dropping v1"
    r"|^(?:we|our team|the team)\s*(?:'re|are) (?:now )?(?:moving|switching|migrating|dropping|adopting|replacing|"
    r"deprecating|removing|retiring|standardi[sz]ing|introducing|phasing out|sunsetting|rewriting|splitting|merging|"
    r"consolidating|upgrading|downgrading|pinning|freezing|banning|requiring|enforcing|stopping|killing|ditching|"
    r"abandoning|going)\b")
EN_DECIDED = re.compile(r"\b(?:decided|decision is|it's decided|that's decided|settled|final decision|set in stone|"
                        r"agreed on|is final)\b")
EN_DECIDED_NEGATED = re.compile(r"(?:\bnot|n't|never|\bno|\bun|\byet to)\s*(?:\w+\s+){0,2}$")
# deontic modality with any subject ("All endpoints must be versioned"); "should" with it/that/this/
# there is epistemic ("it should work now")
EN_MODAL = re.compile(
    r"(?<!\bit )(?<!\bthat )(?<!\bthis )(?<!\bthere )\b(?:must|must not|mustn't|should|should not|shouldn't|"
    r"shall|shall not|has to|have to|need to|needs to|ought to|is to be|are to be|may not|is required to|"
    r"are required to)\b"
    r"|\b(?:is|are|isn't|aren't) (?:not )?(?:allowed|forbidden|banned|prohibited|mandatory|required|preferred|"
    r"a must|off[- ]limits|a no[- ]go)\b|\b(?:is|are) not (?:ok|acceptable)\b|\bnot allowed\b")
# a norm over a quantified subject: "Every public endpoint needs an example", "each PR gets two reviews"
# ("Every handler logs to stdout" states a fact: only verbs of requirement make the norm)
EN_NORM = re.compile(r"^(?:every|each|all|any)\b[^,]*?\b(?:needs?|requires?|gets?|deserves?)\b(?! to be (?:done|fixed))"
                     r"|^[^,]*?\b(?:always|never) (?:needs?|requires?|gets?)\b(?! (?:[a-z]+(?:ed|en)|cold|hot|warm|"
                     r"slow|fast|stale|full|empty|big|large|worse|better|stuck|lost|busy|flaky|red|green|noisy|weird)\b)")
# a *policy in the present tense* (issue 29, round two): a statement made normative by its form, not
# its verb — an exclusive ("only") on a channel or a present verb, "never" in a passive ("main is never
# deployed directly"), a deontic passive bounded by "only" ("release branches are cut from main only"),
# "nobody … without/unless". A pronoun subject ("it only fails on CI"), a quantity or a time clause
# after "only" ("only processes one job at a time", "only kicks in after a timeout") or a past tense
# stays a description of the system, and so does a definite subject's "only" ("the api only speaks json").
_PARTICIPLE = r"(?:[a-z]+(?:ed|en)|cut|built|run|set|put|made|kept|done|written|read|sent|shipped|held|bound|split|shut)"
_NOT_SUBJECT = r"(?!(?:it|this|that|which|there|he|she|i|you|what|who)\b)"
EN_POLICY = re.compile(
    r"^" + _NOT_SUBJECT + r"[^,]*?\b(?:is|are) (?:only|never|exclusively) " + _PARTICIPLE + r"\b"
    r"|^" + _NOT_SUBJECT + r"[^,]*?\b(?:is|are) " + _PARTICIPLE + r"\b[^,]* (?:only|exclusively)$"
    r"|^" + _NOT_SUBJECT + r"[^,]*?\b(?:from|through|via|by|in|on|with|over|behind|under) [^,]{1,40} (?:only|exclusively)$"
    # a generic subject (bare, quantified or ours: "services only read it through the sdk"); a definite
    # one describes what that component does ("the api only speaks json")
    r"|^(?!(?:the|a|an|its|this|that|these|those)\b)" + _NOT_SUBJECT + r"(?:[\w./-]+ ){1,3}only (?!(?:if|when|after|before|once|until|on|in|at|for|a|an|one|\d)\b)"
    r"(?![a-z]+ed\b)[a-z]+\b"
    r"|^(?:nobody|no one|no-one|none of us) [a-z]+s\b[^,]*\b(?:without|unless|except)\b")
# what keeps an exclusive descriptive: a quantity, a frequency or a time clause in the statement
EN_POLICY_DESCRIPTIVE = re.compile(r"\b(?:one|two|three|four|five|\d+|once|twice|a single|at a time|sometimes|"
                                   r"occasionally|after|when|whenever|if|until|while|was|were|had|did)\b")
ZH_POLICY = re.compile(r"只(?:从|通过|经过|经|走|由|用|能|允许|许|放|写|读|在)|(?:从不|从来不|绝不|决不|一律不)")
ZH_POLICY_DESCRIPTIVE = re.compile(r"时|的时候|之后|以后|一次|一个|[一两二三四五六七八九十]\s*[个次条份]|会|了")
# a verbless norm: a short noun phrase under a constraint ("One assertion per test.", "Tabs over
# spaces.", "Max 100 chars per line."); a verbless phrase without one is a label or a fact
EN_VERBLESS_NORM = re.compile(r"\b(?:per|max|maximum|min|minimum|at most|at least|no more than|instead of|over|"
                              r"rather than|only|not)\b|>")
DETERMINERS = frozenset("the a an our this that these those my your its their his her we it they i you".split())
EN_PLEASE = re.compile(r"\bplease\b")
# a reassurance about the conversation, no rule: "don't worry about it", "no need to bother", "不用担心"
REASSURANCE = re.compile(r"^(?:(?:so|and|but|just|ok)\s+)*(?:don't|do not|no need to|never) (?:worry|bother|sweat|stress|panic|"
                         r"fret)\b|^nothing to worry about|^no (?:worries|stress)$|^(?:it's |that's )?(?:not a big deal|no big deal)"
                         r"|^(?:所以|那)?(?:不用|别|不必|无需)(?:太)?(?:担心|在意|紧张|管它|理会)")
# changing a habit: "quit adding X", "stop writing Y", "start adding Z" (a behaviour, not one task: "stop the server")
EN_HABIT_CHANGE = re.compile(r"^(?:stop|quit|cease|give up|start|begin|keep) (?!(?:the|a|an|this|that|it|my|our|your)\b)"
                             r"[a-z-]+ing\b")
EN_POLITE = re.compile(r"^(?:could|can|would|will) you\b|^would you mind\b|^(?:can|could) we\b|^do you mind\b"
                       r"|^is it (?:ok|possible) (?:if|to)\b"
                       # a rule proposed to the assistant as a question: "how about we always …?", "why don't we …?"
                       r"|^(?:how about|what about|what if) (?:we|you)\b|^why (?:don't|do not) (?:we|you)\b")
# a request for information (not a lasting rule)
EN_INFO = re.compile(
    r"^(?:(?:please|can you|could you|would you)\s+)*(?:tell me|explain|show me|describe|remind me|let me know|"
    r"help me understand|clarify|walk me through|give me an overview|summari[sz]e|what's|what is|how does|"
    r"how do|how is|i (?:want|'d like|would like|need) to (?:know|understand|see|learn|find out)|i wonder|"
    r"i'm wondering|i am wondering)\b")
EN_QUESTION_START = re.compile(
    r"^(?:what|how|why|which|where|when|who|whom|whose|is|are|am|was|were|does|do|did|has|have|had|should|shall|"
    r"can|could|would|will|may|might|isn't|aren't|doesn't|don't|won't|wouldn't|shouldn't|any idea)\b")
EN_INVERSION = re.compile(r"^(?!do (?:it|this|that|them|so|such)\b)(?:do|does|did|is|are|was|were|can|could|should|shall|will|would|have|has|may|might|"
                          r"must|am)\s+(?:we|you|i|it|they|he|she|this|that|there|the|our|your|these|those)\b")
EN_WH_START = re.compile(r"^(?:what|how|why|which|where|who|whom|whose)\b")
QUESTION_TAG = re.compile(
    r"[,，]?\s*(?<![a-z])(?:right|ok|alright|all right|yes|agreed|got it|understood|clear|yeah|deal|fair|ok with you|"
    r"sound good|sounds good|makes sense|is that ok|cool|got that|capisce|comprende|fine|good|agree|you know|eh|no|"
    r"yes or no|clear enough|understand|好吗|好不好|可以吗|行吗|行不行|对吧|好么|可以不|ok吗|成吗|没问题吧)\s*\?*$"
    # an acknowledgement asked for after a comma: 明白？/ 懂了吗？/ 听到没？/ 记住了没有？/ 清楚不？
    r"|[,，]\s*(?:(?:明白|懂|清楚|听到|听见|收到|记住|知道|同意|可以|行|好|成|对)了?(?:吗|么|没有?|不|嘛|吧)?"
    r"|(?:有|没)(?:问题|意见|异议)(?:吧|吗|么|没有?)?)\s*\?*$")
EN_UNDECIDED = rx(
    en(r"not decided", r"haven't decided", r"have not decided", r"hasn't been decided", r"not yet decided",
       r"undecided", r"not sure", r"unsure", r"should we", r"shall we", r"do we want", r"or not", r"open question",
       r"still deciding", r"to be decided", r"tbd", r"up in the air", r"haven't made up", r"not settled",
       r"on the fence", r"torn between", r"i don't know", r"thinking (?:about|of)", r"considering", r"wondering",
       r"let's (?:see|think|discuss|talk|revisit|wait|hold off|come back|circle back|park|table|decide later|"
       r"figure|look into|explore|consider|brainstorm|sleep)", r"let me (?:think|check|sleep|get back|ask|run it by)",
       r"(?:i|we)'ll (?:see|think|discuss|decide later|revisit|talk)", r"revisit", r"come back to",
       r"(?:think|talk) (?:about it|it over)", r"sleep on it", r"check with", r"run it by", r"get back to you",
       r"hold off", r"not now", r"not yet", r"maybe later", r"decide later"),
    r"(?:^|\b(?:decid\w*|sure|know|wonder\w*|discuss\w*|consider\w*|question|ask\w*|think\w*|debat\w*|unclear|"
    r"figure out)\b[^.?!]{0,40})\bwhether\b",
    # an indirect question with "if" after a verb of doubt: "I wonder if X is better", "not sure if we need it"
    r"\b(?:wonder\w*|not sure|unsure|don't know|do not know|undecided)\s+if\b",
)
EN_HEDGE = rx(en(
    r"maybe", r"perhaps", r"possibly", r"probably", r"likely", r"unlikely", r"might", r"could (?:try|be|maybe|also|"
    r"consider|switch|move|use|go|look|add|drop|start|migrate)", r"may (?:want|need|switch|move|use|be|have)",
    r"i guess", r"i suppose", r"i'm not certain", r"not necessarily", r"ideally", r"hopefully", r"eventually",
    r"some ?day", r"one day", r"at some point", r"sooner or later", r"down the road", r"in theory",
    r"worth (?:a try|trying|considering|exploring|a shot|a look)", r"give \w+ a (?:try|shot|go)", r"(?:we|you) could",
    r"i (?:think|expect|bet|reckon|imagine) (?:we|it|that|this|they|i)(?:'ll| will| would| might)", r"i bet",
    r"i reckon", r"kind of want", r"sort of want", r"not sure"))

ZH_PROHIBITION = r"不要|别(?![人的处名])|不许|不准|禁止|不得|(?<![a-z])勿|不可以|不能|不用|无需|不必|避免|杜绝|少用|别再|不要再"
# a manner adjective with 点 is an imperative: "简短点", "说具体一点"
ZH_MANNER = (r"(?:简短|简洁|简单|详细|具体|快|慢|短|少|多|清楚|直接|礼貌|正式|随意|认真|仔细|小心|精简|通俗|直白|客气|干脆)"
             r"一?点儿?(?:吧|哈|啊|呀)?\s*$")
ZH_DIRECTIVE = re.compile(
    ZH_MANNER + r"|" + ZH_PROHIBITION + r"|先不|暂不|先别|暂时不|先这样|先(?:用|写|跑|做|加|把|改|关|开|跳过|忽略|给)"
    # a step order heading a clause or after its condition: "每当引入新依赖，先检查许可证"
    r"|(?:^|[，,：:]|前|时候?|后)\s*(?:首先|先)(?!生|进|前|例|锋|导|驱|天|行|后|于|头|是)(?=\s*[\u4e00-\u9fffa-z])"
    r"|把[^，。,]{1,20}?(?:改|换|调|设|关|开|删|去掉|加|放|写|拆|合|升|降|切)|(?<![申邀提宴回])请(?!求|假|教|客|示)|务必|必须|一定要|千万|应该|应当|一律|统一|都要|都得|都用|就用|就选|就按|改用|改成|改为|换成|记住|记得|别忘了"
    r"|尽量|尽可能|最好|优先|坚持|沿用|保持|不再|我(?:们)?(?:想要|希望|要求|喜欢|更喜欢|偏好|倾向于?|习惯|需要你|讨厌|不喜欢|受不了)"
    r"|希望你|你(?:要|得|必须|应该)|(?:我们|咱们)(?:以后|今后|统一|一律|都|就|决定|会|将|准备|要|不再|不用|改用|用(?!的)|不?打算"
    r"|不?准备|不?计划)"
    r"|(?<![能会])(?<!可以)(?:直接|马上|立刻|赶紧|全部|统一|一律|都|就|全都)\s*(?:删|改|换|用|去掉|移除|加|写|跑|合并|拆|禁用|启用|关|开|下线|上线|迁|切|走|升级"
    r"|降级|砍掉|废弃|弃用|替换|重写)"
    r"|(?:决定|定了|定下来|就这么定|拍板|敲定|说定了|约定|规定)|(?:规范|原则|规矩|惯例|标准)是"
    r"|(?<![需重主只想必])要(?![不是么求])(?=\s*[\u4e00-\u9fffa-z])|(?:都|就|也|还|你|我们|咱们)得(?=\s*[\u4e00-\u9fffa-z])"
)
# an imperative head: a clause starting with an action verb (after the ZH_LEAD adverbs); not when a
# copula makes it a statement ("回答是中文的" is how answers are, "回答用中文" how they should be)
ZH_VERB_HEAD = re.compile(
    r"(?:^|[，,]\s*)(?:用|使用|采用|写|加|添加|加上|补上|跑|运行|执行|改|删|删除|删掉|去掉|移除|保留|禁用|启用|开启|关闭|关掉|提交|合并|拆"
    r"|拆分|把|按|按照|遵循|遵守|检查|回答|回复|输出|打印|记录|命名|放|放在|引入|升级|降级|迁移|固定|锁定|标注|注明|说明|列出|给出"
    r"|提供|附上|带上|返回|处理|捕获|校验|验证|切到|切换到|迁到|选用|走|上|接入|部署|发布|打包|编译|做|先给|先写|先跑|给出|显示|展示"
    r"|引用|注释|缩进|格式化)")
# a habit of the system stated with a frequency adverb after its subject: "nightly 任务每天都跑两遍",
# "构建总是先跑 lint" — a statement, whatever verb follows, unless a norm word makes it a rule
ZH_HABIT = re.compile(r"^(?!你|您|我们|咱们|以后|今后|请)[^，,。；;]{0,15}[^，,。；;里中上下内外时前后间](?:每天|每晚|每周|每月|每小时"
                      r"|向来|一向|通常|平时|经常|往往|老是)")  # a subject, not a place; 一直/总是 also make norms ("回复一直用中文")
# a habit or prediction of the system with 会: "每次推送都会触发一次扫描", "备份脚本每晚会自动跑"
ZH_WILL = re.compile(r"^(?!你|您|我们|咱们|以后|今后|请)[^，,。；;]{1,20}?(?:都|总|自动|就|也)?会(?!议|话|员|计|签|长|场|儿|不会)"
                     r"(?=\s*[\u4e00-\u9fffa-z])")
ZH_NORM = re.compile(r"(?<![申邀提宴回])请(?!求|假|教|客|示)|必须|务必|一律|统一|要|得|应该|应当|别|不要|不许|不准|禁止|记得|记住|以后|今后|" + re.escape(LASTING))
ZH_PREFERENCE = re.compile(r"我(?:们)?(?:想要|希望|要求|喜欢|更喜欢|偏好|倾向于?|习惯|讨厌|不喜欢|受不了)|希望你")
ZH_INFO = re.compile(r"^(?:请)?(?:告诉我|解释|说明一下|讲讲|介绍一下|帮我看看|看一下|查一下|我想知道|我想了解|我想问|能解释|解释一下"
                     r"|说说|讲一下|分析一下)")
ZH_QUESTION = re.compile(r"(?:吗|呢|[好对是行能要]么)\s*$|什么|怎么|为什么|为啥|哪(?!怕)|几个|多少|如何|怎样|(?<![a-z])啥")
ZH_CHOICE_QUESTION = re.compile(r"是不是|有没有|能不能|可不可以|会不会|行不行|对不对|好不好")
ZH_POLITE = re.compile(r"^(?:能不能|能否|可不可以|可以|麻烦(?:你|您)?|请问能|你能|你可以|您能)")
ZH_UNDECIDED = re.compile(
    r"(?![能可行好对是会])([\u4e00-\u9fff])不\1(?![吧吗])|还没(?:决定|定|想好)|没(?:决定|想好)|未决定|尚未决定|要不要|需不需要|该不该|用不用|是不是要|待定|不确定|拿不准|再讨论|再议"
    r"|还在考虑|在考虑|考虑要不要|纠结|犹豫|想想|商量|问问|" + re.escape(DEFER)
    + r"|^是否|(?:决定|确定|考虑|讨论|想好|知道|想想|商量|评估)[^。？！]{0,12}是否|是否(?:要|应该|应当|需要|该|值得)")
ZH_HEDGE = re.compile(r"也许|(?<!尽)可能(?!性)|或许|大概|大约|估计|说不定|不一定|看情况|似乎|好像|貌似|没准|兴许|(?<![调测尝考面笔])试(?:试|一下|一试)"
                      r"|可以考虑|考虑一下|考虑考虑|有空(?:的话)?|有机会|改天|回头|将来可能|应该会|也行|都行|随便")

# ------------------------------------------------------------------------------ facts

# Chinese state markers: a bare "use" (用) with one of them is a description, not an instruction
# (the English declarative is refused by its mood alone: an unused word list of its verbs pinned nothing)
ZH_FACT = re.compile(
    r"现在|目前|当前|眼下(?!先)|已经|已(?!决定|确定)|正在|在用|用的是|的是|版本是|是\s*v?\d|为\s*v?\d|都是|全是|全部是|一直是"
    r"|过了|通过了|挂了|了\s*$|配置为|设置为|配置成|监听|依赖|跑在|部署在|默认是|默认为|(?<!不)是|有\s*\d|\d")
# a command listing (issue 29): a label and nothing but code spans (masked to "code"): "Format: `cargo fmt
# --all`", "- 测试：`pytest -q`" says how the repo is run, no rule ("Format: run `cargo fmt` before a PR" is one)
COMMAND_LISTING = re.compile(r"^(?:[^:：,，]{1,40}[:：=]\s*)?code(?:\s*(?:,|/|or|and|&&|;|\|)?\s*code)*\s*[.。]?$")
# a declarative that is no statement about the project: thanks, greetings, apologies, exclamations
SMALL_TALK = re.compile(r"^(?:thanks|thank you|great|nice|cool|awesome|wow|lol|haha|sorry|oops|hello|hi|hey|good "
                        r"(?:morning|night|job)|well done|谢谢|感谢|哈哈|不好意思|辛苦了|你好)")
# a short declarative about "that/it" is a remark on the conversation ("that helps", "it works")
PRONOUN_REMARK = re.compile(r"^(?:that|this|it|which)(?:'s)?(?: \S+){0,3}$")
ZH_COPULA = re.compile(r"(?<![不还])是(?!否|不是)|的是|为\s*v?\d")
OPINION = re.compile(r"^(?:i (?:think|believe|feel|guess)|in my opinion|personally|to be honest|我觉得|我认为|感觉|个人觉得)")
PERSON_SUBJECT = re.compile(r"^(?:i|i'm|i've|i'd|i'll|me|my|you|your|you're|我|你|您)(?![a-z])")

# ------------------------------------------------------------------------------ adoption

AFFIRM_IDIOMS = re.compile(en(r"no problem", r"no worries", r"not a bad idea", r"not bad", r"why not",
                              r"no objections?", r"no complaints", r"no doubt") + r"|没问题|不错|没意见|不反对|没毛病")
AFFIRMATIVE = rx(
    en(r"yes", r"yeah", r"yep", r"yup", r"sure", r"ok", r"alright", r"all right", r"agreed", r"agree", r"i agree",
       r"sounds (?:good|great|right|fine|reasonable|like a plan)", r"looks (?:good|great|right|fine)",
       r"(?:looks|sounds) good to me", r"good (?:idea|call|plan|point)", r"great (?:idea|call|plan)", r"perfect",
       r"exactly", r"absolutely", r"definitely", r"of course", r"go ahead", r"go on", r"proceed", r"carry on",
       r"do it", r"do that", r"please do", r"make it so", r"ship it", r"let's (?:do|go|use|go with|adopt|take)",
       r"go with", r"go for it", r"works for me", r"that works", r"fine by me", r"fine with me", r"fair enough",
       r"makes sense", r"love it", r"like it", r"nice", r"great", r"cool", r"deal", r"approved?", r"accept(?:ed)?",
       r"as you (?:said|suggested|proposed)", r"your way", r"i'm in", r"on board", r"i'm (?:ok|fine) with",
       r"\+1", r"affirmative", r"continue", r"yes please", r"thanks", r"(?:that's|that is|it's|sounds) fine", r"fine",
       r"good"),
    r"👍|✅|好|行|可以|可|没问题|同意|赞同|赞成|就这么办|就这么做|就这么定|就这样|按你说的|照你说的|听你的|依你|没毛病|妥|对|嗯|是的|采纳|批准"
    r"|就按|就用这个|继续|成",
)
NOT_CONFIRMED = rx(
    r"^(?:no|nope|nah|not|never mind|don't|hmm+|hm+|wait|hold on|uh+)\b",
    en(r"not (?:yet|now|sure|really|that|this|quite|convinced|so sure|a fan|for now)", r"don't (?:do|change|bother|"
       r"think so)", r"let's not", r"rather not", r"never mind", r"no thanks", r"keep (?:it|things|the \w+|"
       r"the current \w+|what we have) (?:as (?:is|it is)|unchanged|the same)", r"leave (?:it|things) (?:as is|alone|be)",
       r"later", r"let me (?:think|check|sleep|get back|ask|run it by|talk)", r"i'll think", r"think (?:about it|it over)",
       r"sleep on it", r"check with", r"run it by", r"ask (?:the team|my lead|around|my manager)", r"get back to you",
       r"hold off", r"wait", r"revisit", r"come back to", r"on hold", r"not sure", r"unsure",
       # a deferral to a later time: "next sprint", "tomorrow", "some other time"
       r"(?<!for the )(?<!for )next (?:week|sprint|month|quarter|year|release|iteration|cycle|time)", r"tomorrow",
       r"(?:another|some other) time", r"after the (?:release|launch|freeze|holidays)",
       r"(?:absolutely|definitely|certainly|of course|surely|hell) (?:not|no)", r"no way", r"not[.!]*$",
       r"maybe", r"perhaps", r"probably", r"i don't know", r"doubt", r"skeptical", r"hesitant", r"i guess"),
    r"(?:^|[，,]\s*)(?:不|别|算了|不用|不要|不行|不同意|否|还是不|先不|不必|没必要|等等|等一下)|算了|保持原样|维持现状|不用改|别改|不要改|还是用原来的"
    r"|回头|再说|再看|再议|想想|考虑|商量|问问|晚点|先放着|不确定"
    r"|(?:明天|下周|下次|下回|下个月|下个版本|改天|过两天|过几天|晚些|有空|等[^，。,]{1,8})再|也许|(?<!尽)可能|大概|或许|不一定|说不定|纠结|"
    + re.escape(DEFER),
)

# "later" / 以后 inside a noun phrase is no deferral: "the same for every crate we create later",
# "all repos created later", "以后新建的服务也一样", "回头新加的接口也按这个来"
ATTRIBUTIVE_LATER = re.compile(
    r"\b(?:every|all|any|each|the|new|future|other|those|these|whatever|whichever)\s+(?:[a-z-]+\s+){0,2}?(?:"
    r"(?:(?:that|which|who)\s+)?(?:we|you|i|they|people|anyone|someone)(?:'ll|\s+will)?\s+[a-z-]+"
    r"|(?:that|which|who)\s+(?:get\s+|are\s+|is\s+)?[a-z-]+|[a-z-]+ed)(?:\s+(?:up|out|in))?\s+later(?:\s+on)?\b"
    r"|\b[a-z-]+s\s+(?:(?:that|which|who)\s+(?:get\s+|are\s+|we\s+|you\s+|they\s+)?[a-z-]+|[a-z-]+ed)"
    r"(?:\s+(?:up|out|in))?\s+later(?:\s+on)?\b"
    r"|(?:以后|之后|回头|后面|后续|将来|今后|日后)再?[^，。,的]{1,8}的(?=\s*[\u4e00-\u9fffa-z])")

# a limit on a confirmation: a time limit, or "only" narrowing it to a place ("this change" in a
# confirmation is the proposal itself, no limit)
CONFIRM_LIMIT = rx(
    en(r"(?:just |only )?(?:this|that) (?:time|once)", r"just once", r"for once", r"today", r"tonight", r"for now",
       r"right now", r"for the moment", r"for the time being", r"temporar(?:y|ily)", r"until",
       r"(?:just|only) (?:here|now|for (?:this|that|the|today)|in (?:this|that|the))", r"for (?:this|that|the) \w+ only",
       r"in (?:this|that) \w+ only", r"(?:only|just|for|in|on|within) (?:this|that|the current) (?:\w+ )?(?:"
       + _LOCAL_NOUNS + r")", r"for (?:the|this|our) (?:demo|release|launch|sprint|prototype|poc|spike|"
       r"experiment|mvp|hotfix|migration)"),
    r"这次|本次|此次|这回|先这样|暂时|临时|今天|只在|仅在|只有这|只是这|只这|这一?版(?!本号)",
)
# words of a discussion: weighing options, wanting to talk it over
DELIBERATION = rx(
    en(r"thinking", r"considering", r"weighing", r"torn", r"on the fence", r"pros and cons", r"trade-?offs?",
       r"vs\.?", r"versus", r"or", r"whether", r"discuss(?:ion)?", r"talk (?:about|through|it)", r"revisit",
       r"come back to", r"brainstorm", r"explore", r"figure out", r"open question", r"tbd", r"options?",
       r"alternatives?", r"wondering", r"debate", r"undecided", r"not sure", r"(?:still )?open", r"unresolved",
       r"unclear"),
    r"讨论|商量|考虑|纠结|权衡|取舍|还是|或者|要不要|是否|聊聊|研究|想想|方案|选项|对比|比较|犹豫",
)

# an assistant text that proposes (not a question, not a report of what the code is or what was done)
PROPOSAL = rx(
    en(r"i(?:'d| would)? (?:suggest|propose|recommend|advise)", r"i(?:'d| would) (?:go with|use|prefer|keep|switch|"
       r"move|pick|lean|choose|add|drop|split|store|put|start|make|do|rather)",
       r"i (?:could|can|might|will|'ll)(?! not)", r"i'(?:ll|d) be happy to", r"my (?:suggestion|recommendation|proposal|advice|vote)",
       r"(?:we|you) (?:should|could|might want to|may want to|ought to|can)", r"let's", r"let us", r"how about",
       r"what about", r"why not", r"consider", r"(?:the )?(?:best|better|simplest|cleanest|safest|easiest) (?:option|"
       r"approach|choice|way|bet|fix|solution|path) (?:is|would be|here is)", r"it(?:'s| is| would be) (?:best|better|"
       r"wiser|safer|simpler|cleaner) to", r"better to", r"(?:one|another) option", r"option \w+:", r"proposal:",
       r"suggestion:", r"recommendation:", r"shall we", r"i'd go with", r"go with", r"switch to", r"stick with",
       # a proposal without "I" (issue 29): "Suggest we …", "Might be worth vendoring it.", "Probably best to
       # pin it.", "Moving X into Y would cut the duplication." (a gerund subject under "would")
       r"^(?:suggest|propose|recommend)(?:ing)?", r"(?:might|may|could|would) be worth",
       r"^worth (?!noting|mentioning|knowing|remembering)[a-z]+ing",
       r"^(?:probably |maybe |likely )?(?:best|wisest|safest|simplest|easiest) (?:to|if)",
       r"^(?!(?:no|some|any|every)?thing\b)[a-z]+ing\b(?:[^.?!]|\.(?=\S)){0,80}\bwould\b(?! have)"),
    r"建议|推荐|我们可以|可以考虑|不如|要不|最好|应该|我倾向|我的建议|方案是|我提议|提议|可以改成|改成|换成|统一|采用|我们就|我觉得可以|咱们",
)
TENTATIVE_HEAD = re.compile(r"^(?:maybe|perhaps|possibly)\s+")
REPORT = re.compile(
    r"^(?:i've|i have|i (?:updated|changed|added|removed|fixed|renamed|moved|created|wrote|refactored|ran|applied|made|"
    r"set|replaced|deleted|modified|implemented|converted|migrated|bumped|reverted|checked|looked))\b"
    r"|^(?:done|fixed|updated|applied|changed|all set|finished)\b|^(?:已经|已|我已经|我已|改好了|搞定|完成了|好了)")

__all__ = [name for name in dir() if name.isupper() or name in ("en", "rx")]
