"""Agent policies: ``offline`` (deterministic planner, the default), ``llm`` (tool-calling chat model) and
``llm-answer`` (the offline planner retrieves, the model writes the answer); ``make_policy`` picks one by name."""

from __future__ import annotations

from typing import Any

from rag_core.agent.agent_types import Policy
from rag_core.agent.policies.answer_only import AnswerOnlyPolicy
from rag_core.agent.policies.offline import OfflinePolicy
from rag_core.agent.policies.tool_calling import LLMPolicy
from rag_core.config import Settings
from rag_core.errors import LLMError
from rag_core.types import POLICY_NAMES

__all__ = ["AnswerOnlyPolicy", "LLMPolicy", "OfflinePolicy", "make_policy"]


def make_policy(name: str, settings: Settings | None, llm: Any = None) -> Policy:
    """The named policy: ``offline``, ``llm`` or ``llm-answer`` (the last two need ``llm``, the client the caller
    opened with ``rag_core.services.open_llm``)."""
    if name == "offline":
        return OfflinePolicy()
    if name in ("llm", "llm-answer"):
        if llm is None:
            raise LLMError(f"the {name} policy needs an LLM: set RAG_LLM_BASE_URL, RAG_LLM_MODEL and "
                           "RAG_LLM_API_KEY")
        return LLMPolicy(llm) if name == "llm" else AnswerOnlyPolicy(llm)
    raise ValueError(f"unknown policy {name!r}; choose {', '.join(POLICY_NAMES)}")
