"""``python -m bench``: help names every benchmark; an unknown name is refused with the list."""

from __future__ import annotations

from bench.__main__ import BENCHMARKS, main


def test_help_lists_the_benchmarks(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m bench") and all(name in out for name in BENCHMARKS)


def test_an_unknown_benchmark_is_refused_with_the_list(capsys):
    assert main(["nope"]) == 2
    assert "unknown benchmark(s) ['nope']" in capsys.readouterr().err
