"""``python -m rag_core ask "QUESTION" --collection NAME``: run the agent; print its steps, answer and context.

``--config NAME`` takes a saved configuration's retrieval and agent settings; its chunking and embedder are not
used, since the collection is searched with the ones it was built with.
"""

from __future__ import annotations

import argparse
import sys

from rag_core.cli.config_cmd import add_saved_config_flag, saved_config
from rag_core.config import AgentConfig
from rag_core.types import POLICY_NAMES

FLAGS = {"agent.max_steps": "--max-steps", "agent.max_retrievals": "--max-retrievals",
         "agent.context_budget": "--budget"}


def register(subparsers) -> None:
    parser = subparsers.add_parser("ask", help="ask the agent a question over a collection (steps traced)")
    parser.add_argument("question", help="the question")
    parser.add_argument("--collection", required=True, help="index (collection) name, as given to ingest")
    defaults = AgentConfig()
    add_saved_config_flag(parser, "retrieval and agent settings (the policy too)")
    parser.add_argument("--policy", choices=POLICY_NAMES,
                        help=f"{defaults.policy} (deterministic, no network; default, or the --config's), llm (the "
                             "model calls the tools) or llm-answer (the offline planner retrieves, the model writes "
                             "the cited answer; for models that cannot call tools). Both LLM policies need RAG_LLM_* "
                             "settings; when the endpoint fails, or the model's answer is not used (cut off, "
                             "repeating itself, out of time), the offline answer is printed and the exit code is 2")
    parser.add_argument("--max-steps", type=int,
                        help=f"most tool calls before answering (default {defaults.max_steps})")
    parser.add_argument("--max-retrievals", type=int,
                        help=f"most searches (default {defaults.max_retrievals})")
    parser.add_argument("--budget", type=int,
                        help=f"context token budget (default {defaults.context_budget})")
    parser.add_argument("--whole-chunks", action="store_true",
                        help="never trim chunks: by default a question of several parts whose gathered chunks "
                             "overflow the budget keeps each chunk's most relevant sentences, so more places fit")
    parser.add_argument("--json", action="store_true", help="print one JSON object (steps, answer, citations, context)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from rag_core.agent import ask
    from rag_core.cli import print_json
    from rag_core.config import RAGConfig, get_settings
    from rag_core.errors import field_problems
    from rag_core.services import open_collection, open_llm

    saved = saved_config(args.config)
    base = saved if saved is not None else RAGConfig()
    agent = base.agent.model_dump()
    # Only the flags given replace the base's values (argparse defaults of None), so a --config is not undone by
    # defaults nobody typed.
    for key, value in (("policy", args.policy), ("max_steps", args.max_steps),
                       ("max_retrievals", args.max_retrievals), ("context_budget", args.budget)):
        if value is not None:
            agent[key] = value
    if args.whole_chunks:
        agent["trim_chunks"] = False
    try:
        # the saved chunking and embedding are left out on purpose: the collection was built with its own
        config = RAGConfig(name=base.name, retrieval=base.retrieval.model_dump(), agent=agent)
    except ValidationError as e:
        raise ValueError(field_problems(e, labels=FLAGS)) from e
    policy = config.agent.policy
    settings = get_settings()
    if policy != "offline" and args.policy is None and not settings.llm_configured:
        raise ValueError(f"configuration '{base.name}' uses the {policy} policy, which needs RAG_LLM_BASE_URL and "
                         "RAG_LLM_MODEL; set them, or pass --policy offline")
    index = open_collection(args.collection, settings)
    # raises a clear LLMError when not configured
    llm = open_llm(settings, required=True) if policy != "offline" else None
    # the agent opens its retriever with the policy's client: an offline run takes no network, not even to route
    result = ask(args.question, index, config, settings, policy=policy, llm=llm)
    # --policy llm asked for the model: when the endpoint failed or its answer was not used (cut off, a repetition,
    # the time budget), the offline fallback's answer is still printed (the fallback is recorded in it), and the
    # cause is reported on stderr with exit 2.
    code = 2 if policy != "offline" and result.fallback else 0
    if code:
        print(f"error: {' '.join(str(result.fallback).split())}", file=sys.stderr, flush=True)
    for note in result.warnings:
        print(f"warning: {' '.join(note.split())}", file=sys.stderr, flush=True)
    if args.json:
        print_json({"collection": args.collection, **result.to_dict(),
                    "config_name": saved.name if saved is not None else None})
        return code
    for step in result.steps:
        status = "ok" if step.ok else f"error: {step.error}"
        detail = f" route={step.route} k={step.k} confidence={step.confidence}" if step.tool == "search" else ""
        print(f"step {step.step}: {step.tool} {step.args if step.tool != 'done' else ''}{detail} — {status}")
        print(f"    why: {step.reason}")
        print(f"    context {step.context_tokens_in} → {step.context_tokens_out} tokens; {step.elapsed_ms:.0f} ms")
    print()
    print(result.answer)
    print()
    if len(result.parts) > 1:
        by = " (planned by the model)" if result.plan.get("by") == "model" else ""
        print(f"plan: {result.plan.get('kind')} question, {len(result.parts)} parts{by}")
        for number, part in enumerate(result.parts, start=1):
            evidence = ", ".join(part["chunk_ids"]) if part["covered"] else "not found"
            print(f"  {number}. {' '.join(part['text'].split())} → {evidence}")
    print(f"found: {'yes' if result.found else 'NO'} ({result.found_reason})")
    print("citations:", ", ".join(result.citations) or "(none)")
    print(f"grounded: {'yes' if result.grounded else 'NO'} ({result.grounding})")
    for item in result.unsupported:
        print(f"unsupported: “{' '.join(item['sentence'].split())}” — {item['reason']}")
    print(f"stop: {result.stop_reason}")
    print()
    print(result.context_text)
    return code
