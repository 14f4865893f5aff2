"""``python -m rag_core eval draft --collection NAME``: draft a question set with verbatim evidence spans from the
documents of a collection (offline templates, or the configured LLM with ``--llm``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_core.evaluation.draft import KINDS, MAX_DRAFT, STYLES
from rag_core.services import collection_documents


def register_draft(kinds) -> None:
    """Add ``draft`` to the ``eval`` sub-commands (``kinds``)."""
    draft = kinds.add_parser("draft", help="draft questions with verbatim evidence spans from a collection's documents")
    draft.add_argument("--collection", required=True, help="collection (index) whose documents to draft from")
    draft.add_argument("--n", type=int, default=50, help=f"number of questions (1-{MAX_DRAFT}, default 50)")
    draft.add_argument("--seed", type=int, default=0, help="random seed: the same seed drafts the same set")
    draft.add_argument("--time-budget", type=float, default=60.0, help="stop after this many seconds (default 60)")
    draft.add_argument("--kind", action="append", choices=KINDS,
                       help="question kind to draft; repeat for several (default: all three)")
    draft.add_argument("--style", choices=STYLES, default="verbatim", help="offline wording: verbatim (the "
                       "passage's rare terms, default) or area (the section's purpose in the page's words)")
    draft.add_argument("--llm", action="store_true", help="let the configured LLM (RAG_LLM_*) write the "
                       "single-place questions; spans it cites are checked verbatim")
    draft.add_argument("--json-lines", action="store_true", help="print one question per line (JSONL, the "
                       "evidence-span format `eval questions` reads)")
    draft.add_argument("--out", help="also write the questions to this JSONL file")
    draft.set_defaults(func=_draft)


def _draft(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json
    from rag_core.config import get_settings
    from rag_core.evaluation.draft import draft_questions, question_record, to_jsonl
    from rag_core.services import open_llm

    settings = get_settings()
    documents = collection_documents(args.collection, settings)
    llm = open_llm(settings, required=True) if args.llm else None

    def progress(done: int, total: int, label: str = "") -> None:
        if done == total or done % 10 == 0:
            print(f"{done}/{total} drafted", file=sys.stderr, flush=True)

    result = draft_questions(documents, args.n, seed=args.seed, time_budget_s=args.time_budget,
                             kinds=args.kind or KINDS, llm=llm, style=args.style,
                             progress=progress)
    if args.out:
        Path(args.out).write_text(to_jsonl(result.questions), encoding="utf-8")
    summary = result.summary()
    print(f"{summary['questions']} questions ({', '.join(f'{k} {v}' for k, v in summary['kinds'].items())}) from "
          f"{summary['documents']} documents in {summary['elapsed_s']} s; {summary['rejected']} candidates rejected"
          f"{'; stopped: ' + result.stopped if result.stopped else ''}. {result.label}", file=sys.stderr)
    for note in result.notes:
        print(f"warning: {note}", file=sys.stderr)
    if args.json_lines:
        for question in result.questions:
            print_json(question_record(question))
    else:
        for question in result.questions:
            places = "; ".join(f"{p['file']} › {' › '.join(p['heading_path'])}" for p in question.evidence)
            print(f"{question.id} [{question.type}] {question.question}\n    {places or '(not in the documents)'}")
    return 0
