"""``search`` flag values are checked before the collection is opened, and errors name the flag."""

from __future__ import annotations

import pytest

from rag_core.cli import main


@pytest.mark.parametrize("flag, value", [("--max-k", "0"), ("--budget", "-1"), ("--min-confidence", "5")])
def test_bad_values_name_the_flag(capsys, flag, value):
    assert main(["search", "rotate key", "--collection", "not-there", flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}: ") and err.count("\n") == 1, err
