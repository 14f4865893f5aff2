"""Agent Playground: what the page says about an answer's grounding and about a model answer that was not used.

"Not grounded" lists the sentences no passage they rest on supports (``AgentResult.unsupported``); a fallback
names its cause (a repetition stop, a cut-off or the time budget is not "the LLM endpoint failed"); citations the
check or the policy attributed by word overlap are told apart from the model's own.
"""

from __future__ import annotations

import streamlit as st

from ui.safe_text import md_inert

# How many unsupported sentences are listed (the rest are counted).
LISTED = 5


def fallback_message(fallback: str) -> str:
    """The banner text of a run whose model answer was not used, naming the cause (Markdown-safe)."""
    if fallback.startswith("LLM failed"):
        return f"The LLM endpoint failed; the offline policy answered instead. {md_inert(fallback)}"
    return (f"**The model's answer was not used**: {md_inert(fallback)}. The offline policy's quotes are shown "
            "instead.")


def render_fallback(result) -> None:
    if result.fallback:
        st.warning(fallback_message(result.fallback))


def render_not_grounded(result) -> None:
    """The "Not grounded" warning with the unsupported sentences and why each is not supported."""
    unsupported = list(getattr(result, "unsupported", []) or [])
    lines = [f"**Not grounded** ({md_inert(result.grounding)}): check the documents before relying on it."]
    for item in unsupported[:LISTED]:
        lines.append(f"- “{md_inert(item['sentence'][:300])}” — {md_inert(item['reason'])}")
    if len(unsupported) > LISTED:
        lines.append(f"- … and {len(unsupported) - LISTED} more unsupported sentence(s)")
    st.warning("\n".join(lines))


def split_citations(result) -> tuple[list[str], list[str]]:
    """(chunk ids the answer cites or quotes, chunk ids attributed to it by word overlap) among the context's."""
    held = {h.chunk.id for h in result.context_hits}
    sources = list(getattr(result, "citation_sources", []) or [])
    # Each id once, in first-cited order: an answer citing one chunk twice shows one chip.
    attributed = list(dict.fromkeys(s["chunk_id"] for s in sources if s.get("attributed") and s["chunk_id"] in held))
    own = list(dict.fromkeys(c for c in result.citations if c in held and c not in attributed))
    return own, attributed
