"""How far a drafted question set can be trusted: rank agreement (Kendall's τ) between the orderings two question
sets give a grid of configurations, and the figure the bench published (``bench/results/draft_agreement.json``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag_core.config import PROJECT_ROOT

AGREEMENT_PATH = PROJECT_ROOT / "bench" / "results" / "draft_agreement.json"


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b between two score lists over the same items (ties counted as scipy does); 0.0 when either list
    is constant."""
    if len(x) != len(y):
        raise ValueError(f"the two score lists differ in length ({len(x)} and {len(y)})")
    if len(x) < 2:
        raise ValueError("Kendall's tau needs at least two items")
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return (concordant - discordant) / denominator if denominator else 0.0


def agreement_path(style: str = "verbatim") -> Path:
    """Where ``bench drafted`` publishes the figure of sets drafted in ``style`` (``--style``)."""
    return AGREEMENT_PATH if style == "verbatim" else AGREEMENT_PATH.with_name(f"draft_agreement_{style}.json")


def load_agreement(path: Path | str | None = None, style: str = "verbatim") -> dict[str, Any] | None:
    """The bench's published agreement figure (``tau``, ``corpus``, ``configs`` ...) of sets drafted in ``style``,
    or None when it was never run or the file is unreadable."""
    path = Path(path or agreement_path(style))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("tau"), int | float) or not data.get("corpus"):
        return None
    return data
