"""Grounding check: invented answers caught and supported answers kept, ``llm-answer`` on the FastAPI docs set.

``python -m bench grounding [--limit N] [--budget 1500] [--verbose]``

Each of the 80 questions of ``../shared/datasets/fastapi_docs_qa`` is asked with the ``llm-answer`` policy (the
offline planner retrieves over the real FastAPI docs index, the "model" writes the answer) against a fake
OpenAI-compatible server (``tests/fakes/openai_server.py``) that replies the way SmolLM2-135M did through
llama-server (issue 29). The replies are **synthetic**: built for each request from the documents it carries,
modelled on the recorded failures, not recorded from a real server (none is built on this machine).

- **supported** (must be kept: grounded, the model's answer shown): a gold evidence sentence found in the
  documents sent, cited by its number; in turn verbatim, with a small model's lead-in ("According to the
  documentation, ..."), and uncited (then attributed by word overlap);
- **invented** (must be caught: not grounded, or the model's answer not used): the supported sentence followed by
  a made-up method (``remove_attributes``), a runaway identifier (``api_key_valid_key_value...``) or a wrong number
  ("429 requests"); the sentence with its citation moved to a document that does not say it; an answer from
  memory; 18 citations of one PR URL; "[1:n] [2:n] ..." repeated; an empty answer; a cut-off answer.

A question whose gold evidence is not among the documents sent has no supported reply to build (retrieval missed
it): it is counted apart. The offline policy's extractive answers to the same questions are checked too (grounded:
found, and every quote from covered evidence). Writes ``bench/results/grounding.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path
from typing import Any

from bench.docsqa import DEFAULT_DATA_DIR, load_fastapi, normalize_ws, open_built
from bench.results_file import publish
from tests.fakes import openai_server as fake

INVENTED = ("made-up method", "runaway identifier", "wrong number", "wrong citation", "from memory",
            "repeated URL citations", "numbered repetition", "empty", "cut off")
_DOCUMENT = re.compile(r'<untrusted_document n="(\d+)"[^>]*>\n?(.*?)\n?</untrusted_document>', re.DOTALL)


def documents_of(payload: dict[str, Any]) -> dict[int, str]:
    """The numbered documents of an llm-answer request: {n: whitespace-normalised text}."""
    text = str(payload["messages"][-1].get("content") or "")
    return {int(n): normalize_ws(body) for n, body in _DOCUMENT.findall(text)}


def gold_sentence(spans: list[str], documents: dict[int, str]) -> tuple[str, int] | None:
    """The first gold span (one sentence or line of it) held by a document sent, and that document's number."""
    for span in spans:
        for number, body in documents.items():
            if span in body:
                return span, number
    return None


def reply(kind: str, spans: list[str], documents: dict[int, str], turn: int) -> tuple[str, str]:
    """(content, finish_reason) of the synthetic reply of ``kind`` to one request."""
    found = gold_sentence(spans, documents)
    sentence, number = found if found else (next(iter(documents.values()), "")[:200], 1)
    sentence = sentence.rstrip(" :")
    cited = f"{sentence.rstrip('.')} [{number}]."
    if kind == "supported":
        style = turn % 3
        if style == 0:
            return cited, "stop"
        if style == 1:
            return f"According to the documentation, {cited[0].lower()}{cited[1:]}", "stop"
        return sentence, "stop"  # no citation: attributed by word overlap
    if kind == "made-up method":
        return f"{cited} Then call `app.remove_attributes()` to apply it [{number}].", "stop"
    if kind == "runaway identifier":
        return f"{cited} Set api_key_valid_key_value_key_value_key_value_key_value in the settings [{number}].", "stop"
    if kind == "wrong number":
        return f"{cited} The default limit for this is 429 requests per minute [{number}].", "stop"
    if kind == "wrong citation":
        from rag_core.retrieval.terms import content_terms, term_coverage

        # the document least like the sentence (another chunk may hold the same text: that citation would be right)
        terms = content_terms(sentence)
        others = sorted((term_coverage(terms, body), n) for n, body in documents.items() if n != number)
        return f"{sentence.rstrip('.')} [{others[0][1] if others else number + 1}].", "stop"
    if kind == "from memory":
        return ("FastAPI keeps every request body in a Redis cache for 15 minutes by default [1]. You can turn this "
                "off with the `--no-cache` option [1]."), "stop"
    if kind == "repeated URL citations":
        return " ".join(f"See https://github.com/fastapi/fastapi/pull/4781 [{number}]." for _ in range(18)), "stop"
    if kind == "numbered repetition":
        return " ".join(f"[{n}:n]" for n in range(1, 120)), "length"
    if kind == "empty":
        return "", "stop"
    if kind == "cut off":
        words = cited.split()
        return " ".join(words[: max(3, len(words) // 2)]), "length"
    raise ValueError(f"unknown reply kind {kind!r}")


class ReplayServer(fake.ScriptedOpenAIServer):
    """Answers each chat request with the synthetic reply of ``self.kind`` for the current question."""

    def __init__(self) -> None:
        super().__init__()
        self.kind, self.spans, self.turn = "supported", [], 0

    def respond(self, payload: dict[str, Any]) -> dict[str, Any]:
        content, finish = reply(self.kind, self.spans, documents_of(payload), self.turn)
        tokens = (len(str(payload)) // 4, max(1, len(content.split())))
        return {"status": 200, "body": fake.completion({"role": "assistant", "content": content}, finish, tokens)}


def run(limit: int, budget: int, data_dir: Path, verbose: bool) -> dict[str, Any]:
    os.environ["RAG_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from rag_core.agent import ask
    from rag_core.config import RAGConfig, Settings, get_settings
    from rag_core.llm import LLMClient
    from rag_core.retrieval.retriever import Retriever

    qa = load_fastapi(limit)
    config = RAGConfig()
    index = open_built(get_settings(), config, f"{qa.name}-ours", qa.docs)
    run_config = config.model_copy(update={"agent": config.agent.model_copy(update={"context_budget": budget})})
    retriever = Retriever(index, config.retrieval, get_settings())
    counts: dict[str, list[int]] = {kind: [0, 0] for kind in ("supported", *INVENTED)}  # [good, total]
    missed_gold = not_found = 0
    misses: list[str] = []
    started = time.perf_counter()
    with ReplayServer() as server:
        settings = Settings(llm_base_url=server.base_url, llm_model="smollm2", llm_api_key="k", llm_max_retries=0,
                            llm_max_tokens_answer=120, llm_context_tokens=8192)
        client = LLMClient(settings)
        for turn, item in enumerate(qa.items):
            server.spans, server.turn = [s for place in item.places for s in place], turn
            for kind in ("supported", *INVENTED):
                server.kind = kind
                result = ask(item.question, index, run_config, settings, policy="llm-answer", retriever=retriever,
                             llm=client)
                shown = not result.extractive and not result.fallback and result.found
                if kind == "supported":
                    sent = documents_of(server.requests[-1]["json"]) if server.requests else {}
                    if not result.found:
                        not_found += 1
                        continue
                    if gold_sentence(server.spans, sent) is None:
                        missed_gold += 1
                        continue
                    good = shown and result.grounded
                else:
                    good = not (shown and result.grounded)
                counts[kind][0] += good
                counts[kind][1] += 1
                if not good:
                    misses.append(f"{item.id} {kind}: {result.grounding}")
                    if verbose:
                        print(f"  {item.id} {kind}: {result.answer[:160]!r} → {result.grounding}", flush=True)
    offline = {"grounded": 0, "quoting_gold": 0, "quoting_gold_grounded": 0, "uncovered": 0}
    for item in qa.items:
        result = ask(item.question, index, run_config, get_settings(), policy="offline", retriever=retriever)
        quotes_gold = item.found(result.answer) > 0
        offline["grounded"] += result.grounded
        offline["quoting_gold"] += quotes_gold
        offline["quoting_gold_grounded"] += quotes_gold and result.grounded
        offline["uncovered"] += not any(part["covered"] for part in result.parts)
    return {"counts": counts, "missed_gold": missed_gold, "not_found": not_found, "misses": misses,
            "questions": len(qa.items), "seconds": time.perf_counter() - started, "budget": budget,
            "offline": offline}


def report(outcome: dict[str, Any]) -> str:
    counts = outcome["counts"]
    caught = sum(counts[k][0] for k in INVENTED)
    invented = sum(counts[k][1] for k in INVENTED)
    kept, supported = counts["supported"]
    lines = [
        f"`python -m bench grounding` — {outcome['questions']} FastAPI docs questions, `llm-answer` policy, context "
        f"budget {outcome['budget']} tokens, against a fake server replaying **synthetic** small-model-style "
        "replies (modelled on the failures recorded with SmolLM2-135M through llama-server in issue 29; not recorded "
        f"from a real server). {outcome['seconds']:.0f} s on 2 cores.",
        "",
        "| reply | share as wanted | count |",
        "| --- | ---: | ---: |",
        f"| **supported, kept** (grounded, the model's answer shown) | {kept / max(supported, 1):.1%} | "
        f"{kept} of {supported} |",
        f"| **invented, caught** (not grounded, or the model's answer not used) | {caught / max(invented, 1):.1%} | "
        f"{caught} of {invented} |",
    ]
    lines += [f"| invented: {kind} | {counts[kind][0] / max(counts[kind][1], 1):.1%} | {counts[kind][0]} of "
              f"{counts[kind][1]} |" for kind in INVENTED]
    lines += ["", f"Questions without a supported reply (the gold evidence was not among the documents sent): "
              f"{outcome['missed_gold']}; answered \"not found\": {outcome['not_found']}."]
    offline = outcome["offline"]
    lines += ["", f"Offline policy, same questions: {offline['grounded']} of {outcome['questions']} extractive answers "
              f"grounded; {offline['uncovered']} with no part of the question covered; of the "
              f"{offline['quoting_gold']} that quote a gold span, {offline['quoting_gold_grounded']} grounded."]
    if outcome["misses"]:
        lines += ["", "Not as wanted (first 10):", ""] + [f"- {m}" for m in outcome["misses"][:10]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench grounding", description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions (0: all 80)")
    parser.add_argument("--budget", type=int, default=1500, help="the agent's context budget in tokens")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--no-publish", action="store_true", help="print only; leave bench/results alone")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    text = report(run(args.limit, args.budget, args.data_dir, args.verbose))
    print(text)
    if not args.no_publish:
        publish("grounding", "# Grounding check: invented answers caught, supported answers kept\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
