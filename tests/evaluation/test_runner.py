import pytest

from rag_core.config import RAGConfig
from rag_core.evaluation.questions import Question, QuestionSet
from rag_core.evaluation.results import ResultsStore, find_regressions
from rag_core.evaluation.runner import EvalRun, run_evaluation, summarise
from rag_core.evaluation.sweep import sweep_configs, sweep_grid
from rag_core.types import Document

QSET = QuestionSet(name="tiny", kind="upload", questions=[
    Question(id="q1", question="What port?", intent="fact", answer_texts=["port 8443"]),
    Question(id="q2", question="How to deploy?", intent="procedure", answer_texts=["run deploy", "check health"]),
])
SCRIPT = {
    ("vector", "What port?"): ["intro", "listens on port 8443"],
    ("vector", "How to deploy?"): ["run deploy now", "other", "then check health"],
    ("keyword", "What port?"): ["port 8443 is used"],
    ("keyword", "How to deploy?"): ["nothing", "nothing else"],
}


@pytest.fixture
def run_tiny(fakes):
    def run(script=SCRIPT, strategies=("vector", "keyword"), configs=None, **kwargs):
        return _run_tiny(fakes, script, strategies, configs, **kwargs)

    return run


def _run_tiny(fakes, script, strategies, configs, **kwargs):
    executor = fakes.ScriptedExecutor(script)
    index = fakes.FakeIndex(["d1"])
    run = run_evaluation(QSET, configs or [RAGConfig(name="base")], strategies, index_factory=lambda c: index,
                         execute=executor, **kwargs)
    return run, executor, index


def test_metrics_per_question_and_summary(run_tiny):
    run, executor, _ = run_tiny()
    assert run.status == "complete" and len(run.records) == 4
    by = {(r["strategy"], r["question_id"]): r for r in run.records}
    assert by["vector", "q1"]["metrics"]["hit@1"] == 0.0 and by["vector", "q1"]["metrics"]["mrr"] == 0.5
    assert by["vector", "q2"]["metrics"]["recall@1"] == 0.5 and by["vector", "q2"]["metrics"]["recall@3"] == 1.0
    assert by["keyword", "q2"]["metrics"]["hit@10"] == 0.0
    assert [h["found"] for h in by["vector", "q2"]["hits"]] == [True, False, True]
    summary = {row["strategy"]: row for row in run.summary}
    assert summary["vector"]["hit@3"] == 1.0 and summary["vector"]["mrr"] == 0.75
    assert summary["keyword"]["hit@1"] == 0.5 and summary["keyword"]["questions"] == 2
    assert summary["vector"]["context_tokens"] == pytest.approx((5 + 7) / 2)
    intents = {(r["strategy"], r["intent"]): r["hit@3"] for r in run.by_intent}
    assert intents == {("vector", "fact"): 1.0, ("vector", "procedure"): 1.0, ("keyword", "fact"): 1.0,
                       ("keyword", "procedure"): 0.0}
    assert run.records[0]["trace"]["long"].endswith("[600 more characters]")


def test_progress_cancel_and_on_finish(run_tiny):
    seen, finished = [], []
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 3

    run, _, _ = run_tiny(progress=lambda d, t, label: seen.append((d, t)), cancel=cancel, on_finish=finished.append)
    assert run.status == "cancelled" and len(run.records) == 3
    assert run.note == "cancelled after 3 of 4 question runs"
    assert (3, 4) in seen and finished == [run]


def test_interrupt_keeps_partial_results(run_tiny):
    class Interrupt(BaseException):
        pass

    finished = []

    def progress(done, total, label):
        if done == 1:
            raise Interrupt()

    with pytest.raises(Interrupt):
        run_tiny(progress=progress, on_finish=finished.append)
    assert finished[0].status == "cancelled" and len(finished[0].records) == 1


def test_failing_question_scores_zero_and_says_why(run_tiny):
    script = dict(SCRIPT)
    del script["keyword", "How to deploy?"]
    run, _, _ = run_tiny(script)
    failed = [r for r in run.records if r.get("error")]
    assert len(failed) == 1 and failed[0]["error"] == "RuntimeError: no script for keyword How to deploy?"
    assert failed[0]["metrics"]["hit@10"] == 0.0
    assert {r["strategy"]: r["errors"] for r in run.summary} == {"vector": 0, "keyword": 1}


def test_missing_documents_are_ingested_once_per_config(run_tiny):
    doc = Document(id="d2", name="n.md", doc_type="markdown", size=1, created="", text="x")
    _, _, index = run_tiny(documents=[doc], configs=[RAGConfig(name="a"), RAGConfig(name="b")])
    assert index.ingested == ["d2"]


def test_bad_requests_are_refused(run_tiny):
    with pytest.raises(ValueError, match="unknown strategy magic; choose from vector, keyword, hybrid, auto, agent"):
        run_tiny(strategies=["magic"])
    with pytest.raises(ValueError, match="pick at least one configuration"):
        run_evaluation(QSET, [], ["vector"])


def test_results_store_round_trip_and_regressions(tmp_path, run_tiny):
    store = ResultsStore(tmp_path)
    first, _, _ = run_tiny()
    store.save(first)
    assert [r["id"] for r in store.list()] == [first.id]
    assert store.load(first.id).summary == first.summary
    store.set_baseline(first, "base", "vector")
    worse_script = dict(SCRIPT)
    worse_script["vector", "What port?"] = ["a", "b", "c", "listens on port 8443"]
    second, _, _ = run_tiny(worse_script)
    below = store.below_baseline(second)
    assert {r["metric"] for r in below} == {"hit@3", "mrr", "ndcg@10"}
    mrr_row = next(r for r in below if r["metric"] == "mrr")
    assert (mrr_row["baseline"], mrr_row["current"], mrr_row["delta"]) == (0.75, 0.625, -0.125)
    # One of two questions got worse: a coin toss would do that half the time, so it is noise, not a regression.
    assert (mrr_row["p_value"], mrr_row["questions"], mrr_row["regression"]) == (0.5, 2, False)
    assert store.regressions(second) == [] and store.regressions(first) == []
    with pytest.raises(ValueError, match="no results for configuration 'base' with strategy 'agent'"):
        store.set_baseline(first, "base", "agent")
    store.delete(first.id)
    with pytest.raises(ValueError, match="no stored evaluation run"):
        store.load(first.id)


@pytest.mark.chroma_server
def test_results_are_shared_through_a_chroma_server(tmp_path, run_tiny, chroma_server):
    from rag_core.config import Settings

    settings = Settings(data_dir=tmp_path / "a", chroma_host=chroma_server.host, chroma_port=chroma_server.port)
    mine = ResultsStore.for_settings(settings)
    theirs = ResultsStore.for_settings(settings.model_copy(update={"data_dir": tmp_path / "b"}))
    first, _, _ = run_tiny()
    before = theirs.version()
    mine.save(first)
    assert theirs.version() != before and theirs.exists(first.id)
    assert next(r for r in theirs.list() if r["id"] == first.id)["records"] == len(first.records)
    assert theirs.load(first.id).summary == first.summary
    mine.set_baseline(first, "base", "vector")
    assert theirs.baselines() == mine.baselines() != {}
    theirs.clear_baseline(first.question_set["name"], "base", "vector")
    theirs.delete(first.id)
    assert not mine.exists(first.id) and mine.baselines() == {}
    assert not (tmp_path / "a" / "evaluations").exists()  # nothing of it in a data folder


def test_find_regressions_ignores_other_question_sets():
    run = EvalRun(id="r", created="", question_set={"name": "tiny"}, configs=[], strategies=["vector"],
                  records=[{"config": "c", "strategy": "vector", "intent": None, "metrics": {"mrr": 0.5},
                            "context_tokens": 1, "steps": 1, "latency_ms": 1.0}])
    assert find_regressions(run, {"other|c|vector": {"run_id": "x", "metrics": {"mrr": 0.9}}}) == []
    [row] = find_regressions(run, {"tiny|c|vector": {"run_id": "x", "metrics": {"mrr": 0.9}}})
    assert row["delta"] == -0.4 and row["p_value"] is None  # nothing per question to test: the minimum drop decides


def test_sweep_configs_and_grid(run_tiny):
    base = RAGConfig(name="base")
    configs = sweep_configs(base, [256, 128], [3, 20, 3])
    assert [(c.chunking.max_tokens, c.retrieval.initial_k) for c in configs] == [(128, 3), (128, 20), (256, 3),
                                                                                 (256, 20)]
    assert configs[0].name == "base mt128 k3" and configs[1].retrieval.max_k == 20
    with pytest.raises(ValueError, match="too large"):
        sweep_configs(base, list(range(100, 800, 100)), list(range(1, 7)))
    run, _, _ = run_tiny(configs=configs[:2], strategies=["vector"])
    grid = sweep_grid(run, "hit@1")
    assert grid == [{"strategy": "vector", "max_tokens": 128, "k": 3, "hit@1": 0.5},
                    {"strategy": "vector", "max_tokens": 128, "k": 20, "hit@1": 0.5}]


def test_summarise_groups_missing_intent_as_dash():
    rows = summarise([{"config": "c", "strategy": "s", "intent": None, "metrics": {"mrr": 1.0},
                       "context_tokens": 10, "steps": 1, "latency_ms": 5.0}], ("config", "intent"))
    assert rows[0]["intent"] == "—" and rows[0]["mrr"] == 1.0


def test_agent_answers_are_scored_by_the_gold_evidence_they_cite():
    from rag_core.evaluation.questions import Question
    from rag_core.evaluation.runner import Outcome, score_question
    from rag_core.types import Chunk

    def chunk(cid, text):
        return Chunk(id=cid, doc_id="d", granularity="paragraph", chunk_type="prose", text=text, start=0,
                     end=len(text), tokens=5)

    gold, other = chunk("g", "The server uses port 8443."), chunk("o", "Deploys run nightly.")
    question = Question(id="q", question="What port?", answer_texts=["port 8443"])
    ranked = [(gold, "guide.md"), (other, "guide.md")]
    cites_gold = score_question(question, Outcome(ranked=ranked, context_tokens=10, steps=2, cited=[ranked[0]],
                                                  grounded=True))
    cites_other = score_question(question, Outcome(ranked=ranked, context_tokens=10, steps=2, cited=[ranked[1]],
                                                   grounded=True))
    retrieval = score_question(question, Outcome(ranked=ranked, context_tokens=10, steps=1))
    assert (cites_gold["cited"], cites_gold["grounded"], cites_gold["hit@1"]) == (1.0, 1.0, 1.0)
    assert cites_other["cited"] == 0.0  # found, but the answer does not rest on it
    assert "cited" not in retrieval and "grounded" not in retrieval
