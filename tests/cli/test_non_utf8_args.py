"""An argument the OS could not decode as UTF-8 (Python keeps its bytes as lone surrogates,
`surrogateescape`) is refused as a usage error before anything runs: exit code 2, one line, the
bytes never echoed — never "unexpected error" from deep inside a store query."""

from __future__ import annotations

import pytest

from tests.support.fixtures import state_dir

BAD = "\udcff"  # the byte 0xff of `$'\xff'`, as sys.argv holds it


@pytest.mark.parametrize("argv", [("memory", "show", BAD), ("memory", "search", "--path", BAD, "foo"),
                                  ("ask", f"hello {BAD}"), ("--repo", BAD, "memory", "status")],
                         ids=["show", "search-path", "ask", "repo"])
def test_a_non_utf8_argument_is_a_usage_error(invoke_cli, repo, argv) -> None:
    rc, out, err = invoke_cli(*argv)
    assert rc == 2, err
    assert out == "" and err.count("\n") == 1 and err.startswith("error: argument ")
    assert "not valid UTF-8" in err and BAD not in err and "\\xff" not in err and "unexpected" not in err
    assert not state_dir(repo).exists()  # refused before any store was opened
