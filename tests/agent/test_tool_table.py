"""The agent's tools are one table (``rag_core.agent.tools.TOOLS``, issue 38.1): each row gives the tool's argument
model, its sentence in the tool-calling prompt, its step title and how the offline policy ranks its result, and
everything else is derived from the rows. A new tool is its row plus its ``ToolBox._<name>`` method: these tests
fail when a row lacks its method or a part of the studio still lists the tools by hand."""

from __future__ import annotations

from types import SimpleNamespace

from rag_core.agent.policies.tool_calling import SYSTEM_PROMPT
from rag_core.agent.tools import RETRIEVAL_TOOLS, TOOL_ARGS, TOOL_NAMES, TOOLS, ToolBox, tool_definitions, tools_prompt
from tests.fakes.index import FakeIndex
from ui.agent_text import step_title


def test_every_row_has_its_toolbox_method():
    for tool in TOOLS:
        assert callable(getattr(ToolBox, f"_{tool.name}", None)), f"{tool.name}: no ToolBox._{tool.name}"


def test_the_prompt_schemas_and_names_come_from_the_rows():
    assert TOOL_NAMES == tuple(t.name for t in TOOLS) == tuple(TOOL_ARGS)
    assert [d["function"]["name"] for d in tool_definitions()] == list(TOOL_NAMES)
    assert "{tools}" in SYSTEM_PROMPT  # the prompt's tool paragraph is the rows', not a hand-written list
    prompt = tools_prompt()
    for tool in TOOLS:
        assert tool.prompt in prompt and tool.prompt.startswith(tool.name)
    assert RETRIEVAL_TOOLS == {"search", "zoom_in", "zoom_out", "read_section"}


def test_every_tool_has_its_own_step_title():
    index = FakeIndex([], names={})
    for tool in TOOLS:
        title = step_title(SimpleNamespace(tool=tool.name, args={}), index)
        assert title and not title.startswith("Used "), tool.name
