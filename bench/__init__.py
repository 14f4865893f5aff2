"""Benchmarks (not tests): each module has ``main(argv=None)`` printing a Markdown table into bench/results/."""
