"""Asking a model server what it serves: the context size it reports, read once by ``LLMClient.context_tokens``
when ``RAG_LLM_CONTEXT_TOKENS`` is not set."""

from __future__ import annotations

import re
from typing import Any

from rag_core.llm.replies import token_count


def server_context_tokens(base_url: str, api_key: str = "", model: str = "", timeout_s: float = 2.0) -> int | None:
    """The context size the server reports: llama.cpp's ``/props`` (``default_generation_settings.n_ctx``), else
    ``/v1/models`` (vLLM's ``max_model_len``, llama.cpp's ``meta.n_ctx_train``); None when it says nothing."""
    # lazy: httpx is heavy, imported only where it is used
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))

    def fetch(url: str) -> Any:
        try:
            response = httpx.get(url, headers=headers, timeout=timeout_s)
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    props = fetch(f"{root}/props")
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        value = token_count(settings.get("n_ctx") if isinstance(settings, dict) else props.get("n_ctx"))
        if value:
            return value
    models = fetch(f"{base_url.rstrip('/')}/models")
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, dict)]
    chosen = next((e for e in entries if e.get("id") == model), entries[0] if entries else None)
    if chosen is None:
        return None
    meta = chosen.get("meta") if isinstance(chosen.get("meta"), dict) else {}
    values = (chosen.get("max_model_len"), chosen.get("context_length"), meta.get("n_ctx"), meta.get("n_ctx_train"))
    return next((token_count(v) for v in values if token_count(v)), None)
