"""The agent: retrieval as tools, two policies, and a loop that streams every step."""

from rag_core.agent.loop import Action, AgentResult, AgentState, AgentStep, Policy, ask, make_policy, run_agent
from rag_core.agent.tools import TOOL_NAMES, ToolBox, ToolOutcome, tool_definitions

__all__ = ["Action", "AgentResult", "AgentState", "AgentStep", "Policy", "TOOL_NAMES", "ToolBox", "ToolOutcome",
           "ask", "make_policy", "run_agent", "tool_definitions"]
