"""Draft an evaluation question set from the loaded documents: questions with verbatim evidence spans.

Three kinds, in the evidence-span format the bench and the Evaluate page read (``questions.parse_jsonl``):

- ``single``: one place — a definition ("X is …"), an identifier in code, a table row, a numbered procedure, a list
  item or a plain sentence of one section;
- ``multi-part``: two places, in different documents where possible, that share an identifier or a rare term;
- ``null``: a question about a plausible name that no document contains (checked), with empty evidence.

Offline, the question text comes from templates filled with the section's heading words and identifiers: such
questions lean on keywords (they name what the evidence names) and say so in ``DraftResult.label``. With an LLM
(``rag_core.evaluation.draft_llm``) the model writes the single-place questions from a sampled section, and every
span it cites is checked to be verbatim there. Bounded by ``n`` and a time budget, deterministic for a seed, with
near-duplicate questions dropped.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.evaluation.draft_llm import LLM_CHECKS, LLM_LABEL, LLMWriter
from rag_core.evaluation.draft_text import (
    Section,
    Span,
    code_names,
    definition_subject,
    identifiers,
    keywords,
    normalize_ws,
    plain,
    sections,
    topic_of_file,
)
from rag_core.evaluation.questions import NULL_TYPE, Question, QuestionSet
from rag_core.types import Document, Progress

KINDS = ("single", "multi-part", NULL_TYPE)
STYLES = ("verbatim", "area")  # how offline single-place questions are worded (_single, _single_area)
MAX_DRAFT = 500
DUPLICATE_OVERLAP = 0.75  # word-set Jaccard at or above which a question is a near-duplicate of one kept
OFFLINE_LABEL = ("offline draft: keyword-leaning questions filled into templates from the documents' headings, "
                 "identifiers, table rows and lists (they name what the evidence names, so keyword search finds "
                 "them more easily than real users' questions)")
AREA_LABEL = ("offline draft, user wording: questions filled into templates from the documents' headings (what a "
              "section is for) and words of the page around the passage, not the passage's own terms (closer to how "
              "users ask; multi-part and unanswerable questions still name a shared or invented term)")
OFFLINE_CHECKS = (
    "every span is a slice of its document and is checked again to occur verbatim in it (whitespace collapsed)",
    "spans that also occur in another document are not used (the gold points to exactly one file)",
    "a question does not contain its section's heading word for word (headings of 3+ words)",
    f"near-duplicate questions (word overlap ≥ {DUPLICATE_OVERLAP}) are dropped",
    "an unanswerable question's name is checked to occur in no document",
)
_NULL_SUFFIXES = ("_timeout", "_policy", "_retries", "_strategy", "_limit", "_mode", "_v2", "_backend")
_CAMEL_SUFFIXES = ("Manager", "Policy", "Registry", "Gateway", "Provider", "Scheduler")
_NAME_BASE = re.compile(r"[a-z][a-z0-9]{2,}(?:_[a-z0-9]+)*|[A-Z][a-z]+(?:[A-Z][a-z]+)+")
_COMMON_CODE = frozenset(
    "none true false self def class async await yield return import from with lambda print str int float bool "
    "dict list tuple set bytes object type app name value data item items user users request response file "
    "path main test".split())
_NULL_NAMES = ("Sync Gateway", "Autoscaler", "Vault Bridge", "Replay Cache", "Batch Planner")


@dataclass(slots=True)
class DraftResult:
    """Drafted questions and how they were made: method, label, the checks applied, what was rejected and why."""

    questions: list[Question]
    method: str  # offline | llm
    label: str
    checks: list[str]
    rejected: list[dict[str, str]] = field(default_factory=list)
    prompt: str = ""
    documents: int = 0
    sections: int = 0
    elapsed_s: float = 0.0
    stopped: str = ""  # "" (n reached or nothing more to draft), "time budget" or "cancelled"
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(Counter(q.type or "single" for q in self.questions))

    def question_set(self, name: str = "drafted") -> QuestionSet:
        return QuestionSet(name=name, kind="drafted", questions=list(self.questions), source=self.label)

    def summary(self) -> dict[str, Any]:
        return {"method": self.method, "label": self.label, "questions": len(self.questions), "kinds": self.counts(),
                "documents": self.documents, "sections": self.sections, "rejected": len(self.rejected),
                "elapsed_s": round(self.elapsed_s, 2), "stopped": self.stopped, "checks": self.checks,
                "notes": self.notes}


def drafted_style(source: str) -> str:
    """The offline style a question set was drafted in, told by its ``source`` (the draft's label): ``area`` or
    ``verbatim`` (also for an LLM's or any other set: the figure it is compared with is the verbatim one)."""
    return "area" if source == AREA_LABEL else "verbatim"


def question_record(question: Question) -> dict[str, Any]:
    """One question as a JSONL record of the evidence-span format (what ``parse_jsonl`` reads back)."""
    record: dict[str, Any] = {"id": question.id, "question": question.question}
    if question.intent:
        record["intent"] = question.intent
    if question.type:
        record["type"] = question.type
    record["answer"] = question.reference_answer
    record["evidence"] = question.evidence
    return record


def to_jsonl(questions: Sequence[Question]) -> str:
    return "".join(json.dumps(question_record(q), ensure_ascii=False) + "\n" for q in questions)


def check_spans(questions: Sequence[Question], documents: Sequence[Document]) -> list[str]:
    """Problems with the questions' evidence: a file that is no document, a span not verbatim in its file (after
    collapsing whitespace on both sides, the datasets' rule). Empty when every span holds."""
    texts = {doc.name: normalize_ws(doc.text) for doc in documents}
    problems = []
    for question in questions:
        for place in question.evidence:
            text = texts.get(place.get("file") or "")
            if text is None:
                problems.append(f"{question.id}: no document named {place.get('file')!r}")
                continue
            problems += [f"{question.id}: span not verbatim in {place['file']}: {span[:60]!r}"
                         for span in place["spans"] if normalize_ws(span) not in text]
    return problems


class _Corpus:
    """The documents cut into sections, with what the templates need: word and identifier spread."""

    def __init__(self, documents: Sequence[Document]):
        self.documents = list(documents)
        self.sections: list[Section] = []
        for position, doc in enumerate(self.documents):
            self.sections += sections(position, doc.name, doc.text)
        self.positions = {doc.name: i for i, doc in enumerate(self.documents)}
        self._normalised = [normalize_ws(doc.text) for doc in self.documents]
        self._folded = [doc.text.casefold() for doc in self.documents]
        self.word_df: Counter[str] = Counter()
        self.ident_docs: dict[str, set[int]] = defaultdict(set)
        for section in self.sections:
            words: set[str] = set()
            for span in section.spans:
                words.update(keywords(span.text))
                for ident in identifiers(span.text):
                    self.ident_docs[ident].add(section.doc_index)
            self.word_df.update(words)

    def unique_to(self, span: str, doc_index: int) -> bool:
        """True when ``span`` (whitespace collapsed) occurs in no document but ``doc_index``."""
        needle = normalize_ws(span)
        return all(needle not in text for i, text in enumerate(self._normalised) if i != doc_index)

    def verbatim(self, span: str, doc_index: int) -> bool:
        return normalize_ws(span) in self._normalised[doc_index]

    def absent(self, name: str) -> bool:
        folded = name.casefold()
        return all(folded not in text for text in self._folded)

    def salient(self, text: str, avoid: set[str], count: int = 2, section: Section | None = None) -> list[str]:
        """The content words of ``text`` that best mark it: frequent in its section (when given), rare across
        sections (tf-idf); not in ``avoid``."""
        words = [w for w in keywords(text) if w not in avoid and not w.isdigit()]
        counts: Counter[str] = Counter()
        if section is not None:
            for span in section.spans:
                counts.update(keywords(span.text))
        total = max(1, len(self.sections))

        def weight(word: str) -> float:
            return (1 + counts.get(word, 0)) * math.log(1 + total / (1 + self.word_df.get(word, 0)))

        return sorted(words, key=lambda w: (-weight(w), words.index(w)))[:count]


def _topic(corpus: _Corpus, section: Section) -> str:
    """The section's heading as a short lower-cased phrase: for headings of 3+ words, at most 3 of its content words
    (the most common dropped first), never the whole heading word for word; the document's topic for a heading of
    stop words only."""
    title = section.title
    kept = keywords(title)
    if not kept:
        return _doc_topic(corpus, section)
    if len(title.split()) < 3:
        return title if any(c.isupper() for c in title[1:]) else title.lower()
    while len(kept) > 1 and (len(kept) > 3 or " ".join(kept) == normalize_ws(plain(title)).lower()):
        kept.remove(max(kept, key=lambda w: (corpus.word_df.get(w, 0), -kept.index(w))))
    return " ".join(kept)


def _doc_topic(corpus: _Corpus, section: Section) -> str:
    doc = corpus.documents[section.doc_index]
    first = plain(section.heading_path[0]) if section.heading_path else ""
    return (first or topic_of_file(doc.name)).lower()


def _distinctive(ident: str) -> bool:
    """An identifier worth a question of its own: 4+ characters, not a keyword, builtin or everyday name."""
    bare = ident.rstrip("()").split(".")[-1]
    return len(bare) >= 4 and bare.lower() not in _COMMON_CODE


def _words(text: str) -> set[str]:
    return {w.lower() for w in normalize_ws(plain(text)).replace("?", " ").split() if len(w) > 2}


def _near_duplicate(question: str, kept: Sequence[set[str]]) -> bool:
    words = _words(question)
    return any(len(words & other) / max(1, len(words | other)) >= DUPLICATE_OVERLAP for other in kept)


def _repeats_heading(question: str, section: Section) -> bool:
    title = section.title
    return len(title.split()) >= 3 and normalize_ws(title).casefold() in normalize_ws(plain(question)).casefold()


def _neighbour(section: Section, span: Span) -> Span | None:
    """The next span of the same kind in the section, if any."""
    spans = [s for s in section.spans if s.kind == span.kind]
    at = spans.index(span)
    return spans[at + 1] if at + 1 < len(spans) else None


def _single(corpus: _Corpus, section: Section, span: Span, rng: random.Random) -> tuple[str, str]:
    """(question, intent) for one span by the templates of its kind."""
    topic, doc_topic = _topic(corpus, section), _doc_topic(corpus, section)
    avoid = set(keywords(section.title))
    salient = corpus.salient(span.text, avoid, 2, section) or keywords(span.text)[:2] or [topic]
    about = " and ".join(salient)
    idents = [i for i in identifiers(span.text) if _distinctive(i)]
    if span.kind == "code":
        names = [c for c in code_names(span.text) if _distinctive(c)]
        names.sort(key=lambda c: corpus.word_df.get(c.lower(), 0))
        name = f"`{names[0]}`" if names else salient[0]
        return rng.choice([
            f"What does the code for {topic} look like when it involves {name}?",
            f"Can you show an example line with {name} for {topic}?",
        ]), "code"
    if span.kind == "row":
        cells = [plain(c) for c in span.text.strip("|").split("|")]
        header = [plain(c).lower() for c in span.context.strip("|").split("|")]
        detail = header[1] if len(header) > 1 and header[1] else "details"
        return rng.choice([
            f"In the table of {doc_topic}, what {detail} is given for {cells[0]}?",
            f"What is listed about {cells[0]} ({detail}) in the table on {topic}?",
        ]), "data"
    if span.kind == "step":
        return rng.choice([
            f"What steps do I follow for {topic}, especially around {about}?",
            f"How do I go about {topic} step by step ({about})?",
        ]), "procedure"
    subject = definition_subject(span.text) if span.kind == "sentence" else None
    if subject:
        return rng.choice([
            f"What exactly is {subject} when working with {doc_topic}?",
            f"Could you explain what {subject} means in the context of {topic}?",
        ]), "fact"
    if idents:
        return rng.choice([
            f"What is `{idents[0]}` for when dealing with {topic}?",
            f"How does `{idents[0]}` come into play for {topic}?",
        ]), "fact"
    # Two words of the evidence besides the topic: measured (bench drafted), questions naming only the topic or one
    # word ranked configurations less like the human-written set (τ 0.34 against 0.67).
    return rng.choice([
        f"What do the {doc_topic} docs say about {about} for {topic}?",
        f"How does {topic} relate to {about}?",
        f"I'm reading about {doc_topic}: what is said about {about}?",
    ]), "procedure" if span.kind == "item" and rng.random() < 0.3 else "fact"


def _single_area(corpus: _Corpus, section: Section, span: Span, rng: random.Random) -> tuple[str, str]:
    """(question, intent) for one span worded as a user asks before reading the answer: what the section is for, from
    its heading, with words of the page around it (its other sections), never the passage's own words.

    Why: a user knows the area they came from (the page, its subject) but has not read the passage that answers them,
    and names what they want in their own words (two people pick the same word for a thing under a fifth of the time:
    Furnas et al., "The vocabulary problem", 1987); the known-item query simulations of Azzopardi, de Rijke and Balog
    (SIGIR 2007) likewise draw part of a query's terms from outside the target. Identifiers are kept only when more
    than one document uses them (a name readers meet across the docs, not one seen only in the answer); a table row
    keeps the verbatim templates (it is asked about by its entry, which the user knows). Measured in
    docs/BENCHMARKS.md ("Drafting in the user's words").
    """
    if span.kind == "row":
        return _single(corpus, section, span, rng)
    topic, doc_topic = _topic(corpus, section), _doc_topic(corpus, section)
    parent = plain(section.heading_path[-2]).lower() if len(section.heading_path) > 1 else doc_topic
    page = " ".join(s.text for other in corpus.sections
                    if other.doc_index == section.doc_index and other is not section for s in other.spans)
    about = " and ".join(corpus.salient(page, set(keywords(section.title)) | set(keywords(span.text)), 2)) or parent
    known = [i for i in identifiers(span.text) if _distinctive(i) and len(corpus.ident_docs.get(i, ())) > 1]
    if span.kind == "code":
        return rng.choice([
            f"How do I write the code for {topic} with {about}?",
            f"Is there an example of {topic} in code, using {about}?",
        ]), "code"
    if span.kind == "step":
        return rng.choice([
            f"How do I set up {topic}? I mean the steps with {about}.",
            f"What are the steps for {topic} in {parent}?",
        ]), "procedure"
    if known:
        return rng.choice([
            f"How should I use `{known[0]}` for {topic}?",
            f"When do I need `{known[0]}` with {topic}?",
        ]), "fact"
    return rng.choice([
        f"What is {topic} for, and how does it work with {about}?",
        f"Why would I need {topic} when working on {parent}, e.g. for {about}?",
        f"How do I deal with {about} in {topic}?",
    ]), "procedure" if span.kind == "item" and rng.random() < 0.3 else "fact"


def _place(section: Section, spans: Sequence[Span]) -> dict[str, Any]:
    return {"file": section.file, "heading_path": list(section.heading_path), "spans": [s.text for s in spans]}


_KIND_ORDER = ("sentence", "code", "row", "step", "item")


def _pick_span(corpus: _Corpus, section: Section, used: set[str], rng: random.Random,
               rejected: list[dict[str, str]]) -> Span | None:
    """A span of the section not used yet and found in no other document; kinds other than plain sentences first
    half the time (they make the varied intents)."""
    spans = [s for s in section.spans if s.text not in used]
    rng.shuffle(spans)
    spans.sort(key=lambda s: len(s.text) < 60)  # short sentences say little on their own: longer ones first
    if rng.random() < 0.5:
        spans.sort(key=lambda s: _KIND_ORDER.index(s.kind) if s.kind != "sentence" else len(_KIND_ORDER))
    for span in spans[:6]:
        if corpus.unique_to(span.text, section.doc_index):
            return span
        rejected.append({"reason": "span also in another document", "detail": f"{section.file}: {span.text[:80]}"})
        used.add(span.text)
    return None


class _Drafter:
    """Shared state of one drafting run: the corpus, the seed's random order, what is kept and what is rejected."""

    def __init__(self, documents: Sequence[Document], n: int, seed: int, time_budget_s: float,
                 progress: Progress | None, cancel: Callable[[], bool] | None, style: str = "verbatim"):
        if style not in STYLES:
            raise ValueError(f"unknown drafting style {style!r}; choose from {', '.join(STYLES)}")
        if not documents:
            raise ValueError("no documents to draft questions from: load or ingest some first")
        if not 1 <= n <= MAX_DRAFT:
            raise ValueError(f"n must be between 1 and {MAX_DRAFT} (got {n})")
        if time_budget_s <= 0:
            raise ValueError(f"the time budget must be positive (got {time_budget_s})")
        self.started = time.monotonic()
        self.deadline = self.started + time_budget_s
        self.n, self.rng = n, random.Random(seed)
        self.write_single = _single_area if style == "area" else _single
        self.progress, self.cancel = progress, cancel
        self.corpus = _Corpus(documents)
        self.questions: list[Question] = []
        self.rejected: list[dict[str, str]] = []
        self.kept_words: list[set[str]] = []
        self.used: set[str] = set()
        self.stopped = ""

    def out_of_time(self) -> bool:
        if self.stopped:
            return True
        if self.cancel is not None and self.cancel():
            self.stopped = "cancelled"
        elif time.monotonic() > self.deadline:
            self.stopped = "time budget"
        return bool(self.stopped)

    def keep(self, question: Question, section: Section | None = None) -> bool:
        """Add ``question`` unless it is a near-duplicate, repeats its heading or a span fails the verbatim check."""
        if section is not None and _repeats_heading(question.question, section):
            self.rejected.append({"reason": "repeats the heading", "detail": question.question})
            return False
        if _near_duplicate(question.question, self.kept_words):
            self.rejected.append({"reason": "near-duplicate", "detail": question.question})
            return False
        files = self.corpus.positions
        for place in question.evidence:
            bad = [s for s in place["spans"] if not self.corpus.verbatim(s, files.get(place["file"], -1))]
            if bad or place["file"] not in files:
                self.rejected.append({"reason": "span not verbatim in its document", "detail": (bad or ["?"])[0][:80]})
                return False
        question.id = f"d{len(self.questions) + 1:03d}"
        self.questions.append(question)
        self.kept_words.append(_words(question.question))
        for place in question.evidence:
            self.used.update(place["spans"])
        if self.progress is not None:
            self.progress(len(self.questions), self.n, f"{question.type or 'single'}: {question.question[:70]}")
        return True

    def section_order(self) -> list[Section]:
        """Sections in a seeded order that takes one section from each document in turn."""
        by_doc: dict[int, list[Section]] = defaultdict(list)
        for section in self.corpus.sections:
            by_doc[section.doc_index].append(section)
        for group in by_doc.values():
            self.rng.shuffle(group)
        docs = list(by_doc)
        self.rng.shuffle(docs)
        order = []
        for depth in range(max((len(g) for g in by_doc.values()), default=0)):
            order += [by_doc[d][depth] for d in docs if depth < len(by_doc[d])]
        # Text under no heading (a page's lead, a banner file without headings) last: its evidence cannot be
        # found by heading when reviewing, and evidence-span sets such as the FastAPI one require a heading path.
        return sorted(order, key=lambda section: not section.heading_path)

    def singles(self, wanted: int, write: Callable[[Section, Span], Question | None] | None = None) -> None:
        """Up to ``wanted`` single-place questions; ``write`` (the LLM writer) may replace the templates."""
        goal = len(self.questions) + wanted
        order = self.section_order()
        for _ in range(3):  # more passes over the sections (one span each) while the corpus is short of questions
            for section in order:
                if len(self.questions) >= goal or self.out_of_time():
                    return
                span = _pick_span(self.corpus, section, self.used, self.rng, self.rejected)
                if span is None:
                    continue
                question = write(section, span) if write is not None else self.template_question(section, span)
                if question is not None:
                    self.keep(question, section)

    def template_question(self, section: Section, span: Span) -> Question:
        text, intent = self.write_single(self.corpus, section, span, self.rng)
        spans = [span]
        extra = _neighbour(section, span)  # a second verbatim span of the place (one of them must be found)
        if extra is not None and extra.text not in self.used and self.corpus.unique_to(extra.text, section.doc_index):
            spans.append(extra)
        answer = span.text if intent != "code" else f"```\n{span.text}\n```"
        return Question(id="", question=text, intent=intent, evidence=[_place(section, spans)],
                        reference_answer=answer, type="single")

    def multi_parts(self, wanted: int) -> None:
        """Two places sharing an identifier (else a rare word), in two documents where the corpus has several."""
        goal = len(self.questions) + wanted
        corpus = self.corpus
        shared = sorted(ident for ident, docs in corpus.ident_docs.items()
                        if 2 <= len(docs) <= 4 and _distinctive(ident))
        by_term: dict[str, list[tuple[Section, Span]]] = defaultdict(list)
        if shared:
            wanted_terms = set(shared)
            for section in corpus.sections:
                for span in section.spans:
                    if span.kind in ("sentence", "item", "step"):
                        for ident in identifiers(span.text):
                            if ident in wanted_terms:
                                by_term[f"`{ident}`"].append((section, span))
        if len(by_term) < wanted:  # prose documents: rare words shared by a few sections
            spread = max(2, min(6, len(corpus.sections) // 10))
            for section in corpus.sections:
                for span in section.spans:
                    if span.kind == "sentence":
                        for word in corpus.salient(span.text, set(), 3):
                            if 2 <= corpus.word_df[word] <= spread:
                                by_term[word].append((section, span))
        terms = sorted(by_term)
        self.rng.shuffle(terms)
        for term in terms:
            if len(self.questions) >= goal or self.out_of_time():
                return
            places = by_term[term]
            self.rng.shuffle(places)
            first = next((p for p in places if p[1].text not in self.used
                          and corpus.unique_to(p[1].text, p[0].doc_index)), None)
            if first is None:
                continue
            others = [p for p in places if p[1].text not in self.used and p[0] is not first[0]
                      and corpus.unique_to(p[1].text, p[0].doc_index)]
            others.sort(key=lambda p: p[0].doc_index == first[0].doc_index)  # another document first
            if not others:
                continue
            second = others[0]
            (a, span_a), (b, span_b) = first, second
            topic_a, topic_b = _topic(corpus, a), _topic(corpus, b)
            if topic_a == topic_b:
                topic_a, topic_b = _doc_topic(corpus, a), _doc_topic(corpus, b)
            text = self.rng.choice([
                f"How is {term} used for {topic_a}, and what changes for {topic_b}?",
                f"What do I need to know about {term} both in {topic_a} and in {topic_b}?",
                f"Compare the role of {term} in {topic_a} with its role in {topic_b}.",
            ])
            question = Question(id="", question=text, intent="multi", type="multi-part",
                                evidence=[_place(a, [span_a]), _place(b, [span_b])],
                                reference_answer=f"{span_a.text} / {span_b.text}")
            self.keep(question)

    def nulls(self, wanted: int) -> None:
        """Questions about a plausible name that occurs in no document (checked)."""
        goal = len(self.questions) + wanted
        corpus = self.corpus
        idents = sorted(i for i in corpus.ident_docs if _NAME_BASE.fullmatch(i.rstrip("()").split(".")[-1]))
        self.rng.shuffle(idents)
        order = self.section_order()
        for attempt in range(wanted * 20):
            if len(self.questions) >= goal or self.out_of_time() or not order:
                return
            section = order[attempt % len(order)]
            topic = _topic(corpus, section)
            if idents:
                base = idents[attempt % len(idents)].rstrip("()").split(".")[-1]
                if not _NAME_BASE.fullmatch(base) or not _distinctive(base):
                    continue
                if base[:1].isupper():
                    name = f"`{base}{self.rng.choice(_CAMEL_SUFFIXES)}`"
                else:
                    name = f"`{base.lower()}{self.rng.choice(_NULL_SUFFIXES)}`"
            else:
                words = corpus.salient(" ".join(s.text for s in section.spans[:5]), set(), 1) or ["project"]
                name = f"the {words[0].title()} {self.rng.choice(_NULL_NAMES)}"
            if not corpus.absent(name.strip("`")):
                self.rejected.append({"reason": "name occurs in a document", "detail": name})
                continue
            text = self.rng.choice([
                f"How do I configure {name} for {topic}?",
                f"What is the default value of {name} when working with {topic}?",
                f"Which version introduced {name}, and how does it affect {topic}?",
            ])
            self.keep(Question(id="", question=text, type=NULL_TYPE, evidence=[],
                               reference_answer="Not answered by the documents."))

    def result(self, method: str, label: str, checks: Sequence[str], prompt: str = "",
               notes: Sequence[str] = ()) -> DraftResult:
        return DraftResult(questions=self.questions, method=method, label=label, checks=list(checks),
                           rejected=self.rejected, prompt=prompt, documents=len(self.corpus.documents),
                           sections=len(self.corpus.sections), elapsed_s=time.monotonic() - self.started,
                           stopped=self.stopped, notes=list(notes))


def kind_counts(n: int, kinds: Sequence[str] = KINDS) -> dict[str, int]:
    """How many of each kind for ``n`` questions: about 20 % multi-part and 10 % unanswerable, the rest single."""
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        raise ValueError(f"unknown question kind(s) {unknown}; choose from {', '.join(KINDS)}")
    multi = math.floor(n * 0.2 + 0.5) if "multi-part" in kinds else 0
    null = math.floor(n * 0.1 + 0.5) if NULL_TYPE in kinds else 0
    if "single" not in kinds:
        if multi and null:
            multi = n - null
        else:
            multi, null = (n, 0) if multi else (0, n)
    return {"single": n - multi - null, "multi-part": multi, NULL_TYPE: null}


def draft_questions(documents: Sequence[Document], n: int = 50, *, seed: int = 0, time_budget_s: float = 60.0,
                    kinds: Sequence[str] = KINDS, llm=None, style: str = "verbatim",
                    progress: Progress | None = None,
                    cancel: Callable[[], bool] | None = None) -> DraftResult:
    """Draft up to ``n`` questions from ``documents`` (see the module docstring); with ``llm`` (an ``LLMClient``)
    the model writes the single-place questions. Stops at ``time_budget_s`` or when ``cancel()`` is true, keeping
    what it drafted (``DraftResult.stopped`` says so). ``style`` words the offline single-place questions:
    ``verbatim`` (the passage's rarest terms) or ``area`` (the section's purpose in the page's words)."""
    drafter = _Drafter(documents, n, seed, time_budget_s, progress, cancel, style)
    wanted = kind_counts(n, kinds)
    label = AREA_LABEL if style == "area" else OFFLINE_LABEL
    prompt, notes, checks, method = "", [], list(OFFLINE_CHECKS), "offline"
    # Multi-part pairs first: they need spans that single-place questions would otherwise take.
    drafter.multi_parts(wanted["multi-part"])
    drafter.nulls(wanted[NULL_TYPE])
    singles = n - len(drafter.questions) if "single" in kinds else 0  # too few pairs or names: singles fill
    if llm is not None and singles:
        writer = LLMWriter(llm, drafter)
        drafter.singles(singles, writer.write)
        prompt, notes, method, label = writer.prompt, writer.notes, "llm", LLM_LABEL
        checks = [*LLM_CHECKS, *OFFLINE_CHECKS[3:]]
        if writer.gave_up:  # the server failed repeatedly: the templates fill the rest
            drafter.singles(n - len(drafter.questions))
    else:
        drafter.singles(singles)
    return drafter.result(method, label, checks, prompt, notes)
