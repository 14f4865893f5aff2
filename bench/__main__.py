"""``make bench``: run every benchmark in turn (or those named: ``python -m bench chunkers scifact``)."""

from __future__ import annotations

import importlib
import sys
import time

BENCHMARKS = ("chunkers", "embeddings", "ingest", "scifact", "latency", "golden", "agent", "docsqa", "load",
              "pdfstructure", "drafted", "grounding", "mcp", "tune")


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(f"usage: python -m bench [NAME ...] | python -m bench NAME [FLAGS]\n\n{__doc__.strip()}\n\n"
              f"benchmarks: {', '.join(BENCHMARKS)}; `python -m bench NAME --help` lists a benchmark's flags.")
        return 0
    if len(args) > 1 and args[0] in BENCHMARKS and args[1].startswith("-"):  # one benchmark with its own flags
        return importlib.import_module(f"bench.{args[0]}").main(args[1:])
    names = args or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"\n## bench.{name}\n", flush=True)
        started = time.perf_counter()
        try:
            importlib.import_module(f"bench.{name}").main([])
        except Exception as e:  # one failing benchmark must not hide the others' figures
            failed.append(name)
            print(f"bench.{name} failed: {type(e).__name__}: {e}", file=sys.stderr)
        print(f"\n({name}: {time.perf_counter() - started:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
