"""The agent's steps and answers in words for people: "Searched sections for “…”" instead of
``search(query=…, granularity='section')``, and ``[guide.md › Keys]`` instead of a chunk id in an answer.

Names, headings and queries come from documents, uploads or a model: every piece is Markdown-escaped here.
"""

from __future__ import annotations

import re

from rag_core.agent.tools import TOOL_SPECS, shorten
from ui.safe_text import links_as_text, md_escape, safe_markdown

CHUNK_REF = re.compile(r"\[((?:web-)?[0-9a-f]{16})\]")  # a chunk of the index, or a web result (``web-…``)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def chunk_name(index, chunk_id: str) -> str:
    """``document › innermost heading`` of a chunk (plain text; the chunk id when the index does not know it)."""
    chunk = index.get(chunk_id) if index is not None else None
    if chunk is None:
        return chunk_id
    name = index.doc_name(chunk.doc_id)
    return f"{name} › {chunk.heading_path[-1]}" if chunk.heading_path else name


def doc_name(index, doc_id: str) -> str:
    return index.doc_name(doc_id) if index is not None else doc_id


# The loop's own steps that are not tools (rag_core.agent.loop): what each one says.
LOOP_STEP_TITLES = {"fallback": "The LLM endpoint failed: fell back to the offline policy",
                    "out_of_time": "The question's time budget ran out before the model answered"}


class _Names:
    """The index's names for a step's chunk and document ids (``ToolSpec.title`` asks for them)."""

    def __init__(self, index) -> None:
        self.index = index

    def chunk(self, chunk_id: str) -> str:
        return chunk_name(self.index, chunk_id)

    def doc(self, doc_id: str) -> str:
        return doc_name(self.index, doc_id)


def step_title(step, index) -> str:
    """What a step did, in one Markdown-safe line, e.g. ``Searched sections for “rotate key”``: its tool's own
    title (``rag_core.agent.tools.TOOLS``), or the loop's words for a step that is not a tool."""
    spec = TOOL_SPECS.get(step.tool)
    if spec is not None:
        text = spec.title(step.args, _Names(index))
    else:
        text = LOOP_STEP_TITLES.get(step.tool, f"Used {step.tool}")
    return md_escape(text)


def raw_call(step) -> str:
    """The tool call as the agent made it (for the step's expander)."""
    args = ", ".join(f"{k}={shorten(repr(v), 80)}" for k, v in step.args.items() if k != "answer")
    return f"{step.tool}({args})"


def readable_answer(text: str, index, hits=()) -> str:
    """``text`` with each ``[chunk id]`` reference replaced by ``[document › heading]`` and the links of quoted
    passages read as their text, drawn by the one rule for untrusted text (``ui.safe_text.safe_markdown``: no images,
    raw HTML or odd links). A web result (not in the index) is named from ``hits``, the answer's context: its site
    and title, or ``web result`` when it is not among them; no raw marker is left."""
    web = {h.chunk.id: h for h in hits if h.chunk.id.startswith("web-")}

    def name(match: re.Match) -> str:
        chunk_id = match.group(1)
        if chunk_id.startswith("web-"):
            hit = web.get(chunk_id)
            if hit is None:
                return "[web result]"
            title = hit.chunk.heading_path[-1] if hit.chunk.heading_path else ""
            return f"[{hit.source_name} › {title}]" if title else f"[{hit.source_name or 'web result'}]"
        if index is not None and index.get(chunk_id) is not None:
            return f"[{chunk_name(index, chunk_id)}]"
        return match.group(0)

    return safe_markdown(CHUNK_REF.sub(name, links_as_text(text, inline=False)))


def citation_label(source_name: str, heading: str, limit: int = 32) -> tuple[str, str]:
    """A short button label (the document and its innermost heading, cut with an ellipsis) and the full
    ``source › heading path`` for the button's tooltip. Names and headings are shown as written."""
    full = f"{source_name} › {heading}" if heading else source_name
    inner = heading.rsplit(" › ", 1)[-1] if heading else ""
    short = _cut(source_name, limit) + (f" › {_cut(inner, limit)}" if inner else "")
    return md_escape(short), md_escape(full)
