"""Issue 39 item 8: the Evaluate page parses an uploaded question file once (keyed by its bytes' hash), not on
every rerun; a refused file keeps its message on reruns without being parsed again."""

from __future__ import annotations

import pytest

import rag_core.evaluation.questions as questions_module
from rag_core.config import EmbeddingConfig, RAGConfig
from tests.app.apptest_helpers import studio_app

HASH_CONFIG = RAGConfig(name="hash", embedding=EmbeddingConfig(embedder="hash"))
GOOD = b"question,answer_text\nWhat is the default port?,8080\nHow long is the timeout?,30 seconds\n"
BAD = b"question,colour\nWhat?,red\n"


@pytest.fixture
def parses(monkeypatch):
    """The names of the files ``parse_upload`` was asked to parse, in order."""
    calls: list[str] = []
    real = questions_module.parse_upload

    def counting(name, data):
        calls.append(name)
        return real(name, data)

    monkeypatch.setattr(questions_module, "parse_upload", counting)
    return calls


def _upload_page(name: str, data: bytes):
    at = studio_app(HASH_CONFIG)
    at.run()
    at.switch_page("views/evaluate.py").run()
    at.radio[0].set_value("Upload CSV/JSONL").run()
    at.file_uploader(key="eval_upload").set_value((name, data, "text/csv")).run()
    return at


def test_an_uploaded_file_is_parsed_once_over_reruns(data_dir, parses):
    at = _upload_page("mine.csv", GOOD)
    for _ in range(3):
        at.run()
    assert not at.exception
    assert any("2 questions" in c.value for c in at.caption)
    assert parses == ["mine.csv"]
    at.file_uploader(key="eval_upload").set_value(("other.csv", GOOD + b"Who?,me\n", "text/csv")).run()
    assert parses == ["mine.csv", "other.csv"] and any("3 questions" in c.value for c in at.caption)


def test_a_refused_file_keeps_its_message_without_being_parsed_again(data_dir, parses):
    at = _upload_page("bad.csv", BAD)
    at.run()
    at.run()
    assert not at.exception
    assert any("unknown field 'colour'" in e.value for e in at.error)
    assert parses == ["bad.csv"]
