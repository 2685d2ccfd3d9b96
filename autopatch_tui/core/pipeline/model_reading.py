"""The model as a second reader (contracts §3.1 `evidence`): the extraction model's own reading of
the user's quoted words, checked beside the gate's at one point of the extraction validation
(`extraction_rules.validate_extraction`).

A candidate is kept only when neither reader refuses it. The model's reading refuses a preference
or decision with rule `model_reading` when it says the words are someone else's (`speaker`
`relayed`), not the user's own assertion (`stance` `asked`, `hedged`, `withdrawn`, `ironic`), or
limited to the task at hand (`scope` `this_task`). A discussion is an open point by nature (asked or
hedged is what it is), so only `withdrawn` or `ironic` refuses one. `scope` `conditional` (a rule
that holds when its condition does: "when you touch a migration, add a down step") refuses nothing
and raises nothing: strength and recall stay the gate's (hard + always only when the gate reads the
clause as lasting). A candidate without `evidence` is judged by the gate alone.

Where the readers disagree, the verdict records it as a rule name, never text (`Disagreement`):
- `model_reading`: the gate kept what the model's reading refuses (the candidate is refused);
- the gate's rule (e.g. `code_fact`): the model read the user's own lasting assertion
  (`user`/`asserted`/`lasting`) and the gate refused it;
- `lasting`: both keep it, the model reads it as lasting and the gate does not (kept at the gate's
  standing, for a reviewer to look at).
The job's safe verdict carries them as `d-RULE:count` pairs (`DISAGREEMENT_PREFIX`), which the
refusal counters skip (`core.memory.refusals`), and `memory audit` lists the items that came from
such a turn (`core.memory.reader_disagreements`)."""

from __future__ import annotations

from dataclasses import dataclass

from autopatch_tui.core.pipeline.contracts import CandidateOut

RULE = "model_reading"
LASTING = "lasting"  # the disagreement name when both keep and only the model reads it as lasting
DISAGREEMENT_PREFIX = "d-"


@dataclass(frozen=True)
class SecondReading:
    refuses: bool  # the model's reading refuses the candidate (rule `model_reading`)
    disagreement: str | None  # a rule name, or None when the readers agree (or there is no reading)


def model_refuses(cand: CandidateOut) -> bool:
    ev = cand.evidence
    if ev is None:
        return False
    if cand.kind == "discussion_context":
        return ev.stance in ("withdrawn", "ironic")
    return ev.speaker == "relayed" or ev.stance != "asserted" or ev.scope == "this_task"


def _reads_lasting(cand: CandidateOut) -> bool:
    ev = cand.evidence
    return ev is not None and (ev.speaker, ev.stance, ev.scope) == ("user", "asserted", "lasting")


def second_reading(cand: CandidateOut, gate_rule: str | None, gate_lasting: bool) -> SecondReading:
    """The model's reading of `cand` beside the gate's verdict (`gate_rule` None = the gate keeps it;
    `gate_lasting`: the gate reads the kept clause as lasting)."""
    if cand.evidence is None:
        return SecondReading(False, None)
    refuses = model_refuses(cand)
    if gate_rule is None and refuses:
        return SecondReading(True, RULE)
    if gate_rule is not None and _reads_lasting(cand):
        return SecondReading(refuses, gate_rule)
    if (gate_rule is None and not gate_lasting and _reads_lasting(cand)
            and cand.kind != "discussion_context" and cand.origin != "inferred_repetition"):
        return SecondReading(False, LASTING)
    return SecondReading(refuses, None)


__all__ = ["DISAGREEMENT_PREFIX", "LASTING", "RULE", "SecondReading", "model_refuses", "second_reading"]
