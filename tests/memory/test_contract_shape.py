"""The contract shapes (`memory.models`) validate like the pydantic models they replaced (issue 14)
and dump the exact §4/§5 documents."""

from __future__ import annotations

import json

import pytest

from autopatch_tui.core.memory.models import ItemSummary, JobCounts, StatusReport, SummaryState

ITEM = dict(id="mem-1", kind="project_decision", subject="s", statement="t", strength="soft", origin="explicit",
            recall_mode="on_match", applies_to_paths=["src/"], updated_at="2026-01-01T00:00:00Z")


def _status(**changes: object) -> StatusReport:
    base = dict(state="healthy", db_path="/x/memory.db", schema_version=4, supported_schema_version=4,
                diagnostic=None, generation=1, active_thread_id="thr-1", threads=1, turns=2, active_items=0,
                jobs=JobCounts(pending=1), failures=[], summary=SummaryState(status="missing", path="/x/s.md"),
                candidates={"pending": 3, "suppressed": 0})
    return StatusReport(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize("field,value", [("subject", b"\xff\xfe"), ("subject", 5), ("subject", None),
                                         ("applies_to_paths", ["a", 1]), ("applies_to_paths", ("a",)),
                                         ("kind", True)])
def test_a_wrong_value_is_refused(field: str, value: object) -> None:
    from autopatch_tui.core.memory.models import ItemSummary

    with pytest.raises(ValueError, match=field):
        ItemSummary(**{**ITEM, field: value})


def test_unknown_missing_and_out_of_literal_fields_are_refused() -> None:
    from autopatch_tui.core.memory.models import ItemSummary, SourceQuote

    with pytest.raises(TypeError):
        ItemSummary(**ITEM, extra="x")
    with pytest.raises(TypeError):
        ItemSummary(**{k: v for k, v in ITEM.items() if k != "updated_at"})
    with pytest.raises(ValueError, match="role"):
        SourceQuote(turn_id="t", role="system", quote="q")
    with pytest.raises(ValueError, match="turns"):
        _status(turns=True)  # a bool is not a count
    with pytest.raises(ValueError, match="jobs"):
        _status(jobs={"pending": 1})  # a nested shape must be one


def test_status_document_order_nesting_and_excluded_counts() -> None:
    report = _status()
    doc = report.model_dump(mode="json")
    assert list(doc) == ["state", "db_path", "schema_version", "supported_schema_version", "diagnostic", "cause",
                         "generation", "active_thread_id", "threads", "turns", "active_items", "jobs", "failures",
                         "failures_total", "refusals", "summary", "review"]
    assert doc["review"] == {"new": 0}
    assert doc["jobs"] == {"pending": 1, "leased": 0, "retry_wait": 0, "failed": 0, "succeeded": 0,
                           "succeeded_no_output": 0}
    assert doc["summary"] == {"status": "missing", "path": "/x/s.md"}
    assert report.candidates == {"pending": 3, "suppressed": 0}  # shown by the text status only
    assert json.loads(report.model_dump_json()) == doc
    copy = report.model_copy(update={"state": "degraded", "cause": "read_only"})
    assert (copy.state, copy.cause, report.state) == ("degraded", "read_only", "healthy")
    with pytest.raises(ValueError, match="state"):
        report.model_copy(update={"state": "sleepy"})
    with pytest.raises(AttributeError):
        report.turns = 5  # type: ignore[misc]


def test_utf8_bytes_in_a_text_field_read_as_text() -> None:
    """SQLite does not enforce column types: a store can hold a BLOB in `subject` (someone else's
    repository, another tool). pydantic's lax `str` decoded it; so does the shape, and lists it."""
    item = ItemSummary(**{**ITEM, "subject": "缩进".encode()})  # type: ignore[arg-type]
    assert item.subject == "缩进" and '"subject":"缩进"' in item.model_dump_json()
