"""The Memory quality corpus (tests/quality/cases.py), black-box through the CLI and the stub.

Every case must pass: wrong candidates refused with the named rule, legitimate ones kept (each
legitimate case that fails is a false refusal). `bench/quality.py` runs the same corpus and prints
the pass rate, a confusion table and the refusal rules hit."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.quality.cases import CASES, KEPT
from tests.quality.harness import check, run_case
from tests.support.llm_stub import StubLLMServer


@pytest.fixture(scope="module")
def stub() -> Iterator[StubLLMServer]:
    """One stub server for the whole corpus, and two process-wide costs paid once: the TLS trust
    store each SDK client loads (the stub is plain HTTP) and the CLI's argparse parser."""
    import httpcore2

    import autopatch_tui.cli.main as cli_main

    saved = httpcore2.default_ssl_context, cli_main.build_parser
    httpcore2.default_ssl_context = functools.lru_cache(maxsize=None)(saved[0])
    cli_main.build_parser = functools.lru_cache(maxsize=1)(saved[1])
    server = StubLLMServer()
    try:
        yield server
    finally:
        server.close()
        httpcore2.default_ssl_context, cli_main.build_parser = saved


def test_the_corpus_is_large_bilingual_and_adversarial() -> None:
    assert len(CASES) >= 80
    assert len({c.id for c in CASES}) == len(CASES)
    langs = Counter(c.lang for c in CASES)
    assert langs["zh"] >= 20 and langs["en"] >= 20 and langs["mixed"] >= 3
    # the corpus keeps adversarial cases: at least a third are cases a previous gate got wrong (the
    # validator before the semantic gate: `careless`; the round-one evidence gate: `round_one_wrong`)
    assert sum(c.careless or c.round_one_wrong for c in CASES) * 3 >= len(CASES)
    assert sum(c.round_one_wrong for c in CASES) >= 20
    assert sum(c.legit for c in CASES) >= 20
    rules = {cand.expect for case in CASES for cand in case.cands} - {KEPT}
    assert {"code_fact", "one_off_scope", "undecided", "assistant_conclusion", "acknowledgement_only",
            "empty_identity", "quote_without_word", "inferred_counter_example", "off_meaning"} <= rules


@pytest.fixture(scope="module")
def corpus_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the cases' checkouts and AUTOPATCH_HOME live: a RAM-backed folder when the machine has
    one (the corpus makes ~300 small SQLite commits; on a shared disk their fsyncs are most of its
    time), else pytest's tmp folder."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        root = Path(tempfile.mkdtemp(prefix="autopatch-quality-", dir=shm))
        try:
            yield root
        finally:
            shutil.rmtree(root, ignore_errors=True)
    else:
        yield tmp_path_factory.mktemp("quality")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case, stub: StubLLMServer, corpus_root: Path) -> None:
    outcome = run_case(case, stub, corpus_root)
    assert check(case, outcome) == []
