"""AppTest of the Evaluate page: a real golden-set run on a hash-embedder index, results, baselines, configs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.evaluation.questions import load_golden
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun
from rag_core.loaders import load_path
from rag_core.loaders.document_store import DocumentStore
from rag_core.serving.configstore import ConfigStore
from rag_core.serving.jobs import runner_for
from tests.app.apptest_helpers import finish_jobs, page_app, studio_app, visit_another_page
from ui.evaluate.evaluate_view import RESULTS_TAB

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "evaluate.py")
HASH_CONFIG = RAGConfig(name="eval-test", embedding=EmbeddingConfig(embedder="hash"))


@pytest.fixture
def docs(data_dir):
    store = DocumentStore(data_dir)
    for name in ("configuration.md", "overview.md"):
        store.add(load_path(ROOT / "samples" / name))
    return store


def _app(**session) -> AppTest:
    return page_app(PAGE, HASH_CONFIG, **session)


def _plain(markdown: str) -> str:
    """Text shown from escaped Markdown (``md_escape`` puts a backslash before '-', '.', …)."""
    return markdown.replace("\\", "")


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def test_golden_run_end_to_end(docs, data_dir):
    at = _app().run()
    assert not at.exception
    golden = load_golden()
    assert any(f"{len(golden.questions)} questions" in c.value for c in at.caption)
    at.multiselect(key="eval_strategies").set_value(["keyword", "agent"])
    _button(at, "Run evaluation").click()
    at.run()
    assert not at.exception, at.exception
    job = runner_for(data_dir).jobs(limit=1)[0]  # a background job of the data directory's runner
    assert job.kind == "evaluation" and job.title.startswith("Evaluation on 'golden': eval-test × keyword, agent")
    finish_jobs(at)
    assert not at.exception, at.exception
    runs = ResultsStore(data_dir).list()
    assert len(runs) == 1 and runs[0]["status"] == "complete"
    assert runs[0]["records"] == 2 * len(golden.questions)
    assert runner_for(data_dir).get(job.id).result == runs[0]["id"]
    assert any(f"run {runs[0]['id']} complete" in _plain(s.value) for s in at.success)
    assert "Cancel" not in [b.label for b in at.button] and not at.get("progress")  # nothing left to cancel
    run = ResultsStore(data_dir).load(runs[0]["id"])
    summary = {r["strategy"]: r for r in run.summary}
    assert summary["keyword"]["hit@10"] > 0  # the two indexed documents answer some golden questions
    # the Results tab shows the stored run: leaderboard, per-question table, drill-down
    assert len(at.dataframe) >= 2
    assert any(e.label.startswith("eval-test · keyword") for e in at.expander)


def _hand_run(run_id: str, mrr: float | list[float]) -> EvalRun:
    """A stored-looking run of configuration "c" × hybrid: one question scoring ``mrr``, or one per score."""
    records = [{"question_id": f"q{i + 1}", "question": "Q?", "intent": "fact", "config": "c", "strategy": "hybrid",
                "metrics": {m: score for m in ("hit@1", "hit@3", "hit@5", "hit@10", "recall@5", "recall@10", "mrr",
                                               "ndcg@10")},
                "context_tokens": 10, "steps": 1, "latency_ms": 2.0, "hits": [], "trace": {}, "route": "hybrid"}
               for i, score in enumerate(mrr if isinstance(mrr, list) else [mrr])]
    return EvalRun(id=run_id, created=f"2026-01-0{run_id[-1]}T00:00:00+00:00",
                   question_set={"name": "golden", "kind": "golden", "questions": []}, configs=[],
                   strategies=["hybrid"], records=records, status="complete")


def _baseline_then(data_dir, before: list[float], after: list[float]) -> AppTest:
    store = ResultsStore(data_dir)
    first, second = _hand_run("run-1", before), _hand_run("run-2", after)
    store.save(first)
    store.save(second)
    store.set_baseline(first, "c", "hybrid")
    at = _app().run()
    assert not at.exception
    return at


def test_regression_banner_against_saved_baseline(data_dir):
    at = _baseline_then(data_dir, [1.0] * 20, [0.5] * 10 + [1.0] * 10)  # 10 of 20 questions lost half their rank
    banner = [e.value for e in at.error if "Regression" in e.value]
    assert banner and "- c · hybrid (20 questions): hit@1 0.750 < 1.000 (p = 0.001), " in banner[0]
    assert "mrr 0.750 < 1.000 (p = 0.001)" in banner[0]
    assert "at least 0.01 that a one-sided paired sign-flip test" in banner[0]  # the rule, in the banner


def test_noise_below_the_baseline_raises_no_banner(data_dir):
    """mrr 0.811 → 0.810: one question's rank moved; that is noise, said quietly, not a red banner."""
    before = [1.0] * 48 + [0.055] * 12
    after = [1.0] * 48 + [0.055] * 11 + [0.0]
    at = _baseline_then(data_dir, before, after)
    assert not [e.value for e in at.error if "Regression" in e.value]
    quiet = [c.value for c in at.caption if "within noise" in c.value]
    assert quiet and "c · hybrid (60 questions): " in _plain(quiet[0])
    assert "mrr 0.810 < 0.811 (p = 0.5)" in _plain(quiet[0])


def test_save_baseline_from_the_page(data_dir):
    ResultsStore(data_dir).save(_hand_run("run-1", 0.8))
    at = _app().run()
    _button(at, "Save baseline").click()
    at.run()
    assert not at.exception
    assert ResultsStore(data_dir).baselines()["golden|c|hybrid"]["metrics"]["mrr"] == 0.8


def test_configuration_management(data_dir):
    at = _app().run()
    at.text_input(key="cfg_save_name").input("mine")
    at.button(key="cfg_save").click()
    at.run()
    assert not at.exception and ConfigStore(data_dir).list() == ["mine"]
    assert ConfigStore(data_dir).load("mine").embedding.embedder == "hash"
    at.text_input(key="cfg_dup_name").input("mine 2")
    at.button(key="cfg_dup").click()
    at.run()
    assert ConfigStore(data_dir).list() == ["mine", "mine 2"]
    at.selectbox(key="cfg_pick").set_value("mine")
    at.button(key="cfg_delete").click()
    at.run()
    assert not at.exception and ConfigStore(data_dir).list() == ["mine 2"]
    at.text_input(key="cfg_save_name").input("bad/name")
    at.button(key="cfg_save").click()
    at.run()
    assert any("Configuration name" in e.value for e in at.error)


def test_bad_beir_folder_shows_a_message(data_dir):
    at = _app().run()
    at.radio[0].set_value("BEIR folder")
    at.run()
    at.text_input(key="eval_beir_path").input(str(data_dir / "nope"))
    at.run()
    assert not at.exception
    assert any("does not exist" in e.value for e in at.error)


def test_prefill_selects_the_golden_set(data_dir):
    at = _app(prefill={"page": "evaluate", "question_set": "golden"}).run()
    assert not at.exception and at.radio[0].value == "Built-in golden set"
    assert "prefill" not in at.session_state


def test_sweep_runs_a_grid_and_draws_the_heatmap(docs, data_dir):
    at = _app().run()
    at.multiselect(key="eval_sw_mt").set_value([256, 512])
    at.multiselect(key="eval_sw_k").set_value([3])
    at.multiselect(key="eval_sw_s").set_value(["keyword"])
    _button(at, "Run sweep").click()
    at.run()
    assert not at.exception, at.exception
    assert runner_for(data_dir).jobs(limit=1)[0].kind == "sweep"
    finish_jobs(at)
    assert not at.exception, at.exception
    runs = ResultsStore(data_dir).list()
    assert [(r["label"], r["status"], len(r["configs"])) for r in runs] == [("sweep", "complete", 2)]
    assert [c.value for c in at.caption if c.value.startswith("Sweep ")][0].endswith("on 'golden' (complete)")
    assert len(at.tabs[2].get("plotly_chart")) == 1  # the heatmap in the Sweep tab
    assert "Cancel" not in [b.label for b in at.button] and not at.get("progress")


def test_bundle_export_offers_a_download(docs, data_dir, monkeypatch):
    import rag_core.evaluation.bundle

    built = []
    real = rag_core.evaluation.bundle.export_bundle
    monkeypatch.setattr(rag_core.evaluation.bundle, "export_bundle", lambda *a, **k: built.append(1) or real(*a, **k))
    ResultsStore(data_dir).save(_hand_run("run-1", 0.8))
    at = _app().run()
    assert not at.exception
    downloads = at.get("download_button")
    assert any("Download bundle" in str(d.proto.label) for d in downloads)
    assert built == []  # built on click, not on every rerun of the page


def test_delete_a_stored_run(data_dir):
    store = ResultsStore(data_dir)
    store.save(_hand_run("run-1", 0.8))
    store.set_baseline(store.load("run-1"), "c", "hybrid")
    at = _app().run()
    assert any("Baselines on this question set: c · hybrid (run run-1)" in c.value for c in at.caption)
    at.button(key="eval_delete_run").click()
    at.run()
    assert not at.exception and store.list() == []
    assert any("No evaluation has been run yet" in i.value for i in at.info)


def test_beir_folder_question_set_runs_on_its_own_index(data_dir, tmp_path):
    import json

    folder = tmp_path / "minibeir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "Aspirin", "text": "Aspirin relieves headaches."}) + "\n"
        + json.dumps({"_id": "d2", "title": "Coffee", "text": "Coffee lowers liver disease risk."}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "aspirin headaches"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    at = _app().run()
    at.radio[0].set_value("BEIR folder")
    at.run()
    at.text_input(key="eval_beir_path").input(str(folder))
    at.run()
    assert any("**minibeir**: 1 questions" in c.value for c in at.caption)
    at.multiselect(key="eval_strategies").set_value(["keyword"])
    _button(at, "Run evaluation").click()
    finish_jobs(at.run())
    assert not at.exception, at.exception
    run = ResultsStore(data_dir).latest(1)[0]
    assert run.question_set["kind"] == "beir" and run.status == "complete"
    assert run.records[0]["metrics"]["mrr"] == 1.0 and run.records[0]["hits"][0]["chunk_id"] == "d1"


def _slow_questions(monkeypatch, seconds: float = 0.2):
    """Every question of a run takes ``seconds`` (a run long enough to leave, come back to and cancel)."""
    import time

    import rag_core.evaluation.runner as runner_module

    real = runner_module.default_execute

    def slow(*args, **kwargs):
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner_module, "default_execute", slow)


def test_a_run_goes_on_while_visiting_other_pages_and_opens_when_it_ends(docs, data_dir, monkeypatch):
    ResultsStore(data_dir).save(_hand_run("run-1", 0.9))  # an older run: the new one must replace it on screen
    _slow_questions(monkeypatch, 0.05)
    at = studio_app(HASH_CONFIG)
    at.run()
    at.switch_page("views/evaluate.py").run()
    at.multiselect(key="eval_strategies").set_value(["keyword"]).run()
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    [job] = [j for j in runner_for(data_dir).active() if j.kind == "evaluation"]
    at.switch_page("views/retrieval_lab.py").run()  # away, and back below
    assert not at.exception
    # Every page's sidebar follows it (a fresh session: AppTest keeps the sidebar of a session's first run only).
    other = studio_app(HASH_CONFIG)
    other.run()
    # (Home may have queued the choice of the demo question too, once the run indexed the documents)
    [progress] = [p.proto.text for p in other.sidebar.get("progress") if p.proto.text.startswith("Evaluation")]
    assert progress.startswith("Evaluation on 'golden': eval\\-test × keyword"), progress
    assert progress.endswith(("s left", "min left", "estimating…")), progress  # with an ETA
    assert "Stop after the current question: the questions already measured are kept as a cancelled run." in [
        b.help for b in other.sidebar.button if b.label == "Cancel"]
    at.switch_page("views/evaluate.py").run()
    assert any("Runs in the background" in i.value for i in at.info)
    finish_jobs(at)
    new_id = runner_for(data_dir).get(job.id).result
    assert new_id and ResultsStore(data_dir).load(new_id).status == "complete"
    assert next(s for s in at.selectbox if s.label == "Run").value.endswith(new_id)  # opened, not run-1
    assert any(f"run {new_id} complete" in _plain(s.value) for s in at.success)


def test_cancel_keeps_what_was_measured_as_a_cancelled_run(docs, data_dir, monkeypatch):
    _slow_questions(monkeypatch, 0.2)
    at = _app().run()
    at.multiselect(key="eval_strategies").set_value(["keyword"])
    _button(at, "Run evaluation").click().run()
    job = runner_for(data_dir).active()[0]
    cancel = next(b for b in at.button if b.label == "Cancel")
    assert "questions already measured are kept" in cancel.help
    # Cancel once a question has been measured: a fixed wait cancelled a loaded machine's run while it was still
    # indexing, before its first question (0 records kept).
    deadline = time.monotonic() + 60
    while runner_for(data_dir).get(job.id).steps_done < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    cancel.click().run()
    assert not at.exception, at.exception
    finished = runner_for(data_dir).wait(job.id, 60)
    assert finished.state == "cancelled" and "what was measured is kept" in finished.message
    at.run()
    run = ResultsStore(data_dir).load(finished.result)
    assert run.status == "cancelled" and 0 < len(run.records) < len(load_golden().questions)
    assert any("cancelled" in w.value for w in at.warning)
    assert next(s for s in at.selectbox if s.label == "Run").value.endswith(f"· cancelled · {run.id}")


@pytest.mark.parametrize("name", ["bad/name<b>", "", "x" * 81])
def test_bad_configuration_name_says_what_a_name_may_hold(data_dir, name):
    at = _app().run()
    at.text_input(key="cfg_save_name").input(name)
    at.button(key="cfg_save").click()
    at.run()
    assert not at.exception and ConfigStore(data_dir).list() == []
    assert [e.value for e in at.error] == [
        f"Configuration name: '{name}' is not a valid configuration name: use 1–80 letters, digits, spaces, '_', "
        "'.' or '-'"]


def test_validation_errors_are_shown_without_pydantic_noise():
    def page():
        from rag_core.config import RetrievalConfig
        from ui import state

        state.guarded(lambda: RetrievalConfig(initial_k=0, rrf_k="many"), "Retrieval settings")

    at = AppTest.from_function(page).run()
    assert not at.exception
    message = at.error[0].value
    assert message.startswith("Retrieval settings: rrf_k: Input should be a valid integer")
    assert "initial_k: Input should be greater than or equal to 1" in message
    assert "pydantic.dev" not in message and "input_value" not in message


def test_imported_and_duplicated_configurations_are_listed_at_once(data_dir):
    at = _app().run()
    exported = RAGConfig(name="from-elsewhere").model_dump_json().encode()
    at.file_uploader(key="cfg_import").set_value(("from-elsewhere.json", exported, "application/json")).run()
    at.button(key="cfg_import_go").click().run()
    assert not at.exception
    assert "Imported 'from-elsewhere'." in [s.value for s in at.success]
    assert at.selectbox(key="cfg_pick").options == ["from-elsewhere"]  # the list already holds it
    at.text_input(key="cfg_dup_name").input("twin")
    at.button(key="cfg_dup").click().run()
    assert "Saved a copy as 'twin'." in [s.value for s in at.success]
    assert at.selectbox(key="cfg_pick").options == ["from-elsewhere", "twin"]
    at.selectbox(key="cfg_pick").set_value("twin")
    at.button(key="cfg_delete").click().run()
    assert "Deleted 'twin'." in [s.value for s in at.success]  # was lost to the rerun
    assert at.selectbox(key="cfg_pick").options == ["from-elsewhere"]


def test_bundle_import_says_what_it_restored_in_words(docs, data_dir):
    from rag_core.evaluation.bundle import export_bundle

    run = _hand_run("run-1", 0.8)
    run.configs = [HASH_CONFIG.model_dump()]
    run.records = [{**r, "config": HASH_CONFIG.name} for r in run.records]  # a bundle's records are its configs'
    data = export_bundle(run, docs.list(), include_documents=True, trace_question_ids=[])
    at = _app().run()
    at.file_uploader(key="bundle_upload").set_value(("bundle.json", data.encode(), "application/json")).run()
    at.button(key="bundle_import").click().run()
    assert not at.exception
    assert [s.value for s in at.success] == [
        "Imported run run-1 (0 questions, 0 agent traces); configurations: 'eval-test'; documents: 0 new of 2. "
        "It is listed in the Results tab."]


def test_choices_survive_a_visit_to_another_page(data_dir):
    results = ResultsStore(data_dir)
    for run in (_hand_run("run-1", 1.0), _hand_run("run-2", 0.5)):
        results.save(run)
    ConfigStore(data_dir).save(HASH_CONFIG.model_copy(update={"name": "saved"}))
    at = studio_app(HASH_CONFIG)
    at.run()
    at.switch_page("views/evaluate.py").run()
    run_box = next(s for s in at.selectbox if s.label == "Run")
    run_box.set_value(next(o for o in run_box.options if o.endswith("run-1"))).run()
    at.radio(key="eval_vs_k").set_value("recall").run()
    at.selectbox(key="eval_im").set_value("mrr").run()
    at.multiselect(key="eval_configs").select("saved").run()
    at.multiselect(key="eval_strategies").unselect("agent").run()
    at.multiselect(key="eval_sw_k").unselect(3).run()
    at.selectbox(key="eval_sw_m").set_value("ndcg@10").run()
    at.selectbox(key="cfg_pick").set_value("saved").run()
    at.radio[0].set_value("BEIR folder").run()
    at.text_input(key="eval_beir_path").input(str(data_dir / "nope")).run()
    at.text_input(key="eval_beir_split").input("dev").run()
    assert not at.exception
    visit_another_page(at, "views/evaluate.py")
    assert at.radio[0].value == "BEIR folder"
    assert at.text_input(key="eval_beir_path").value == str(data_dir / "nope")
    assert at.text_input(key="eval_beir_split").value == "dev"
    assert next(s for s in at.selectbox if s.label == "Run").value.endswith("run-1")
    assert at.radio(key="eval_vs_k").value == "recall"
    assert at.selectbox(key="eval_im").value == "mrr"
    assert at.multiselect(key="eval_configs").value == ["(active configuration)", "saved"]
    assert at.multiselect(key="eval_strategies").value == ["vector", "keyword", "hybrid"]
    assert at.multiselect(key="eval_sw_k").value == [5, 10]
    assert at.selectbox(key="eval_sw_m").value == "ndcg@10"
    assert at.selectbox(key="cfg_pick").value == "saved"


def test_an_uploaded_question_file_is_still_used_after_a_visit_to_another_page(data_dir):
    questions = b"question,answer_text\nWhat is the default port?,8080\nHow long is the timeout?,30 seconds\n"
    at = studio_app(HASH_CONFIG)
    at.run()
    at.switch_page("views/evaluate.py").run()
    at.radio[0].set_value("Upload CSV/JSONL").run()
    at.file_uploader(key="eval_upload").set_value(("mine.csv", questions, "text/csv")).run()
    assert any(c.value.startswith("**") and "2 questions" in c.value for c in at.caption)
    visit_another_page(at, "views/evaluate.py")
    assert at.radio[0].value == "Upload CSV/JSONL"
    captions = [c.value for c in at.caption]
    assert any("**mine\\.csv**, uploaded earlier" in c for c in captions)
    assert any("2 questions" in c for c in captions)
    assert next(b for b in at.button if b.label == "Run evaluation").disabled is False


def test_demo_step_four_shows_the_latest_leaderboard_at_once(data_dir):
    ResultsStore(data_dir).save(_hand_run("run1", 0.8))
    at = _app(prefill={"page": "evaluate", "question_set": "golden", "leaderboard": True}).run()
    assert not at.exception
    assert at.tabs[1].label == RESULTS_TAB  # (which tab opens first is checked in the browser suite)
    board = at.tabs[1].dataframe[0].value
    assert len(board) == 1 and "mrr" in board.columns
    assert at.tabs[1].dataframe[0].proto.placeholder == "–"  # an agent-only metric of a search row: a dash
    assert len(ResultsStore(data_dir).list()) == 1  # nothing re-run when a run exists


def test_demo_step_four_runs_an_evaluation_when_there_is_none(docs, data_dir):
    at = _app(prefill={"page": "evaluate", "question_set": "golden", "leaderboard": True}).run()
    assert not at.exception, at.exception
    assert any("one is running now" in i.value for i in at.tabs[1].info)
    at.session_state["prefill"] = {"page": "evaluate", "question_set": "golden", "leaderboard": True}
    at.run()  # the demo's step 4 again while the run is under way starts no second one
    assert len(runner_for(data_dir).jobs()) == 1
    finish_jobs(at)
    assert not at.exception, at.exception
    runs = ResultsStore(data_dir).list()
    assert len(runs) == 1 and runs[0]["status"] == "complete"
    assert sorted(ResultsStore(data_dir).load(runs[0]["id"]).strategies) == ["agent", "hybrid", "keyword", "vector"]
    board = at.tabs[1].dataframe[0].value
    assert len(board) == 4


def test_saving_and_loading_a_configuration_say_what_they_do(data_dir, spinners, monkeypatch):
    import ui.state

    seen, index_for = [], ui.state.index_for
    monkeypatch.setattr(ConfigStore, "save", lambda self, config, _save=ConfigStore.save: (
        seen.append(("save", list(spinners))), _save(self, config))[1])
    monkeypatch.setattr(ui.state, "index_for",
                        lambda config: seen.append(("open", list(spinners))) or index_for(config))
    at = _app().run()
    seen.clear()
    at.text_input(key="cfg_save_name").input("mine")
    at.button(key="cfg_save").click().run()
    assert not at.exception and "Saved 'mine'." in [s.value for s in at.success]
    saving = ["Saving the configuration 'mine' and opening its index…"]
    assert ("save", saving) in seen and ("open", saving) in seen  # the index of the new active config opens too
    seen.clear()
    at.button(key="cfg_load").click().run()
    assert ("open", ["Loading the configuration 'mine' and opening its index (a new embedder loads its model)…"]) \
        in seen


def test_starting_a_run_says_what_it_does(docs, data_dir, spinners, monkeypatch):
    import rag_core.evaluation.background as background

    seen, submit = [], background.submit_evaluation
    monkeypatch.setattr("ui.evaluate.eval_jobs.submit_evaluation",
                        lambda *a, **k: seen.append(list(spinners)) or submit(*a, **k))
    at = _app().run()
    at.multiselect(key="eval_strategies").set_value(["keyword"])
    _button(at, "Run evaluation").click().run()
    finish_jobs(at)
    assert seen == [["Starting the evaluation run: loading the embedding model and queuing the job…"]]


def test_a_bundle_replay_runs_as_a_job_and_shows_both_leaderboards(docs, data_dir):
    from rag_core.config import get_settings
    from rag_core.evaluation.bundle import export_bundle
    from rag_core.evaluation.runner import run_evaluation
    from rag_core.services import open_index

    golden = load_golden()
    run = run_evaluation(golden, [HASH_CONFIG], ["keyword"], settings=get_settings(), documents=docs.list(),
                         index_factory=lambda c: open_index(c, get_settings()))
    data = export_bundle(run, docs.list(), include_documents=True, trace_question_ids=[])
    at = _app().run()
    at.file_uploader(key="bundle_upload").set_value(("bundle.json", data.encode(), "application/json")).run()
    at.button(key="bundle_replay").click().run()
    assert not at.exception, at.exception
    [job] = runner_for(data_dir).jobs()
    assert job.kind == "evaluation" and job.settings["label"] == "replay of bundle"
    finish_jobs(at)
    assert not at.exception, at.exception
    replayed = ResultsStore(data_dir).load(runner_for(data_dir).get(job.id).result)
    assert replayed.label == "replay of bundle" and replayed.status == "complete"
    assert "Bundle results (left) and this machine's replay (right):" in [m.value for m in at.tabs[4].markdown]
    left, right = at.tabs[4].dataframe[-2:]
    assert len(left.value) == len(right.value) == 1
    assert right.value["ndcg@10"][0] == run.summary[0]["ndcg@10"]  # same documents, same settings: same score


def test_after_a_reload_the_form_shows_the_running_jobs_set_and_settings(docs, data_dir, monkeypatch):
    # Issue 35 item 10: after a reload the form reset to "golden: 60 questions" above a drafted set's run.
    import threading

    import rag_core.evaluation.runner as runner_module
    from rag_core.evaluation.question_sets import QuestionSetStore
    from rag_core.evaluation.questions import Question
    from ui.evaluate.draft_view import SAVED_KEY
    from ui.evaluate.evaluate_view import SOURCE_KEY, SOURCES

    drafted = [Question(id=f"d{i}", question=f"What is the default port, question {i}?", intent="fact",
                        evidence=[{"file": "configuration.md", "heading_path": [],
                                   "spans": ["Port for the REST API and web console"]}]) for i in range(4)]
    QuestionSetStore(data_dir).save("ours", drafted, label="drafted from our docs")
    QuestionSetStore(data_dir).save("another", drafted[:2], label="drafted too")
    release, real = threading.Event(), runner_module.default_execute
    monkeypatch.setattr(runner_module, "default_execute",
                        lambda *args, **kwargs: release.wait(60) and real(*args, **kwargs))
    try:
        at = _app().run()
        at.radio(key=SOURCE_KEY).set_value(SOURCES[3]).run()
        at.selectbox(key=SAVED_KEY).set_value("ours").run()
        at.multiselect(key="eval_strategies").set_value(["keyword", "hybrid"]).run()
        _button(at, "Run evaluation").click().run()
        assert not at.exception, at.exception
        [job] = [j for j in runner_for(data_dir).active() if j.kind == "evaluation"]
        assert job.settings["question_set_kind"] == "drafted"
        reloaded = _app().run()  # a reload: a new session, the job still running
        assert not reloaded.exception, reloaded.exception
        assert reloaded.radio(key=SOURCE_KEY).value == SOURCES[3]
        assert reloaded.selectbox(key=SAVED_KEY).value == "ours"
        assert reloaded.multiselect(key="eval_strategies").value == ["keyword", "hybrid"]
        assert any(c.value.startswith("**ours**: 4 questions") for c in reloaded.caption)
        assert not any(c.value.startswith("**golden**") for c in reloaded.caption)
        assert any("An evaluation is running" in i.value and "the form below shows its question set" in i.value
                   for i in reloaded.info)
        reloaded.radio(key=SOURCE_KEY).set_value(SOURCES[0]).run()  # the person's own choice then stays
        assert reloaded.radio(key=SOURCE_KEY).value == SOURCES[0]
        assert any(c.value.startswith("**golden**") for c in reloaded.caption)
    finally:
        release.set()
        runner_for(data_dir).wait(job.id, 120)
