"""The typed recall query and the request-local policy. The program builds both from the intent
and the request; the model never does. A policy is immutable for the life of a request."""

from __future__ import annotations

from dataclasses import dataclass, field

from autopatch_tui.core import constants as C
from autopatch_tui.core.errors import UsageError
from autopatch_tui.core.recall.phrase_index import query_phrase_keys
from autopatch_tui.core.recall.terms import MAX_QUERY_TERMS, path_terms, query_terms


@dataclass(frozen=True)
class RecallQuery:
    intent: str
    user_text: str = ""
    scope_paths: tuple[str, ...] = ()
    finding_path: str | None = None
    check_id: str | None = None
    finding_message: str | None = None
    patch_path: str | None = None
    finding_id: str | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        extra = tuple(p for p in (self.finding_path, self.patch_path) if p)
        return tuple(dict.fromkeys(self.scope_paths + extra))

    def base_terms(self) -> list[str]:
        """The automatic Map's terms, in a fixed priority: check ID, finding message, user text, paths."""
        texts = [t for t in (self.check_id, self.finding_message, self.user_text) if t]
        terms = query_terms(*texts, cap=MAX_QUERY_TERMS)
        for p in self.paths:
            for t in path_terms(p):
                if len(terms) >= MAX_QUERY_TERMS:
                    return terms
                if t not in terms:
                    terms.append(t)
        return terms

    def _texts(self) -> list[str]:
        return [t for t in (self.check_id, self.finding_message, self.user_text) if t]

    def base_phrase_keys(self) -> list[str]:
        """The automatic Map's phrase keys (`phrase_index`), in the priority of `base_terms`."""
        return query_phrase_keys(self._texts(), self.paths)

    def merged_phrase_keys(self, explicit: str) -> list[str]:
        """An explicit `memory_search` query's phrase keys first, then the base ones."""
        return query_phrase_keys([explicit, *self._texts()], self.paths)

    def merged_terms(self, explicit: str) -> list[str]:
        """An explicit `memory_search` query's terms first, then the base terms, within the cap."""
        terms = query_terms(explicit, cap=MAX_QUERY_TERMS)
        for t in self.base_terms():
            if len(terms) >= MAX_QUERY_TERMS:
                break
            if t not in terms:
                terms.append(t)
        return terms


@dataclass(frozen=True)
class RecallPolicy:
    """What one request may see. Repair requests see only path-applicable project preferences and
    decisions: no history, no discussion, no RAW turn."""

    intent: str
    thread_id: str | None
    kinds: tuple[str, ...] = field(default=C.ITEM_KINDS)
    include_history: bool = True
    require_path_applicability: bool = False
    # approval mode (contracts §8): the revision IDs kept when the request started — the only ones
    # it may recall. An allow-list, not a list of rows to skip: a revision written while the request
    # runs (the worker consolidating the previous turn) is in no snapshot, so it is hidden too.
    # None: `auto` mode, nothing is hidden.
    kept: frozenset[str] | None = None

    def allows(self, revision_id: str) -> bool:
        """Whether this request may recall the revision (`memory_items.id`)."""
        return self.kept is None or revision_id in self.kept

    @property
    def repair(self) -> bool:
        return self.intent in C.REPAIR_INTENTS

    @property
    def discussion_thread(self) -> str | None:
        return self.thread_id if "discussion_context" in self.kinds else None


def policy_for(intent: str, thread_id: str | None) -> RecallPolicy:
    if intent in C.ORDINARY_INTENTS:
        return RecallPolicy(intent, thread_id, C.ITEM_KINDS, include_history=True, require_path_applicability=False)
    if intent in C.REPAIR_INTENTS:
        return RecallPolicy(intent, None, C.PROJECT_KINDS, include_history=False, require_path_applicability=True)
    raise UsageError(f"unknown intent {intent!r}")
