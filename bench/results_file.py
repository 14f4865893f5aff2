"""Where benchmarks publish: one Markdown file per benchmark under bench/results/."""

from __future__ import annotations

from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def publish(name: str, text: str) -> Path:
    """Write ``text`` (newline-terminated) to ``bench/results/<name>.md`` and return the path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.md"
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path
