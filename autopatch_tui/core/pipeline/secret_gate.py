"""Rule `secret` (contracts §10): a candidate or a consolidation operation whose text holds a secret
(`core.secrets.find_secrets`) never becomes Memory. One check for every door: the extraction gate
(`extraction_rules.validate_extraction`, before every other rule), consolidation (a model that writes a
secret into an item's fields: a contract violation, repaired once, else the job fails with this rule)
and the thread checkpoint (masked before it is stored: it is sent back to the model)."""

from __future__ import annotations

from collections.abc import Iterable

from autopatch_tui.core.pipeline.contracts import CandidateOut, OperationOut
from autopatch_tui.core.secrets import has_secret, mask

SECRET_RULE = "secret"
_TEXT_FIELDS = ("subject", "statement", "content")
_LIST_FIELDS = ("applies_to_paths", "aliases", "keywords")


def _texts(obj: object) -> Iterable[str]:
    for name in _TEXT_FIELDS:
        value = getattr(obj, name, None)
        if isinstance(value, str):
            yield value
    for name in _LIST_FIELDS:
        yield from (v for v in (getattr(obj, name, None) or ()) if isinstance(v, str))


def candidate_has_secret(cand: CandidateOut) -> bool:
    """A secret in any field or any quote (user's or assistant's) of an extraction candidate."""
    return has_secret("\n".join([*_texts(cand), *(s.quote for s in cand.sources)]))


def operation_has_secret(op: OperationOut) -> bool:
    """A secret in the fields a consolidation operation would write."""
    return op.operation != "reject" and has_secret("\n".join(_texts(op)))


def safe_checkpoint(text: str) -> str:
    return mask(text)


__all__ = ["SECRET_RULE", "candidate_has_secret", "operation_has_secret", "safe_checkpoint"]
