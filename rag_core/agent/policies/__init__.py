"""Agent policies: ``offline`` (deterministic planner, the default) and ``llm`` (tool-calling chat model)."""
