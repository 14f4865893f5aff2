"""A parameter sweep: one configuration varied over max tokens × k, evaluated, and laid out as a grid."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_core.config import ChunkingConfig, RAGConfig
from rag_core.evaluation.runner import EvalRun

MAX_CELLS = 36


def sweep_configs(base: RAGConfig, max_tokens: Sequence[int], ks: Sequence[int]) -> list[RAGConfig]:
    """One configuration per (max tokens, k): chunking.max_tokens and retrieval.initial_k set, rest from ``base``.

    The overlap is clamped below max tokens and ``max_k`` raised to at least k, so every cell is valid.
    """
    max_tokens, ks = sorted(set(max_tokens)), sorted(set(ks))
    if not max_tokens or not ks:
        raise ValueError("a sweep needs at least one max-tokens value and one k value")
    if len(max_tokens) * len(ks) > MAX_CELLS:
        raise ValueError(f"a sweep of {len(max_tokens)} × {len(ks)} cells is too large; at most {MAX_CELLS} cells")
    configs = []
    for tokens in max_tokens:
        for k in ks:
            data = base.model_dump()
            data["name"] = f"{base.name[:60]} mt{tokens} k{k}"
            data["chunking"]["max_tokens"] = tokens
            data["chunking"]["overlap"] = ChunkingConfig.fitted_overlap(tokens, data["chunking"]["overlap"])
            data["retrieval"]["initial_k"] = k
            data["retrieval"]["max_k"] = max(data["retrieval"]["max_k"], k)
            try:
                configs.append(RAGConfig.model_validate(data))
            except ValueError as e:
                raise ValueError(f"sweep cell max_tokens={tokens}, k={k} is invalid: {e}") from e
    return configs


def sweep_grid(run: EvalRun, metric: str) -> list[dict[str, Any]]:
    """Rows of (strategy, max_tokens, k, value) for ``metric``, read from the run's summary and configurations."""
    params = {c["name"]: (c["chunking"]["max_tokens"], c["retrieval"]["initial_k"]) for c in run.configs}
    rows = []
    for row in run.summary:
        if metric not in row:
            available = ", ".join(k for k in row if "@" in k or k == "mrr")
            raise ValueError(f"unknown metric '{metric}'; available: {available}")
        tokens, k = params[row["config"]]
        rows.append({"strategy": row["strategy"], "max_tokens": tokens, "k": k, metric: row[metric]})
    return rows
