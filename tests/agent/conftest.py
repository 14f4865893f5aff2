"""Agent test helpers: the scripted OpenAI-compatible server, a tiny corpus and fakes of the index/retriever."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))

import openai_server  # noqa: E402

from rag_core.config import Settings  # noqa: E402


@pytest.fixture
def scripted_server():
    """Factory: ``with scripted_server([...]) as server`` gives a loopback chat-completions server."""
    return openai_server.ScriptedOpenAIServer


def llm_settings(base_url: str, **overrides) -> Settings:
    values = {"llm_base_url": base_url, "llm_model": "scripted-model", "llm_api_key": "k", "llm_timeout_s": 5.0,
              "llm_max_retries": 2}
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def make_llm_settings():
    return llm_settings
