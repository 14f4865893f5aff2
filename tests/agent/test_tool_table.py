"""Issue 38.1: an agent tool is one ToolSpec row plus its ToolBox method. Every place that names tools reads the
rows, so a row added to ``TOOLS`` (and its ``ToolBox._<name>``) reaches the tool-calling prompt, the OpenAI tool
definitions, argument validation, the step titles, the offline policy's ranking and the MCP server, and a new
hand-written list anywhere of these would fail here. (Trial, a scratch branch: a ``count_sections`` tool was its
argument model, its row and its method, all in ``rag_core/agent/tools.py``; ``tools --json`` and the MCP server
listed it with nothing else changed.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag_core.agent import tools
from rag_core.agent.policies.tool_calling import calls_in_text
from rag_core.mcp_server.server import MCP_NAMES, mcp_tools
from ui.agent.agent_text import step_title


class _Index:
    def get(self, chunk_id):
        return None

    def doc_name(self, doc_id):
        return doc_id


@pytest.mark.parametrize("spec", tools.TOOLS, ids=lambda s: s.name)
def test_every_consumer_reads_the_row(spec):
    assert spec.prompt in tools.tools_prompt()
    assert spec.name in {d["function"]["name"] for d in tools.tool_definitions()}
    assert tools.TOOL_ARGS[spec.name] is spec.args
    assert callable(getattr(tools.ToolBox, f"_{spec.name}", None)) or spec.name == "done"
    assert (spec.name in tools.RETRIEVAL_TOOLS) == spec.retrieval
    served = {t.name for t in mcp_tools()}
    assert (spec.mcp_name in served) if spec.mcp_name else (spec.name not in MCP_NAMES)
    calls, _ = calls_in_text(f'<tool_call>{{"name": "{spec.name}", "arguments": {{}}}}</tool_call>')
    assert [c.name for c in calls] == [spec.name]  # the text-call reader knows the tool by its row
    step = SimpleNamespace(tool=spec.name, args={})
    assert step_title(step, _Index()) != f"Used {spec.name}"  # the row's own title, not the fallback


def test_the_mcp_server_serves_exactly_the_rows_marked_served():
    assert [t.name for t in mcp_tools()] == [s.mcp_name for s in tools.TOOLS if s.mcp_name]
    assert "done" not in MCP_NAMES
