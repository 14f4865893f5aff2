"""The guided demo's question for "one-shot RAG versus the agent", chosen by asking both every question of a set.

Nothing is hard-coded: each question goes to one-shot search (``RetrievalConfig.one_shot()``: top-5 hybrid, one
pass, the baseline the Agent Playground shows beside the agent, answered by the same extractive answerer) and to
the agent with the offline policy, and the question is chosen by what each side's *answer* quotes, what a person
reads (not only by what the contexts hold): first choice, the agent's answer quotes answer targets the one-shot
answer does not; without one, the best tie is kept and says so (``Showcase.agent_wins``). The reason names what
each answer quotes, built from the real answers. Asking both every question takes a while (about 20 s for the 60
golden questions with MiniLM), so the choice runs as a background job, queued when an ingest job has changed the
documents (``prepare_after_ingest``; opening Home starts nothing), and is kept in
``data_dir/evaluations/showcase.json`` per index contents, configuration and choosing rule."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rag_core.agent import ask
from rag_core.agent.answer import EXTRACTIVE_NOTE, extractive_answer
from rag_core.config import RAGConfig, RetrievalConfig, Settings
from rag_core.evaluation.questions import (
    Question,
    QuestionSet,
    answer_matches,
    chunk_matches,
    load_golden,
    normalise,
)
from rag_core.files import atomic_write_text
from rag_core.retrieval import Retriever
from rag_core.serving.jobs import Cancelled, JobRunner, JobStatus, TaskHandle
from rag_core.types import Chunk, Hit, Progress

log = logging.getLogger(__name__)

ONE_SHOT_K = RetrievalConfig().one_shot().initial_k
SEARCH_TOOLS = ("search",)
LOOK_TOOLS = ("zoom_in", "zoom_out", "read_section")


@dataclass(slots=True)
class Quote:
    """One quoted piece of an answer: the place it is cited from and its text (the lines before its citation)."""

    place: str
    text: str


@dataclass(slots=True)
class Comparison:
    """What one-shot search and the agent found for one question, and what each side's *answer* quotes."""

    question: Question
    targets: list[str]
    one_shot_found: set[str]
    agent_found: set[str]
    agent_where: dict[str, str]  # target → "document › heading" of the agent's chunk that holds it
    searches: list[str] = field(default_factory=list)  # the agent's search queries, in order
    looks: int = 0  # zooms and section reads
    one_shot_quoted: set[str] = field(default_factory=set)  # targets the one-shot answer itself quotes
    agent_quoted: set[str] = field(default_factory=set)  # targets the agent's answer itself quotes
    one_shot_says: list[Quote] = field(default_factory=list)  # the one-shot answer's quotes, in its order
    agent_says: list[Quote] = field(default_factory=list)

    @property
    def gained(self) -> list[str]:
        return [t for t in self.targets if t in self.agent_found and t not in self.one_shot_found]

    @property
    def answer_gained(self) -> list[str]:
        """Targets the agent's answer quotes and the one-shot answer does not: what a person reads differently."""
        return [t for t in self.targets if t in self.agent_quoted and t not in self.one_shot_quoted]

    @property
    def answer_lost(self) -> list[str]:
        return [t for t in self.targets if t in self.one_shot_quoted and t not in self.agent_quoted]

    def rank(self) -> tuple:
        """Larger is a better showcase: more targets only the agent's answer quotes (and fewer only one-shot's
        does), then more targets only the agent's context holds, the agent's answer (then context) complete,
        more steps."""
        targets = set(self.targets)
        return (len(self.answer_gained), -len(self.answer_lost), len(self.gained), targets <= self.agent_quoted,
                targets <= self.agent_found, len(self.searches) + self.looks)


@dataclass(slots=True)
class Showcase:
    question_id: str
    question: str
    why: str
    one_shot_found: int
    agent_found: int
    targets: int
    agent_searches: int
    questions_compared: int
    # False: on no question does the agent's answer quote more than the one-shot answer; this is the best tie.
    agent_wins: bool = True
    agent_quoted: int = 0
    one_shot_quoted: int = 0


def _place(chunk: Chunk, source: str) -> str:
    name = source or chunk.doc_id
    return f"{name} › {chunk.heading_path[-1]}" if chunk.heading_path else name


def _found(question: Question, ranked: Sequence[tuple[Chunk, str]]) -> tuple[set[str], dict[str, str]]:
    found: dict[str, str] = {}
    for chunk, source in ranked:
        for target in chunk_matches(question, chunk, source):
            found.setdefault(target, _place(chunk, source))
    return set(found), found


# A code fence or a table's |---| rule: no words to show. Looser than markdown_blocks.TABLE_DELIMITER_ROW on purpose:
# a line of only pipes, colons, dashes and blanks (an empty row too) has no words either.
_NOT_WORDS = re.compile(r"^(```.*|[|\s:-]+)$")
_CITATION = re.compile(r"\[([^\[\]\s]+)\]")


def quotes_of(answer: str, hits: Sequence[Hit]) -> list[Quote]:
    """An answer cut at its citations (``[chunk id]`` of a chunk in ``hits``): each piece with the place it cites."""
    by_id = {hit.chunk.id: hit for hit in hits}
    quotes, start = [], 0
    for match in _CITATION.finditer(answer):
        hit = by_id.get(match.group(1))
        if hit is None:
            continue
        text = answer[start:match.start()].replace(EXTRACTIVE_NOTE, "").strip()
        start = match.end()
        if text:
            quotes.append(Quote(_place(hit.chunk, hit.source_name), text))
    return quotes


def _answer_side(question: Question, answer: str, citations: Sequence[str],
                 hits: Sequence[Hit]) -> tuple[set[str], list[Quote]]:
    by_id = {hit.chunk.id: hit for hit in hits}
    cited = [(by_id[c].chunk, by_id[c].source_name) for c in citations if c in by_id]
    return set(answer_matches(question, answer, cited)), quotes_of(answer, hits)


def compare(question: Question, index, config: RAGConfig, settings: Settings) -> Comparison:
    """Ask ``question`` with one-shot search and with the offline agent: what each context holds and what each
    answer quotes. The one-shot side is answered by the same public extractive answerer the Agent Playground's
    one-shot column uses, the agent's is its own answer (``ask``), so a new answerer is measured as shown."""
    one_shot = Retriever(index, config.retrieval.one_shot(), settings).retrieve(question.question)
    one_shot_found, _ = _found(question, [(h.chunk, h.source_name) for h in one_shot.hits])
    one_answer = extractive_answer(question.question, one_shot.hits)
    one_quoted, one_says = _answer_side(question, one_answer.text, one_answer.citations, one_shot.hits)
    agent = ask(question.question, index, config, settings, policy="offline")
    agent_found, where = _found(question, [(h.chunk, h.source_name) for h in agent.context_hits])
    agent_quoted, agent_says = _answer_side(question, agent.answer, agent.citations, agent.context_hits)
    searches = [str(s.args.get("query", "")) for s in agent.steps if s.tool in SEARCH_TOOLS and s.ok]
    looks = sum(1 for s in agent.steps if s.tool in LOOK_TOOLS and s.ok)
    return Comparison(question, question.targets(), one_shot_found, agent_found, where, searches, looks,
                      one_quoted, agent_quoted, one_says, agent_says)


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _target_words(question: Question, target: str) -> str:
    """A target in words: the answer text it stands for, or the place it lies."""
    kind, _, number = target.partition(":")
    if kind == "answer":
        return f"“{_short(question.answer_texts[int(number)], 60)}”"
    if kind == "place":
        place = question.evidence[int(number)]
        return " › ".join([place.get("file") or "a document", *place.get("heading_path", [])[-1:]])
    if kind == "section":
        return " › ".join(p for p in (question.doc, question.heading) if p)
    return f"document {target}"


def _searches_words(searches: Sequence[str]) -> str:
    """``3 searches (“a”, “b”)``: the distinct queries (the agent may search one query at two granularities)."""
    distinct = list(dict.fromkeys(" ".join(q.split()) for q in searches))
    quoted = ", ".join(f"“{_short(q, 50)}”" for q in distinct[:3]) + (" …" if len(distinct) > 3 else "")
    return f"{len(searches)} search{'es' if len(searches) != 1 else ''} ({quoted})"


def _holds(question: Question, target: str, text: str) -> bool:
    kind, _, number = target.partition(":")
    if kind == "answer":
        return normalise(question.answer_texts[int(number)]) in normalise(text)
    if kind == "place":
        return any(" ".join(span.split()) in " ".join(text.split()) for span in question.evidence[int(number)]["spans"])
    return False


def _quoting(question: Question, target: str, says: Sequence[Quote]) -> str:
    """Where an answer quotes ``target``, in words: the place and the line of the quote that holds it."""
    for quote in says:
        lines = [line for line in quote.text.splitlines() if _holds(question, target, line)]
        if lines or _holds(question, target, quote.text):
            return f"{quote.place} (“{_short((lines or [quote.text])[0].lstrip('- '), 80)}”)"
    return _target_words(question, target)


def _says_words(says: Sequence[Quote]) -> str:
    """What an answer quotes, in words: its places in order, the first with the start of its quote."""
    if not says:
        return "quotes nothing (it says the documents do not answer)"
    places = list(dict.fromkeys(q.place for q in says))
    first = next(q for q in says if q.place == places[0])
    lines = [line.strip().lstrip("- ") for line in first.text.splitlines()]
    if len(lines) > 2 and lines[0].startswith("|") and _NOT_WORDS.match(lines[1]):
        lines = lines[2:]  # a table: its first row says more than its header
    head = next((line for line in lines if line and not _NOT_WORDS.match(line)), lines[0])
    rest = f" and {', '.join(places[1:3])}" + (" …" if len(places) > 3 else "") if len(places) > 1 else ""
    return f"quotes {places[0]} (“{_short(head, 60)}”){rest}"


def explain(comparison: Comparison) -> str:
    """What each side's answer says for this question, from the real answers, in plain words (the page escapes
    it): why the agent's answer reads better, or, without a win, that both answers quote as much."""
    c, n = comparison, len(comparison.targets)
    steps = _searches_words(c.searches) + (f" and {c.looks} zoom/read step(s)" if c.looks else "")
    one_shot = f"one search's answer (top {ONE_SHOT_K} hybrid) {_says_words(c.one_shot_says)}"
    if c.answer_gained:
        quoted = "; ".join(_quoting(c.question, t, c.agent_says) for t in c.answer_gained)
        missed = " and ".join(_target_words(c.question, t) for t in c.answer_gained)
        return f"the agent's answer quotes {quoted} after {steps}; {one_shot}, but not {missed}"
    both = len(c.agent_quoted & c.one_shot_quoted & set(c.targets))
    return (f"both answers quote {both} of the {n} answer part(s): the agent's answer {_says_words(c.agent_says)} "
            f"after {steps}; {one_shot}")


def asks_about(question_set: QuestionSet, contents: Sequence[dict[str, Any]]) -> bool:
    """Whether the index (``Index.documents()`` rows) holds a document the questions name (or they name none)."""
    named = {q.doc for q in question_set.questions if q.doc}
    return not named or bool(named & {row.get("name") for row in contents})


def pick_showcase(question_set: QuestionSet, index, config: RAGConfig, settings: Settings,
                  progress: Progress | None = None) -> Showcase | None:
    """The question of ``question_set`` where the agent's *answer* quotes most that the one-shot answer does not
    (``Comparison.rank``); without such a question the best tie, marked ``agent_wins=False``. None when neither
    the agent's answer nor its context holds an answer to any question (the documents are not indexed)."""
    best: Comparison | None = None
    total = len(question_set.questions)
    for done, question in enumerate(question_set.questions, start=1):
        comparison = compare(question, index, config, settings)
        if (comparison.agent_found or comparison.agent_quoted) and (best is None or comparison.rank() > best.rank()):
            best = comparison
        if progress:
            progress(done, total)
    if best is None:
        return None
    targets = set(best.targets)
    return Showcase(question_id=best.question.id, question=best.question.question, why=explain(best),
                    one_shot_found=len(best.one_shot_found & targets), agent_found=len(best.agent_found & targets),
                    targets=len(best.targets), agent_searches=len(best.searches), questions_compared=total,
                    agent_wins=bool(best.answer_gained), agent_quoted=len(best.agent_quoted & targets),
                    one_shot_quoted=len(best.one_shot_quoted & targets))


CHOOSING_RULE = "answers-quote"  # in the key: a choice made by an earlier rule is chosen again
KEEP_CHOICES = 8  # choices kept in the showcase file (one per index contents × configuration)


def showcase_key(question_set: QuestionSet, contents: Sequence[dict[str, Any]], config: RAGConfig) -> str:
    """Names what a choice depends on: the questions, what the index holds (``Index.documents()`` rows; their
    changing fields, such as a hot entry's time left, are left out), and the configuration."""
    held = sorted((str(row.get("doc_id")), str(row.get("name")), str(row.get("chunks"))) for row in contents)
    text = json.dumps([CHOOSING_RULE, question_set.name, len(question_set.questions), held, config.model_dump()],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _showcase_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / "evaluations" / "showcase.json"


def _read_choices(data_dir: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(_showcase_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_showcase(data_dir: str | Path, key: str) -> tuple[bool, Showcase | None]:
    """(chosen already, the choice): the choice is None when no question showed the agent's extra steps."""
    choices = _read_choices(data_dir)
    if key not in choices:
        return False, None
    try:
        return True, Showcase(**choices[key]) if choices[key] is not None else None
    except TypeError:  # a file of another shape: choose again
        return False, None


def last_showcase(data_dir: str | Path) -> Showcase | None:
    """The most recently saved question that showed the agent's extra steps (for any index contents): what the demo
    keeps offering while an index is written or after a cancelled choice, instead of nothing."""
    for entry in reversed(list(_read_choices(data_dir).values())):
        try:
            if entry is not None:
                return Showcase(**entry)
        except TypeError:  # a file of another shape: skip that entry
            continue
    return None


def save_showcase(data_dir: str | Path, key: str, showcase: Showcase | None) -> None:
    choices = _read_choices(data_dir)
    choices.pop(key, None)
    choices[key] = asdict(showcase) if showcase is not None else None
    kept = dict(list(choices.items())[-KEEP_CHOICES:])
    path = _showcase_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(kept, ensure_ascii=False))


def submit_showcase(runner: JobRunner, question_set: QuestionSet, index, config: RAGConfig, settings: Settings,
                    key: str) -> JobStatus:
    """Choose the showcase question as a background job; the choice is saved under ``key``."""

    def task(job: TaskHandle) -> str:
        def progress(done: int, total: int, label: str = "") -> None:
            if job.cancelled():
                raise Cancelled("Cancelled; the guided demo's step 3 waits until a question is chosen.")
            job.progress(done, total, f"asked {done} of {total} questions both ways")

        chosen = pick_showcase(question_set, index, config, settings, progress=progress)
        save_showcase(settings.data_dir, key, chosen)
        job.set_result(chosen.question_id if chosen else "")
        if chosen is None:
            return "no golden question is answered on these documents"
        return f"chose {chosen.question_id}" + ("" if chosen.agent_wins else " (a tie: no answer of the agent's wins)")

    # (no collection: a job's collection names the index it writes, and this one only reads)
    return runner.submit_task(task, kind="demo", settings={"key": key, "collection": config.collection_name()},
                              title=f"Choosing the demo question: one-shot vs agent on {len(question_set.questions)} "
                                    f"'{question_set.name}' questions")


def choose_showcase(question_set: QuestionSet, index, config: RAGConfig, settings: Settings,
                    progress: Progress | None = None) -> tuple[bool, Showcase | None]:
    """Choose the showcase for what ``index`` holds now, here (the command line's bootstrap, before the app
    starts), unless it was chosen already: (chosen now, the choice)."""
    contents = index.documents()
    if not contents or not asks_about(question_set, contents):
        return False, None
    key = showcase_key(question_set, contents, config)
    chosen, found = load_showcase(settings.data_dir, key)
    if chosen:
        return False, found
    found = pick_showcase(question_set, index, config, settings, progress=progress)
    save_showcase(settings.data_dir, key, found)
    return True, found


def prepare_showcase(runner: JobRunner, question_set: QuestionSet, index, config: RAGConfig,
                     settings: Settings) -> JobStatus | None:
    """Start choosing the showcase for what ``index`` holds now; None when there is nothing to do: chosen already,
    being chosen, or the questions do not ask about these documents. A choice under way for earlier contents of
    the same index is cancelled (its answer would be for documents no longer there)."""
    contents = index.documents()
    if not contents or not asks_about(question_set, contents):
        return None
    key = showcase_key(question_set, contents, config)
    if load_showcase(settings.data_dir, key)[0]:
        return None
    choosing = None
    for job in runner.active():
        if job.kind != "demo" or job.settings.get("collection") != config.collection_name():
            continue
        if job.settings.get("key") == key:
            choosing = job
        else:
            runner.cancel(job.id)
    return None if choosing is not None else submit_showcase(runner, question_set, index, config, settings, key)


def prepare_after_ingest(runner: JobRunner, index, config: RAGConfig,
                         settings: Settings) -> Callable[[str, JobStatus], str | None]:
    """An ingest job's ``finish``: once its documents are in, the guided demo's question is chosen for them (in a
    job queued behind it), so Home finds the demo ready instead of starting the work when it is opened. Skipped
    while another job still writes the same index (the last one prepares it) and after a cancel or failure."""

    def finish(state: str, status: JobStatus) -> str | None:
        if state != "done":
            return None
        if any(job.id != status.id and job.collection == status.collection for job in runner.active()):
            return None
        try:
            prepare_showcase(runner, load_golden(), index, config, settings)
        except Exception:  # noqa: BLE001 - the documents are indexed; Home offers to prepare the demo by hand
            log.exception("preparing the guided demo after job %s failed", status.id)
        return None

    return finish
