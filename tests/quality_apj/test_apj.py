"""AutoPatch-J's own Memory cases (cases.json, README.md) black-box through the CLI and the stub, with
the independent corpus's loader and harness: a candidate AutoPatch-J refuses stores nothing here, one
it keeps is stored (hard + always when AutoPatch-J stores it so).

A failing case is never fixed by editing it (its sentences are AutoPatch-J's, verbatim) nor by
adding its words to a list: find the mechanism that failed and fix that."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.quality.test_corpus import corpus_root, stub  # noqa: F401 - the shared fixtures
from tests.quality_apj.loader import CASES_JSON, FIXTURE_IDS, WRITER, load, score

CASES, MALFORMED = load()
# Cases current main fails, found when the corpus was rebuilt (the lead decides: fix the mechanism, or
# record that our spec departs from AutoPatch-J here). Strict: a case that starts passing fails here
# until it is taken off this list, so the list only ever shrinks. Never add a case to it to go green.
KNOWN_FAILING = {
    "apj-q04": "refused cjk_decision_needs_english_alias: AutoPatch-J's aliases are Chinese + copied terms",
    "apj-q10": "refused cjk_decision_needs_english_alias: AutoPatch-J's aliases copy 'SQLite Memory' only",
    "apj-s08": "refused cjk_decision_needs_english_alias: AutoPatch-J's alias is 'jdk' only",
    "apj-p01": "refused no_directive: AutoPatch-J keeps the stated preference '我明确偏好简洁回答'",
}
# every case names the AutoPatch-J test it comes from: `tests/<file>.py::<test or helper>`
_SOURCE = re.compile(r"AutoPatch-J tests/(?:fixtures/memory_quality_v3\.json case '[a-z-]+', run by )?"
                     r"tests/test_memory_\w+\.py::\w+|AutoPatch-J tests/test_memory_\w+\.py::\w+")


def test_the_corpus_is_pinned_well_formed_and_covers_autopatch_js_sixteen_cases() -> None:
    assert json.loads(CASES_JSON.read_text(encoding="utf-8"))["writer"] == WRITER
    assert MALFORMED == [] and len(CASES) >= 16
    assert all(c.id.startswith(f"{WRITER}-") for c in CASES)
    assert [c.id for c in CASES if not _SOURCE.search(c.why)] == []
    cited = {cid for c in CASES for cid in re.findall(r"memory_quality_v3\.json case '([a-z-]+)'", c.why)}
    assert cited == set(FIXTURE_IDS)
    assert {"keep", "refuse"} == {c.expect for c in CASES}
    assert set(KNOWN_FAILING) <= {c.id for c in CASES}


def _param(ic):
    known = KNOWN_FAILING.get(ic.id)
    marks = [pytest.mark.xfail(reason=known, strict=True)] if known else []
    return pytest.param(ic, id=ic.id, marks=marks)


@pytest.mark.parametrize("ic", [_param(c) for c in CASES])
def test_case(ic, stub, corpus_root: Path) -> None:  # noqa: F811 - the fixtures imported above
    from tests.quality.harness import run_case

    result = score(ic, run_case(ic.case, stub, corpus_root))
    assert result.passed, f"{ic.id} [{ic.category}]: {result.cell}: {result.detail} ({ic.why})"
