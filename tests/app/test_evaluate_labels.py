"""Runs of different settings saved under one configuration name are labelled by what differs (issue 25), in the
run picker, the leaderboard, the charts, the drill-down and Home's latest leaderboard."""

from __future__ import annotations

from pathlib import Path

from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun
from tests.app.apptest_helpers import page_app

ROOT = Path(__file__).resolve().parents[2]
HASH_CONFIG = RAGConfig(name="eval-test", embedding=EmbeddingConfig(embedder="hash"))
METRICS = ("hit@1", "hit@3", "hit@5", "hit@10", "recall@5", "recall@10", "mrr", "ndcg@10")


def _run(run_id: str, day: int, config: RAGConfig, score: float) -> EvalRun:
    records = [{"question_id": f"q{i}", "question": f"Question {i}?", "intent": "fact", "config": config.name,
                "strategy": strategy, "metrics": dict.fromkeys(METRICS, score), "context_tokens": 10, "steps": 1,
                "latency_ms": 2.0, "hits": [], "trace": {}, "route": "hybrid"}
               for strategy in ("hybrid", "agent") for i in range(3)]
    return EvalRun(id=run_id, created=f"2026-01-0{day}T00:00:00+00:00",
                   question_set={"name": "golden", "kind": "golden", "questions": []}, configs=[config.model_dump()],
                   strategies=["hybrid", "agent"], records=records, status="complete")


def _two_defaults(data_dir) -> None:
    store = ResultsStore(data_dir)
    store.save(_run("run-1", 1, RAGConfig(name="default"), 0.9))
    store.save(_run("run-2", 2, RAGConfig(name="default", chunking=ChunkingConfig(max_tokens=256)), 0.8))


def test_two_runs_of_one_name_are_told_apart_on_the_evaluate_page(data_dir):
    _two_defaults(data_dir)
    at = page_app(str(ROOT / "views" / "evaluate.py"), HASH_CONFIG).run()
    assert not at.exception
    picker = at.selectbox[[s.label for s in at.selectbox].index("Run")]
    assert [o.split(" · golden · ")[1].rsplit(" · complete", 1)[0] for o in picker.options] == [
        "default · max_tokens 256", "default"]
    assert set(at.dataframe[0].value["config"]) == {"default · max_tokens 256"}  # the newest run's leaderboard
    charts = " ".join(str(c.proto.spec) for c in at.get("plotly_chart"))
    assert "default · max_tokens 256 · hybrid" in charts
    assert any(e.label.startswith("default · max_tokens 256 · hybrid — ") for e in at.expander)  # drill-down
    assert "default · max_tokens 256 · hybrid" in at.selectbox(key="eval_baseline_row").options
    picker.set_value(picker.options[1]).run()  # the older run: its settings are the defaults
    assert set(at.dataframe[0].value["config"]) == {"default"}


def test_a_baseline_saved_under_a_label_keeps_the_configuration_name(data_dir):
    _two_defaults(data_dir)
    at = page_app(str(ROOT / "views" / "evaluate.py"), HASH_CONFIG).run()
    next(b for b in at.button if b.label == "Save baseline").click()
    at.run()
    assert not at.exception
    assert set(ResultsStore(data_dir).baselines()) == {"golden|default|hybrid"}  # the first row: hybrid


def test_home_leaderboard_labels_by_what_differs(data_dir):
    _two_defaults(data_dir)
    at = page_app(str(ROOT / "views" / "home.py"), HASH_CONFIG).run()
    assert not at.exception
    board = next(d.value for d in at.dataframe if "config" in d.value.columns)
    assert set(board["config"]) == {"default · max_tokens 256"}


def test_a_label_from_a_stored_run_is_plain_text_in_the_charts(data_dir):
    """A run file's configuration is stored data: what its label shows is escaped where Plotly reads markup."""
    store = ResultsStore(data_dir)
    store.save(_run("run-1", 1, RAGConfig(name="default"), 0.9))
    hostile = _run("run-2", 2, RAGConfig(name="default"), 0.8)
    hostile.configs[0]["embedding"]["embedder"] = '<a href="https://example.org">x</a>'
    store.save(hostile)
    at = page_app(str(ROOT / "views" / "evaluate.py"), HASH_CONFIG).run()
    assert not at.exception
    charts = " ".join(str(c.proto.spec) for c in at.get("plotly_chart"))
    assert "default · embedder &lt;a href=" in charts and "<a href" not in charts


def _two_configs_run(first: RAGConfig, second: RAGConfig) -> EvalRun:
    runs = [_run("run-x", 1, c, score) for c, score in ((first, 0.7), (second, 0.7))]
    return EvalRun(id="run-twins", created="2026-01-03T00:00:00+00:00", question_set=runs[0].question_set,
                   configs=[first.model_dump(), second.model_dump()], strategies=["hybrid", "agent"],
                   records=runs[0].records + runs[1].records, status="complete")


def test_leaderboard_rows_of_identical_settings_say_so(data_dir):
    """Issue 35.4: ``chunks-256`` rewritten to 512, then ``chunks-512`` saved: two identical rows, no note."""
    chunks512 = ChunkingConfig(max_tokens=512)
    ResultsStore(data_dir).save(_two_configs_run(RAGConfig(name="chunks-256", chunking=chunks512),
                                                 RAGConfig(name="chunks-512", chunking=chunks512)))
    at = page_app(str(ROOT / "views" / "evaluate.py"), HASH_CONFIG).run()
    assert not at.exception
    board = at.dataframe[0].value
    notes = dict(zip(board["config"] + " · " + board["strategy"], board["note"], strict=True))
    assert notes == {"chunks-256 · hybrid": "same settings as chunks-512", "chunks-512 · hybrid":
                     "same settings as chunks-256", "chunks-256 · agent": "same settings as chunks-512",
                     "chunks-512 · agent": "same settings as chunks-256"}


def test_leaderboard_rows_of_other_settings_have_no_note(data_dir):
    ResultsStore(data_dir).save(_two_configs_run(RAGConfig(name="chunks-256", chunking=ChunkingConfig(max_tokens=256)),
                                                 RAGConfig(name="chunks-512", chunking=ChunkingConfig(max_tokens=512))))
    at = page_app(str(ROOT / "views" / "evaluate.py"), HASH_CONFIG).run()
    assert not at.exception and "note" not in at.dataframe[0].value.columns
