"""Agent Playground renderers: the chat and its steps, the plan and coverage, grounding, Connected agents."""
