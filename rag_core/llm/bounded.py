"""A chat client with one deadline applied to every call (the retrieval router inside one question)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag_core.llm.replies import ChatResult

if TYPE_CHECKING:
    from rag_core.llm.client import LLMClient


class BoundedLLM:
    """An ``LLMClient`` whose calls all carry one deadline; everything else is the client's."""

    def __init__(self, client: LLMClient, deadline: float) -> None:
        self.client = client
        self.deadline = deadline

    def chat(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None,
             temperature: float = 0.0, **kwargs: Any) -> ChatResult:
        kwargs.setdefault("deadline", self.deadline)
        return self.client.chat(messages, tools, temperature, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)
