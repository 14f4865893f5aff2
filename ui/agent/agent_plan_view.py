"""The question's plan in the Agent Playground: its kind and parts, each part's evidence in the final context
(a checklist), the "documents do not answer this" banner, and the parts a one-shot search misses.

Parts are the user's words and evidence labels name documents and headings: every piece is Markdown-escaped.
A result kept from before plans existed has no ``plan``, ``parts`` or ``found``: read them with defaults.
"""

from __future__ import annotations

import logging

import streamlit as st

from rag_core.agent.coverage import PART_COVERED, embedder_id, score_parts
from rag_core.agent.plan import Part, plan_question
from ui.agent import agent_text
from ui.safe_text import md_escape

COVERED, MISSING = ":green[:material/check_circle:]", ":orange[:material/cancel:]"
CLOSEST = 3  # the closest places the "not found" answer names
log = logging.getLogger(__name__)


def evidence_label(chunk_id: str, by_id: dict, index) -> str:
    """``source › heading`` of a cited chunk (Markdown-escaped), as the citation buttons name it."""
    hit = by_id.get(chunk_id)
    if hit is not None:
        return agent_text.citation_label(hit.source_name, hit.chunk.heading)[0]
    return md_escape(agent_text.chunk_name(index, chunk_id))


def checklist_line(part: dict, by_id: dict, index, searched: bool = False) -> str:
    """``part — ✓ evidence (confidence)`` or ``part — ✗ not found (best …)``; the part alone without coverage.
    ``searched``: also the words it was searched with, when they are not its text (a model's plan)."""
    line = md_escape(part.get("text", ""))
    query = " ".join(str(part.get("query") or "").split())
    if searched and query and query != " ".join(str(part.get("text", "")).split()):
        line += f" (searched as “{md_escape(query)}”)"
    if "covered" not in part:
        return line
    confidence = float(part.get("confidence", 0.0))
    # The check is the answer's own rule (``coverage.PART_COVERED``): a part at or above it is quoted, one under
    # it is not; the number beside it says which side it fell on.
    if part["covered"] and part.get("chunk_ids") and confidence >= PART_COVERED:
        where = ", ".join(evidence_label(c, by_id, index) for c in part["chunk_ids"])
        return f"{line} — {COVERED} {where} ({confidence:.2f} ≥ {PART_COVERED:.2f})"
    if confidence >= PART_COVERED:  # un-covered by the judge: it names what no evidence found mentions
        return f"{line} — {MISSING} not found (best {confidence:.2f}, but it names what no evidence mentions)"
    return f"{line} — {MISSING} not found (best {confidence:.2f} < {PART_COVERED:.2f})"


def plan_markdown(plan: dict, parts: list[dict], hits, index) -> str | None:
    """The plan's kind and why, then its parts as a numbered checklist (None for a one-part question)."""
    rows = parts if len(parts) == len(plan.get("parts", [])) else plan.get("parts", [])
    if len(rows) < 2:
        return None
    by_id = {h.chunk.id: h for h in hits}
    head = f":material/checklist: **Plan: {md_escape(plan.get('kind', 'multi-part'))}**"
    if plan.get("why"):
        head += f" · {md_escape(plan['why'])}"
    if any("covered" in part for part in rows):
        # Two thresholds meet here: the retrieval gate decides when to search again, this one what is answered.
        head += (f" · a part counts as covered when its best evidence reaches {PART_COVERED:.2f} (not the "
                 "retrieval threshold)")
    by_model = plan.get("by") == "model"
    lines = [f"{n}. {checklist_line(part, by_id, index, by_model)}" for n, part in enumerate(rows, start=1)]
    return "\n".join([head, "", *lines])


def render_plan(result, index) -> None:
    """The plan and its coverage checklist, when the question has more than one part."""
    text = plan_markdown(getattr(result, "plan", None) or {}, getattr(result, "parts", None) or [],
                         result.context_hits, index)
    if text:
        st.markdown(text)


def render_not_found(result) -> None:
    """The banner of a question the documents do not answer, with the run's reason."""
    reason = getattr(result, "found_reason", "") or "no passage answers it"
    st.warning(f"**The documents do not answer this question.** Why: {md_escape(reason)}.",
               icon=":material/search_off:")


def one_shot_coverage(question: str, hits, index, plan: dict | None = None) -> list[dict] | None:
    """Each of the agent's parts as covered by the one-shot context ([] for a one-part question; None, with a
    quiet caption, when it cannot be computed). ``plan``: the agent's plan (``AgentResult.plan``), so the parts
    are the ones its checklist shows, a model's when a model planned; without it, the rules' plan."""
    try:
        if plan and plan.get("parts"):
            parts = [Part(str(p.get("text", "")), str(p.get("query") or p.get("text", "")),
                          p.get("role", "question")) for p in plan["parts"]]
        else:
            parts = plan_question(question).parts
        if len(parts) < 2:
            return []
        return [p.to_dict() for p in score_parts(parts, hits, index.embed_texts, embedder_id(index))]
    except Exception as error:  # a side note: the page goes on without it
        log.exception("Scoring the one-shot context against the question's parts failed")
        st.caption(f"Coverage of the question's parts is unavailable: {md_escape(type(error).__name__)}")
        return None


def render_one_shot_parts(coverage: list[dict] | None) -> None:
    """Which of the agent's parts the one-shot context misses (nothing for a one-part question)."""
    if not coverage:
        return
    missed = [p for p in coverage if not p.get("covered")]
    if not missed:
        st.caption(f"{COVERED} One search covers every part of the question.")
        return
    st.markdown(f"One search missed {len(missed)} of {len(coverage)} part(s):\n\n" + "\n".join(
        f"- {MISSING} {md_escape(p.get('text', ''))} (best {float(p.get('confidence', 0.0)):.2f})" for p in missed))
