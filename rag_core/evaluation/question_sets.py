"""Named question sets kept in the data directory (a reviewed draft, saved to be run like the other sets), and
drafting as a background job.

Files: ``data_dir/question_sets/<name>.jsonl`` (the evidence-span JSONL, ``draft.to_jsonl``) with
``<name>.json`` beside it (``label``, ``method``, ``created``, ``questions``); a finished draft job's result waits in
``data_dir/question_sets/drafts/<key>.json`` for review, offered again after a reload until it is saved as a set
(``saved_as`` is then written into it) or discarded (the file is removed). Written atomically (temp file + replace).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag_core.evaluation.draft import KINDS, DraftResult, draft_questions, to_jsonl
from rag_core.evaluation.questions import Question, QuestionSet, parse_jsonl
from rag_core.files import atomic_write_text
from rag_core.serving.jobs import Cancelled, JobKind, JobRunner, JobStatus, TaskHandle
from rag_core.types import Document

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.\-]{0,59}")
_DRAFT_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")
DRAFT_KIND: JobKind = "draft"


def check_set_name(name: str) -> str:
    name = (name or "").strip()
    if not _NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"question set name {name!r}: use 1-60 letters, digits, spaces, '.', '_' or '-', starting "
                         "with a letter or digit")
    return name


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


class QuestionSetStore:
    """Saved question sets of one data directory: ``save``, ``list``, ``load``, ``delete``."""

    def __init__(self, data_dir: str | os.PathLike):
        self.root = Path(data_dir) / "question_sets"

    def save(self, name: str, questions: Sequence[Question], *, label: str = "", method: str = "") -> QuestionSet:
        """Store ``questions`` as set ``name`` (replacing one of that name); ValueError when it is empty."""
        name = check_set_name(name)
        if not questions:
            raise ValueError("the question set is empty: keep at least one question")
        text = to_jsonl(questions)
        parse_jsonl(text, f"{name}.jsonl")  # what is stored must read back
        _write(self.root / f"{name}.jsonl", text)
        meta = {"label": label, "method": method, "questions": len(questions),
                "created": datetime.now(UTC).isoformat(timespec="seconds")}
        _write(self.root / f"{name}.json", json.dumps(meta))
        return self.load(name)

    def list(self) -> list[str]:
        return sorted(p.stem for p in self.root.glob("*.jsonl") if _NAME.fullmatch(p.stem))

    def meta(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads((self.root / f"{check_set_name(name)}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self, name: str) -> QuestionSet:
        path = self.root / f"{check_set_name(name)}.jsonl"
        if not path.is_file():
            raise ValueError(f"no saved question set named '{name}'")
        questions = parse_jsonl(path.read_text(encoding="utf-8"), path.name)
        return QuestionSet(name=name, kind="drafted", questions=questions,
                           source=str(self.meta(name).get("label") or path.name))

    def delete(self, name: str) -> None:
        for suffix in (".jsonl", ".json"):
            (self.root / f"{check_set_name(name)}{suffix}").unlink(missing_ok=True)

    # ------------------------------------------------------------ drafts waiting for review

    def save_draft(self, key: str, result: DraftResult) -> None:
        data = {"created": datetime.now(UTC).isoformat(), "summary": result.summary(),  # µs: orders the drafts
                "prompt": result.prompt, "rejected": result.rejected[:500],
                "questions": [q.to_dict() for q in result.questions]}
        _write(self._draft_path(key), json.dumps(data, ensure_ascii=False))

    def _draft_path(self, key: str) -> Path:
        if not _DRAFT_KEY.fullmatch(key or ""):
            raise ValueError(f"draft key {key!r}: use 1-64 letters, digits, '_' or '-'")
        return self.root / "drafts" / f"{key}.json"

    def _read_draft(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._draft_path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def load_draft(self, key: str) -> dict[str, Any] | None:
        """A finished draft: ``summary``, ``prompt``, ``rejected``, ``questions`` (``Question`` objects), ``created``
        and, once saved as a set, ``saved_as``."""
        data = self._read_draft(key)
        if data is None:
            return None
        try:
            data["questions"] = [Question.from_dict(q) for q in data["questions"]]
        except (KeyError, TypeError, ValueError):
            return None
        return data

    def drafts(self) -> list[dict[str, Any]]:
        """The drafts waiting for review (neither saved as a set nor discarded), newest first: ``key``,
        ``created``, ``questions`` (how many), ``method`` and ``state`` (the job's: ``done`` or ``cancelled``)."""
        rows = []
        for path in (self.root / "drafts").glob("*.json"):
            data = self._read_draft(path.stem) if _DRAFT_KEY.fullmatch(path.stem) else None
            if data is None or data.get("saved_as") or not isinstance(data.get("summary"), dict) \
                    or not isinstance(data.get("questions"), list):
                continue
            summary = data["summary"]
            created = data.get("created")
            if not isinstance(created, str):  # written before ``created`` was stored: when the job wrote it
                try:
                    created = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat()
                except OSError:  # discarded meanwhile
                    continue
            rows.append({"key": path.stem, "created": created, "questions": len(data["questions"]),
                         "method": str(summary.get("method") or ""),
                         "state": "cancelled" if summary.get("stopped") == "cancelled" else "done"})
        return sorted(rows, key=lambda r: (r["created"], r["key"]), reverse=True)

    def mark_draft_saved(self, key: str, name: str) -> None:
        """Note that draft ``key`` was saved as set ``name``: it is then no longer waiting for review."""
        data = self._read_draft(key)
        if data is not None:
            _write(self._draft_path(key), json.dumps({**data, "saved_as": name}, ensure_ascii=False))

    def discard_draft(self, key: str) -> None:
        """Remove draft ``key`` (a set saved from it stays)."""
        self._draft_path(key).unlink(missing_ok=True)


def submit_draft(runner: JobRunner, documents: Sequence[Document], *, data_dir: str | os.PathLike, n: int = 50,
                 seed: int = 0, time_budget_s: float = 60.0, kinds: Sequence[str] = KINDS, llm=None) -> JobStatus:
    """Queue drafting (kind ``draft``); the job's ``result`` is the key of the stored draft (``load_draft``).
    Arguments are checked before queuing; Cancel keeps what was drafted so far."""
    documents = list(documents)
    if not documents:
        raise ValueError("no documents are loaded: load or upload some on the Documents page first")
    if not 1 <= n <= 500:
        raise ValueError(f"the number of questions must be between 1 and 500 (got {n})")
    kinds = list(kinds) or list(KINDS)
    store = QuestionSetStore(data_dir)

    def task(job: TaskHandle) -> str:
        key = f"d{datetime.now(UTC).strftime('%Y%m%d%H%M%S%f')}"
        result = draft_questions(documents, n, seed=seed, time_budget_s=time_budget_s, kinds=kinds, llm=llm,
                                 progress=job.progress, cancel=job.cancelled)
        store.save_draft(key, result)
        job.set_result(key)
        counts = ", ".join(f"{k} {v}" for k, v in result.counts().items()) or "none"
        message = (f"{len(result.questions)} questions drafted ({counts}) from {len(documents)} documents in "
                   f"{result.elapsed_s:.1f} s")
        if result.stopped == "cancelled":
            raise Cancelled(message + "; cancelled: what was drafted is kept")
        return message + (f"; stopped at the {result.stopped}" if result.stopped else "")

    title = f"Drafting {n} questions from {len(documents)} documents" + (" with the LLM" if llm else "")
    return runner.submit_task(task, kind=DRAFT_KIND, title=title,
                              settings={"n": n, "seed": seed, "kinds": kinds, "llm": llm is not None})
