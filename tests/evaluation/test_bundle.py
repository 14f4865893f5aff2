import json

import pytest

from rag_core.config import RAGConfig
from rag_core.evaluation.bundle import export_bundle, import_bundle, read_bundle, replay
from rag_core.evaluation.questions import Question, QuestionSet
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun, run_evaluation
from rag_core.loaders import document_id
from rag_core.loaders.document_store import DocumentStore
from rag_core.serving.configstore import ConfigStore
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
    assert index.ingested == [document_id("guide.md", DOC.text.encode())]  # recomputed, never the planted id
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
        (b'{"format": "agentic-rag-studio/bundle", "version": 1, "configs": []}', "question_set: Field required"),
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


def test_bundled_documents_get_ids_from_their_content_and_upload_names(tiny_run, tmp_path):
    """A planted id made a later genuine upload count as "already stored", so the attacker's text was indexed."""
    from rag_core.loaders import load_bytes

    genuine = load_bytes("configuration.md", b"# Configuration\n\nThe port is 8443.\n")
    payload = json.loads(export_bundle(tiny_run, [DOC]))
    payload["documents"][0].update(id=genuine.id, name="../../evil\nname.md", text="POISONED: the port is 1.")
    bundle = read_bundle(json.dumps(payload), source="b.json")
    [doc] = bundle.documents
    assert doc.name == "evilname.md"  # cleaned like an upload's name
    assert doc.id == document_id("evilname.md", b"POISONED: the port is 1.") != genuine.id
    import_bundle(bundle, tmp_path)
    store = DocumentStore(tmp_path)
    assert store.add(genuine)[1] is True and store.get(genuine.id).text == genuine.text


@pytest.mark.parametrize(("path", "value", "message"), [
    (("results", "question_set"), "oops", "results is malformed: question_set"),
    (("documents", 0, "metadata", "warnings"), 5, r"documents\[0\] is malformed: metadata.warnings"),
    (("results", "records", 0, "metrics"), "x", "records.0.metrics"),
    (("results", "records", 0, "config"), "other", "records\\[0\\] is for configuration 'other'"),
    (("results", "id"), "../x", "results is malformed: id"),
    (("question_set", "questions", 0, "intent"), "evil", "question_set is malformed"),
    (("agent_traces", 0, "question"), ["x"], "agent_traces"),
    (("documents", 0, "text"), "   ", "is empty"),
])
def test_crafted_bundles_are_refused_with_the_part_named(tiny_run, path, value, message):
    payload = json.loads(export_bundle(tiny_run, [DOC], trace_question_ids=["q1"]))
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError, match=message):
        read_bundle(json.dumps(payload), source="b.json")


def test_bundle_counts_are_capped_by_settings(tiny_run, tmp_path):
    from rag_core.config import Settings

    payload = json.loads(export_bundle(tiny_run, [DOC]))
    many = [{**payload["question_set"]["questions"][0], "id": f"q{i}"} for i in range(4)]
    payload["question_set"]["questions"] = many
    with pytest.raises(ValueError, match=r"4 questions; at most 3 are allowed \(RAG_MAX_QUESTIONS\)"):
        read_bundle(json.dumps(payload), settings=Settings(data_dir=tmp_path, max_questions=3))
    other = Document(id="fedcba9876543210", name="other.md", doc_type="markdown", size=5, created="", text="other")
    payload = json.loads(export_bundle(tiny_run, [DOC, other]))
    with pytest.raises(ValueError, match=r"2 documents; at most 1 are allowed \(RAG_MAX_BUNDLE_DOCUMENTS\)"):
        read_bundle(json.dumps(payload), settings=Settings(data_dir=tmp_path, max_bundle_documents=1))
    with pytest.raises(ValueError, match="NaN is not a number JSON allows"):
        read_bundle(json.dumps(payload).replace('"elapsed_s": ', '"elapsed_s": NaN, "x": '))


def test_import_is_all_or_nothing(tiny_run, tmp_path, monkeypatch):
    bundle = read_bundle(export_bundle(tiny_run, [DOC]))

    def fail(self, run):
        raise OSError("disk full")

    monkeypatch.setattr(ResultsStore, "save", fail)
    with pytest.raises(OSError, match="disk full"):
        import_bundle(bundle, tmp_path)
    assert ConfigStore(tmp_path).list() == [] and DocumentStore(tmp_path).list() == []


def test_imported_configuration_names_keep_the_name_rule(tiny_run, tmp_path):
    long_name = "n" * 80
    run = EvalRun.from_dict({**tiny_run.to_dict(), "configs": [{**tiny_run.configs[0], "name": long_name}],
                             "records": [{**r, "config": long_name} for r in tiny_run.records]})
    ConfigStore(tmp_path).save(RAGConfig(name=long_name, retrieval={"strategy": "keyword"}))
    summary = import_bundle(read_bundle(export_bundle(run, [DOC])), tmp_path)
    [name] = summary["configs"]
    assert len(name) <= 80 and name.endswith("-imported")
    assert ConfigStore(tmp_path).load(name).name == name  # `config show` accepts what the import saved
