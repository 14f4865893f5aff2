"""The agent: retrieval as tools, three policies (offline, llm, llm-answer), and a loop that streams every step."""

from rag_core.agent.agent_types import Action, AgentResult, AgentState, AgentStep, Policy, SwitchPolicy
from rag_core.agent.loop import ask, run_agent
from rag_core.agent.policies import make_policy
from rag_core.agent.tools import TOOL_NAMES, ToolBox, ToolOutcome, tool_definitions

__all__ = ["Action", "AgentResult", "AgentState", "AgentStep", "Policy", "SwitchPolicy", "TOOL_NAMES", "ToolBox",
           "ToolOutcome", "ask", "make_policy", "run_agent", "tool_definitions"]
