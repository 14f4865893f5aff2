"""The OpenAI-compatible chat model, one room per concept.

``client``   the chat client: one bounded ``chat`` call with timeouts, retries and clear errors
``replies``  what a model server replies, read as untrusted data (the turn, tool calls, usage, JSON in prose)
``probe``    asking the server what it serves (its context size)
``bounded``  the client with one deadline applied to every call
"""

from rag_core.llm.bounded import BoundedLLM
from rag_core.llm.client import (
    MAX_RETRY_AFTER_S,
    PURPOSES,
    LLMClient,
    LLMContextOverflow,
    LLMOutOfTime,
    LLMToolsUnsupported,
    llm_from_settings,
    parse_retry_after,
    prompt_size,
)
from rag_core.llm.probe import server_context_tokens
from rag_core.llm.replies import (
    MAX_ARGUMENT_DEPTH,
    MAX_TOKEN_COUNT,
    MAX_TOOL_NAME_CHARS,
    USAGE_KEYS,
    ChatResult,
    ToolCall,
    json_object_in,
    message_text,
    token_count,
    tool_arguments,
    tool_name,
    usage_counts,
)

__all__ = [
    "MAX_ARGUMENT_DEPTH", "MAX_RETRY_AFTER_S", "MAX_TOKEN_COUNT", "MAX_TOOL_NAME_CHARS", "PURPOSES", "USAGE_KEYS",
    "BoundedLLM", "ChatResult", "LLMClient", "LLMContextOverflow", "LLMOutOfTime", "LLMToolsUnsupported", "ToolCall",
    "json_object_in", "llm_from_settings", "message_text", "parse_retry_after", "prompt_size",
    "server_context_tokens", "token_count", "tool_arguments", "tool_name", "usage_counts",
]
