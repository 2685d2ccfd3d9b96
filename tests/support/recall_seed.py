"""Seeding Memory items for recall tests, through the Store's own writer.

`seed_item` writes one active revision with `item_writes.insert_revision` (so the recall term index
is exactly what consolidation would leave), optionally with provenance (an accepted candidate, its
sources and the `item_candidates` link). `revise_item` retires the active revision of a logical ID
and inserts the next one, as a consolidation `revise` does. Everything runs in one `write_txn`.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.ids import new_id
from autopatch_tui.core.memory.item_writes import (
    insert_revision,
    link_candidates,
    retire_revision,
)
from autopatch_tui.core.memory.items import ItemFields
from autopatch_tui.core.memory.sqlite import write_txn
from autopatch_tui.core.recall import matching as _matching
from autopatch_tui.core.recall import memory_map as _memory_map
from autopatch_tui.core.recall import phrase_index as _phrase_index
from autopatch_tui.core.recall.query import RecallPolicy, RecallQuery
from autopatch_tui.core.recall.session import MAX_RESULTS
from autopatch_tui.core.recall.terms import content_terms, is_check_id, phrase_terms


@dataclass(frozen=True)
class Seeded:
    logical_id: str
    row_id: int
    revision: int


def active_thread(conn: sqlite3.Connection) -> str:
    return conn.execute("SELECT id FROM threads WHERE status = 'active'").fetchone()[0]


def fields(*, kind: str = "project_decision", subject: str, statement: str, content: str = "",
           strength: str = "hard", origin: str = "explicit", recall_mode: str = "on_match",
           applies_to_paths: Sequence[str] = (), aliases: Sequence[str] = (), keywords: Sequence[str] = (),
           thread_id: str | None = None) -> ItemFields:
    return ItemFields(kind=kind, subject=subject, statement=statement, content=content, strength=strength,
                      origin=origin, recall_mode=recall_mode, applies_to_paths=tuple(applies_to_paths),
                      aliases=tuple(aliases), keywords=tuple(keywords), thread_id=thread_id)


def _provenance(conn: sqlite3.Connection, row_id: int, f: ItemFields, sources: Sequence[tuple[str, str, str]],
                now: float) -> None:
    """An accepted candidate with `sources` [(turn_id, role, quote)] linked to the revision."""
    cand = new_id("cand")
    conn.execute(
        "INSERT INTO memory_candidates (id, thread_id, status, kind, subject, statement, content, strength, origin,"
        " recall_mode, applies_to_paths, aliases, keywords, created_at)"
        " VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (cand, f.thread_id, f.kind, f.subject, f.statement, f.content, f.strength, f.origin, f.recall_mode,
         json.dumps(list(f.applies_to_paths)), json.dumps(list(f.aliases)), json.dumps(list(f.keywords)), now),
    )
    conn.executemany(
        "INSERT INTO candidate_sources (candidate_id, ordinal, turn_id, role, quote) VALUES (?, ?, ?, ?, ?)",
        [(cand, n, t, role, q) for n, (t, role, q) in enumerate(sources)],
    )
    link_candidates(conn, row_id, [cand])


def _insert(conn: sqlite3.Connection, f: ItemFields, sources: Sequence[tuple[str, str, str]],
            logical_id: str | None, revision: int, now: float) -> Seeded:
    if f.kind == "discussion_context" and f.thread_id is None:
        f = replace(f, thread_id=active_thread(conn))
    row_id, logical = insert_revision(conn, f, logical_id=logical_id, revision=revision, now=now)
    if sources:
        _provenance(conn, row_id, f, sources, now)
    return Seeded(logical, row_id, revision)


def seed_item(conn: sqlite3.Connection, *, sources: Sequence[tuple[str, str, str]] = (), now: float | None = None,
              **kw: object) -> Seeded:
    """One active item (revision 1). Keyword arguments are those of `fields`."""
    with write_txn(conn):
        return _insert(conn, fields(**kw), sources, None, 1, time.time() if now is None else now)  # type: ignore[arg-type]


def seed_many(conn: sqlite3.Connection, specs: Iterable[dict[str, object]], *, now: float | None = None) -> list[Seeded]:
    """Many items in one transaction; each spec is a dict of `fields` keyword arguments (+ `sources`)."""
    now = time.time() if now is None else now
    out: list[Seeded] = []
    with write_txn(conn):
        for n, spec in enumerate(specs):
            spec = dict(spec)
            sources = spec.pop("sources", ())
            out.append(_insert(conn, fields(**spec), sources, None, 1, now + n * 1e-3))  # type: ignore[arg-type]
    return out


def revise_item(conn: sqlite3.Connection, logical_id: str, *, sources: Sequence[tuple[str, str, str]] = (),
                now: float | None = None, **kw: object) -> Seeded:
    """Supersede the active revision of `logical_id` with a new one built from `kw`."""
    now = time.time() if now is None else now
    with write_txn(conn):
        row = conn.execute("SELECT row_id, revision FROM memory_items WHERE logical_id = ? AND status = 'active'",
                           (logical_id,)).fetchone()
        retire_revision(conn, row["row_id"], status="superseded", replaced_by=None, now=now)
        return _insert(conn, fields(**kw), sources, logical_id, row["revision"] + 1, now)  # type: ignore[arg-type]


def add_turn(conn_owner: object, user_text: str, answer: str | None, *, intent: str = "general_chat",
             scope_paths: Sequence[str] = ()) -> object:
    """A RAW turn through the manager (`conn_owner` is a MemoryManager); completed when `answer` is given."""
    handle = conn_owner.begin_turn(user_text, intent=intent, scope_paths=list(scope_paths))  # type: ignore[attr-defined]
    if answer is not None:
        conn_owner.complete_turn(handle, answer)  # type: ignore[attr-defined]
    return handle



# =========================================================================== naive reference
# A full scan with the same term functions: every active item is loaded and matched in Python.
# It is the specification the indexed path (matching.py / memory_map.py) must agree with, and the
# baseline of bench/recall.py.



def _visible(row: sqlite3.Row, policy: RecallPolicy) -> bool:
    if not policy.allows(row["id"]):  # approval mode: only kept revisions (contracts §8)
        return False
    if row["kind"] == "discussion_context":
        return policy.discussion_thread is not None and row["thread_id"] == policy.discussion_thread
    return row["kind"] in policy.kinds


NAIVE_MEMO: dict[str, tuple[list[tuple[str, list[str]]], list[str]]] | None = {}
"""Tests memoize item terms by revision ID (a revision's text never changes); bench/recall.py sets
this to None so that its baseline tokenizes every item on every query."""


def _item_terms(row: sqlite3.Row) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(phrases as (field, terms), content terms) of one item, with the index's term functions."""
    if NAIVE_MEMO is not None:
        hit = NAIVE_MEMO.get(row["id"])
        if hit is None:
            hit = NAIVE_MEMO[row["id"]] = _compute_item_terms(row)
        return hit
    return _compute_item_terms(row)


def _compute_item_terms(row: sqlite3.Row) -> tuple[list[tuple[str, list[str]]], list[str]]:
    phrases: list[tuple[str, list[str]]] = [("subject", phrase_terms(row["subject"]))]
    phrases += [("alias", phrase_terms(a)) for a in json.loads(row["aliases"])]
    phrases += [("check_id" if is_check_id(k.strip()) else "keyword", phrase_terms(k))
                for k in json.loads(row["keywords"])]
    return phrases, content_terms(f"{row['statement']}\n{row['content']}")


def naive_matches(conn: sqlite3.Connection, terms: list[str], policy: RecallPolicy,
                  paths: tuple[str, ...], keys: Iterable[str] = ()) -> list[_matching.Match]:
    """Every active item, matched in Python. A query term found in more than COMMON_TERM_ITEMS
    items is common. A phrase (subject, alias, keyword, check ID) matches when all its terms are
    query terms and at least one of them is not common, or when its phrase key is among the query's
    `keys` and at most PHRASE_KEY_ITEMS stored phrases have that key; the content when at least two
    distinct non-common query terms are among its terms."""
    wanted = set(terms)
    keys = set(keys)
    out: list[_matching.Match] = []
    if not wanted and not keys:
        return out
    items = []
    df: dict[str, int] = {}
    key_count: dict[str, int] = {}
    for row in conn.execute("SELECT * FROM memory_items WHERE status = 'active'"):
        phrases, body = _item_terms(row)
        for t in wanted & ({t for _, ts in phrases for t in ts} | set(body)):
            df[t] = df.get(t, 0) + 1
        if keys:
            for _, ts in phrases:
                k = _phrase_index.phrase_key(ts)
                if ts and k in keys:
                    key_count[k] = key_count.get(k, 0) + 1
        items.append((row, phrases, body))
    rare = {t for t in wanted if df.get(t, 0) <= _matching.COMMON_TERM_ITEMS}
    named = {k for k, n in key_count.items() if n <= _phrase_index.PHRASE_KEY_ITEMS}
    for row, phrases, body in items:
        if not _visible(row, policy):
            continue
        best = count = span = 0
        for field_name, t in phrases:
            if t and ((set(t) <= wanted and set(t) & rare) or _phrase_index.phrase_key(t) in named):
                best = max(best, _matching.FIELD_RANK[field_name])
                count += 1
                span = max(span, len(t))
        hits = len(set(body) & rare)
        if hits >= 2:
            best = max(best, _matching.FIELD_RANK["content"])
            count += hits
        if not best:
            continue
        spec = _matching.applicability(row, paths)
        if spec is None or (spec < 0 and policy.require_path_applicability):
            continue
        out.append(_matching.Match(row, best, count, spec, span))
    out.sort(key=_matching.Match.sort_key)
    return out


def naive_standing(conn: sqlite3.Connection, policy: RecallPolicy, paths: tuple[str, ...]) -> list[_matching.Match]:
    out = []
    for row in conn.execute("SELECT * FROM memory_items WHERE status = 'active'"):
        if row["recall_mode"] != "always" or not _visible(row, policy):
            continue
        spec = _matching.applicability(row, paths)
        if spec is None or spec < 0:
            continue
        out.append(_matching.Match(row, 0, 0, spec))
    out.sort(key=_matching.Match.sort_key)
    return out


def naive_map(conn: sqlite3.Connection, query: RecallQuery, policy: RecallPolicy, *,
              budget_tokens: int) -> _memory_map.MemoryMap:
    """`build_map` over the naive lanes (same lane shares and greedy fill)."""
    from unittest import mock

    def lane(c: object, p: RecallPolicy, pa: tuple[str, ...]) -> object:
        return _memory_map._Lane(naive_standing(conn, p, pa))

    with mock.patch.object(_memory_map, "_standing_lane", lane), \
            mock.patch.object(_memory_map, "lexical_matches",
                              lambda c, t, p, pa, k=(): naive_matches(conn, t, p, pa, k)):
        return _memory_map.build_map(conn, query, policy, budget_tokens=budget_tokens)


def naive_search(conn: sqlite3.Connection, query: RecallQuery, policy: RecallPolicy, text: str) -> list[dict[str, str]]:
    matches = naive_matches(conn, query.merged_terms(text), policy, query.paths, query.merged_phrase_keys(text))
    return [{"id": m.row["logical_id"], "kind": m.row["kind"], "subject": m.row["subject"],
             "statement": m.row["statement"], "match_type": m.match_type} for m in matches[:MAX_RESULTS]]


def match_keys(matches: list[_matching.Match]) -> list[tuple[object, ...]]:
    """Comparable form of a ranked match list."""
    return [(m.row["logical_id"], m.best_field, m.phrases, m.specificity, m.span) for m in matches]


def map_keys(mm: _memory_map.MemoryMap) -> tuple[object, ...]:
    return (match_keys(mm.standing), match_keys(mm.relevant), mm.omitted_standing, mm.omitted_relevant)


# =========================================================================== synthetic bilingual stores



EN_CORE = ["config", "cache", "test", "build", "deploy", "error", "log", "user", "request", "response", "api", "client", "server", "database", "query", "index", "schema", "migration", "version", "release", "branch", "commit", "patch", "review", "merge", "module", "package", "import", "export", "function", "method", "class", "interface", "type", "value", "field", "record", "table", "column", "row", "key", "token", "session", "auth", "login", "password", "permission", "role", "admin", "service", "worker", "queue", "job", "task", "thread", "process", "memory", "disk", "file", "path", "directory", "folder", "stream", "buffer", "socket", "connection", "timeout", "retry", "backoff", "limit", "rate", "quota", "budget", "metric", "trace", "span", "event", "handler", "callback", "promise", "async", "await", "lock", "mutex", "transaction", "rollback", "snapshot", "backup", "restore", "upgrade", "downgrade", "compatibility", "backward", "forward", "legacy", "deprecated", "remove", "delete", "create", "update", "insert", "select", "filter", "sort", "page", "cursor", "offset", "parser", "lexer", "token", "grammar", "compiler", "runtime", "vm", "container", "image", "docker", "kubernetes", "cluster", "node", "pod", "network", "proxy", "gateway", "router", "route", "middleware", "plugin", "extension", "hook", "script", "shell", "command", "option", "flag", "argument", "env", "variable", "constant", "secret", "credential", "certificate", "encryption", "hash", "signature", "verify", "validate", "sanitize", "escape", "encode", "decode", "serialize", "json", "yaml", "toml", "xml", "csv", "protobuf", "grpc", "http", "https", "websocket", "rest", "graphql", "endpoint", "frontend", "backend", "ui", "widget", "layout", "style", "theme", "color", "font", "screen", "dialog", "modal", "button", "input", "form", "label", "test", "fixture", "mock", "stub", "spy", "assert", "coverage", "benchmark", "profile", "performance", "latency", "throughput", "memory", "leak", "refactor", "rename", "extract", "inline", "split", "naming", "convention", "lint", "format", "style", "guide", "docstring", "comment", "readme", "changelog", "license", "dependency", "vendor", "lockfile", "pin", "upgrade", "security", "vulnerability", "audit", "finding", "scanner", "rule", "check", "warning", "severity", "suppress", "ignore", "baseline", "report", "summary", "checkpoint", "thread", "turn", "history", "context", "prompt", "model", "provider", "embedding", "vector", "search", "recall", "match", "alias", "keyword", "subject", "statement", "content", "decision", "preference", "discussion", "project", "repository", "workspace", "monorepo", "submodule", "worktree", "remote", "origin", "upstream", "fork", "pytest", "unittest", "jest", "mocha", "junit", "gradle", "maven", "cargo", "npm", "pip", "poetry", "venv", "conda", "makefile", "cmake", "bazel", "ninja", "python", "java", "rust", "golang", "typescript", "javascript", "kotlin", "swift", "ruby", "php", "scala", "haskell", "elixir", "clojure", "sql", "sqlite", "postgres", "mysql", "redis", "kafka", "rabbitmq", "nginx", "apache", "linux", "windows", "macos", "unicode", "utf", "ascii", "locale", "timezone", "date"]
EN_STOP = ["the", "a", "to", "of", "and", "in", "for", "is", "we", "should", "use", "when", "it", "not", "be", "with", "on", "this", "that"]
ZH_CORE = ["配置", "缓存", "测试", "构建", "部署", "错误", "日志", "用户", "请求", "响应", "接口", "客户端", "服务端", "数据库", "查询", "索引", "模式", "迁移", "版本", "发布", "分支", "提交", "补丁", "审查", "合并", "模块", "函数", "方法", "类型", "字段", "记录", "表格", "会话", "认证", "登录", "密码", "权限", "角色", "管理员", "服务", "队列", "任务", "线程", "进程", "内存", "磁盘", "文件", "路径", "目录", "超时", "重试", "限流", "预算", "指标", "事件", "回调", "异步", "事务", "回滚", "快照", "备份", "恢复", "升级", "兼容", "向后兼容", "旧版", "废弃", "删除", "创建", "更新", "插入", "过滤", "排序", "分页", "解析", "编译", "运行时", "容器", "镜像", "集群", "网络", "代理", "网关", "路由", "插件", "扩展", "脚本", "命令", "参数", "变量", "常量", "密钥", "证书", "加密", "签名", "校验", "序列化", "前端", "后端", "界面", "布局", "主题", "性能", "延迟", "吞吐", "泄漏", "重构", "命名", "规范", "注释", "文档", "依赖", "安全", "漏洞", "扫描", "规则", "警告", "忽略", "报告", "摘要", "历史", "上下文", "模型", "检索", "召回", "别名", "关键词", "决定", "偏好", "讨论", "项目", "仓库", "工作区", "远程", "上游", "统一", "默认", "禁止", "必须", "保留", "直接", "不要", "优先", "避免"]
ZH_CHARS = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面"
            "而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好"
            "应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命"
            "此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老")
ZH_PARTICLES = ["我们要不要", "是不是应该", "能不能", "怎么处理", "为什么", "吗", "呢", "还是", "以后", "这里的"]
CHECK_IDS = ([f"java:S{1000 + 7 * i}" for i in range(60)] + [f"B{100 + i}" for i in range(40)]
             + [f"E{500 + i}" for i in range(30)] + [f"CWE-{20 + 3 * i}" for i in range(30)]
             + ["no-unused-vars", "no-console", "prefer-const", "react/prop-types", "PMD:UnusedImports",
                "clippy::needless_return", "RUF100", "W0611", "bugprone-use-after-move"])
EXTS = ["py", "java", "ts", "rs", "go", "md", "toml"]


def _zipf_cum(n: int, s: float = 1.05, q: float = 10.0) -> list[float]:
    """Cumulative Zipf-Mandelbrot weights 1/(rank+q)^s: a heavy head without one word everywhere."""
    return list(accumulate(1.0 / ((r + q) ** s) for r in range(1, n + 1)))


class SyntheticCorpus:
    """A deterministic bilingual vocabulary (English + Chinese) with Zipf-like word frequencies, and
    item/query generators over it."""

    def __init__(self, seed: int = 7, en_words: int = 3000, zh_words: int = 1800) -> None:
        rng = random.Random(seed)
        syll = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["qu", "sh", "th", "ex", "or", "an"]
        en = list(dict.fromkeys(EN_CORE))[:en_words]
        seen = set(en) | set(EN_STOP)
        while len(en) < en_words:
            w = "".join(rng.choice(syll) for _ in range(rng.randint(2, 3))) + rng.choice(["", "", "er", "ing", "ion", "ly"])
            if w not in seen and len(w) > 3:
                seen.add(w)
                en.append(w)
        zh = list(dict.fromkeys(ZH_CORE))[:zh_words]
        zseen = set(zh)
        while len(zh) < zh_words:
            w = "".join(rng.choice(ZH_CHARS) for _ in range(rng.choice((2, 2, 2, 3))))
            if w not in zseen:
                zseen.add(w)
                zh.append(w)
        self.en, self.zh = en, zh
        self._en_cum, self._zh_cum = _zipf_cum(len(en)), _zipf_cum(len(zh))
        self.dirs = [f"src/{rng.choice(en[:400])}" for _ in range(60)] + [f"lib/{rng.choice(en[:400])}/{rng.choice(en[:400])}" for _ in range(60)]
        self.files = [f"{rng.choice(self.dirs)}/{rng.choice(en[:800])}_{rng.choice(en[:800])}.{rng.choice(EXTS)}" for _ in range(400)]

    # --- words -------------------------------------------------------------------------------
    def en_words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.en, cum_weights=self._en_cum, k=k)

    def zh_words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.zh, cum_weights=self._zh_cum, k=k)

    def en_sentence(self, rng: random.Random, k: int) -> str:
        words = self.en_words(rng, k)
        for _ in range(k // 3):
            words.insert(rng.randrange(len(words) + 1), rng.choice(EN_STOP))
        return " ".join(words)

    def zh_sentence(self, rng: random.Random, k: int) -> str:
        words = self.zh_words(rng, k)
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words) + 1), rng.choice(self.en_words(rng, 3)))
        text = "".join(words)
        if len(words) > 6:
            cut = rng.randrange(2, len(text) - 2)
            text = text[:cut] + "，" + text[cut:]
        return text

    def identifier(self, rng: random.Random) -> str:
        parts = self.en_words(rng, rng.randint(2, 3))
        if rng.random() < 0.5:
            return parts[0] + "".join(p.capitalize() for p in parts[1:])
        return "_".join(parts)

    # --- items ---------------------------------------------------------------------------------
    def item(self, rng: random.Random, threads: list[str], always_rate: float = 0.005) -> dict[str, object]:
        lang = rng.choices(("en", "zh", "mixed"), (5, 4, 1))[0]
        kind = rng.choices(("project_decision", "user_preference", "discussion_context"), (45, 45, 10))[0]
        if lang == "zh":
            subject = "".join(self.zh_words(rng, rng.randint(2, 3)))
            statement = self.zh_sentence(rng, rng.randint(3, 7))
            content = self.zh_sentence(rng, rng.randint(4, 12))
        else:
            subject = " ".join(self.en_words(rng, rng.randint(2, 4)))
            statement = self.en_sentence(rng, rng.randint(6, 14))
            content = self.en_sentence(rng, rng.randint(8, 26))
            if lang == "mixed":
                content += " " + self.zh_sentence(rng, rng.randint(3, 8))
        aliases = [" ".join(self.en_words(rng, rng.randint(1, 3))) for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))]
        if lang != "en" and rng.random() < 0.3:
            aliases.append("".join(self.zh_words(rng, 2)))
        keywords: list[str] = []
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            r = rng.random()
            keywords.append(rng.choice(CHECK_IDS) if r < 0.15 else self.identifier(rng) if r < 0.45
                            else self.en_words(rng, 1)[0] if lang == "en" or r < 0.7 else self.zh_words(rng, 1)[0])
        paths: list[str] = []
        if rng.random() < 0.3:
            r = rng.random()
            paths.append(rng.choice(self.dirs) if r < 0.6 else rng.choice(self.files) if r < 0.9
                         else f"**/*.{rng.choice(EXTS)}")
        recall_mode = "always" if kind != "discussion_context" and rng.random() < always_rate else "on_match"
        spec: dict[str, object] = dict(kind=kind, subject=subject, statement=statement, content=content,
                                       strength=rng.choice(("hard", "soft")), recall_mode=recall_mode,
                                       applies_to_paths=paths, aliases=aliases, keywords=keywords)
        if kind == "discussion_context":
            spec["thread_id"] = rng.choice(threads)
            spec["strength"], spec["recall_mode"] = "soft", "on_match"
        return spec

    def populate(self, conn: sqlite3.Connection, n: int, *, seed: int = 1, threads: int = 3,
                 now: float = 1_800_000_000.0) -> list[str]:
        """`n` active items in one transaction (through `insert_revision`). Returns the thread IDs
        used by discussions (the first is the active thread; the others are created archived)."""
        with write_txn(conn):
            thread_ids = [active_thread(conn)]
            for _ in range(threads - 1):
                tid = new_id("thr")
                conn.execute("INSERT INTO threads (id, status, created_at, archived_at) VALUES (?, 'archived', ?, ?)",
                             (tid, now, now))
                thread_ids.append(tid)
            self.insert_items(conn, n, seed=seed, thread_ids=thread_ids, now=now)
        return thread_ids

    def insert_items(self, conn: sqlite3.Connection, n: int, *, seed: int, thread_ids: list[str],
                     now: float = 1_800_000_000.0, always_items: int = 250,
                     always_rate: float | None = None) -> None:
        """Inside a write txn: `n` items through `insert_revision`; about 0.5 % `always` items, at
        most about `always_items` of them (each one is injected into every prompt: real stores keep
        few) unless `always_rate` (a share of the non-discussion items, uncapped) is given, about 30 %
        path-scoped, 10 % discussions spread over `thread_ids`."""
        rng = random.Random(seed)
        if always_rate is None:
            always_rate = min(0.005, always_items / max(n, 1))
        made = 0
        while made < n:
            spec = self.item(rng, thread_ids, always_rate)
            try:
                insert_revision(conn, fields(**spec), logical_id=None, revision=1, now=now + made)  # type: ignore[arg-type]
            except MemoryContractError:  # same subject + applicability drawn twice
                continue
            made += 1

    # --- queries -------------------------------------------------------------------------------
    def queries(self, conn: sqlite3.Connection, n: int, *, seed: int = 2) -> list[tuple[str, tuple[str, ...]]]:
        """`n` varied (text, scope paths) queries: English and Chinese sentences, saved aliases,
        keywords, identifiers and check IDs, mixed-language text, some scoped to a path, some that
        hit nothing."""
        rng = random.Random(seed)
        sample = conn.execute(
            "SELECT aliases, keywords, subject FROM memory_items WHERE status = 'active' ORDER BY row_id LIMIT 2000"
        ).fetchall()
        out: list[tuple[str, tuple[str, ...]]] = []
        kinds = ["en", "zh", "alias", "keyword", "subject_in_zh", "mixed", "nohit"]
        for i in range(n):
            k = kinds[i % len(kinds)]
            row = rng.choice(sample)
            if k == "en":
                text = "how do we " + self.en_sentence(rng, rng.randint(4, 12))
            elif k == "zh":
                text = rng.choice(ZH_PARTICLES[:5]) + self.zh_sentence(rng, rng.randint(3, 6)) + rng.choice(ZH_PARTICLES[5:])
            elif k == "alias":
                aliases = json.loads(row["aliases"]) or [row["subject"]]
                text = "what did we decide about " + rng.choice(aliases)
            elif k == "keyword":
                kws = json.loads(row["keywords"]) or [self.identifier(rng)]
                text = f"why does {rng.choice(kws)} fail"
            elif k == "subject_in_zh":
                text = "我们之前关于" + row["subject"] + "是怎么决定的"
            elif k == "mixed":
                text = self.zh_sentence(rng, 3) + " " + self.identifier(rng) + " " + self.en_sentence(rng, 3)
            else:
                text = "zzqx vorpal snicker-snack"
            paths = (rng.choice(self.files),) if rng.random() < 0.4 else ()
            out.append((text, paths))
        return out
