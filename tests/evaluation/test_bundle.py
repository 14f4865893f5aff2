import json

import pytest

from rag_core.bundle import export_bundle, import_bundle, read_bundle, replay
from rag_core.config import RAGConfig
from rag_core.configstore import ConfigStore
from rag_core.documents import DocumentStore
from rag_core.evaluation.questions import Question, QuestionSet
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun, run_evaluation
from rag_core.types import Document

DOC = Document(id="0123456789abcdef", name="guide.md", doc_type="markdown", size=30, created="2026-01-01",
               text="# Guide\n\nThe server uses port 8443.\n")
QSET = QuestionSet(name="tiny", kind="upload", questions=[
    Question(id="q1", question="What port?", intent="fact", answer_texts=["port 8443"])])
SCRIPT = {("vector", "What port?"): ["uses port 8443"], ("agent", "What port?"): ["x", "port 8443 it is"]}


@pytest.fixture
def tiny_run(fakes):
    executor = fakes.ScriptedExecutor(SCRIPT)
    return run_evaluation(QSET, [RAGConfig(name="demo")], ["vector", "agent"],
                          index_factory=lambda c: fakes.FakeIndex(), execute=executor)


def test_export_read_import_replay(tmp_path, tiny_run, fakes):
    text = export_bundle(tiny_run, [DOC], trace_question_ids=["q1"])
    payload = json.loads(text)
    assert payload["format"] == "agentic-rag-studio/bundle" and payload["documents"][0]["name"] == "guide.md"
    assert [t["question_id"] for t in payload["agent_traces"]] == ["q1"]
    assert all("trace" not in r for r in payload["results"]["records"])

    bundle = read_bundle(text.encode())
    other = tmp_path / "other-machine"
    summary = import_bundle(bundle, other)
    assert summary == {"configs": ["demo"], "documents_added": 1, "documents": 1, "run_id": tiny_run.id,
                       "questions": 1, "agent_traces": 1}
    assert ConfigStore(other).list() == ["demo"]
    assert [d.name for d in DocumentStore(other).list()] == ["guide.md"]
    stored = ResultsStore(other).load(tiny_run.id)
    assert stored.summary == tiny_run.summary and stored.label == "(imported)"

    index = fakes.FakeIndex()
    from rag_core.config import Settings

    again = replay(bundle, settings=Settings(data_dir=other), index_factory=lambda c: index,
                   execute=fakes.ScriptedExecutor(SCRIPT))
    assert index.ingested == ["0123456789abcdef"]
    def quality(run):  # latency differs from run to run; everything measured about answers must not
        return [{k: v for k, v in row.items() if k != "latency_ms_p50"} for row in run.summary]

    assert quality(again) == quality(tiny_run) and again.label == "replay of bundle"


def test_import_on_the_same_machine_keeps_what_is_there(tmp_path, tiny_run):
    """Importing a bundle where its run and configurations already live replaces nothing: the run gets a new
    id, a configuration of the same name but other settings keeps its place and the import is saved beside it."""
    home = tmp_path / "home"
    ResultsStore(home).save(tiny_run)
    local = RAGConfig.model_validate(tiny_run.configs[0])
    changed = local.model_copy(update={"retrieval": local.retrieval.model_copy(update={"strategy": "keyword"})})
    ConfigStore(home).save(changed)
    bundle = read_bundle(export_bundle(tiny_run, [DOC]))
    first = import_bundle(bundle, home)
    second = import_bundle(bundle, home)
    assert first["run_id"] == f"{tiny_run.id}-imported" and second["run_id"] == f"{tiny_run.id}-imported-2"
    assert ResultsStore(home).load(tiny_run.id).label == tiny_run.label  # the original is untouched
    assert first["configs"] == [f"{local.name}-imported"] == second["configs"]  # same settings: reused
    assert ConfigStore(home).load(local.name) == changed
    assert ConfigStore(home).load(f"{local.name}-imported").retrieval == local.retrieval


def test_imported_sweep_stays_a_sweep(tmp_path, tiny_run):
    sweep = EvalRun.from_dict({**tiny_run.to_dict(), "label": "sweep"})
    summary = import_bundle(read_bundle(export_bundle(sweep, [DOC])), tmp_path / "other")
    stored = ResultsStore(tmp_path / "other").load(summary["run_id"])
    assert stored.label == "sweep" and "imported" in stored.note


def test_named_documents_must_exist_locally(tmp_path, tiny_run):
    bundle = read_bundle(export_bundle(tiny_run, [DOC], include_documents=False))
    assert bundle.document_names == ["guide.md"] and bundle.documents == []
    with pytest.raises(ValueError, match="names documents that are not loaded here: guide.md"):
        import_bundle(bundle, tmp_path / "empty")
    assert ConfigStore(tmp_path / "empty").list() == []  # nothing written before the check
    DocumentStore(tmp_path / "has").add(DOC)
    assert import_bundle(bundle, tmp_path / "has")["documents_added"] == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not json", "not a bundle \\(invalid JSON"),
        (b'{"format": "other"}', "not an Agentic RAG Studio bundle"),
        (b'{"format": "agentic-rag-studio/bundle", "version": 9}', "bundle version 9 is not supported"),
        (b'{"format": "agentic-rag-studio/bundle", "version": 1, "configs": []}', "the bundle lacks 'question_set'"),
    ],
)
def test_bad_bundles(data, message):
    with pytest.raises(ValueError, match=message):
        read_bundle(data, source="b.json")


def test_invalid_config_in_bundle_names_the_field(tiny_run):
    payload = json.loads(export_bundle(tiny_run, [DOC]))
    payload["configs"][0]["retrieval"]["initial_k"] = 0
    with pytest.raises(ValueError, match=r"b.json configs\[0\]: retrieval.initial_k: must be ≥ 1"):
        read_bundle(json.dumps(payload), source="b.json")


def test_malformed_document_ids_are_refused(tiny_run):
    payload = json.loads(export_bundle(tiny_run, [DOC]))
    payload["documents"][0]["id"] = "../../etc"
    with pytest.raises(ValueError, match="malformed ids .*: guide.md"):
        read_bundle(json.dumps(payload), source="b.json")
