"""AppTest of the Home page: the guided demo's four steps and their pre-fills."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.evaluation.questions import load_golden
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun
from rag_core.loaders import load_bytes, load_path
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from rag_core.serving.home_demo import compare
from rag_core.serving.jobs import runner_for
from tests.app.apptest_helpers import finish_jobs, page_app
from ui.safe_text import md_inert
from ui.state import PAGES

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "home.py")
HASH_CONFIG = RAGConfig(name="demo", embedding=EmbeddingConfig(embedder="hash"))


@pytest.fixture
def switched(monkeypatch):
    """Records ``st.switch_page`` targets: a page run alone has no ``st.navigation`` to switch within."""
    targets: list[str] = []
    monkeypatch.setattr(st, "switch_page", targets.append)
    return targets


def _record(qid, question, strategy, recall, tokens):
    return {"question_id": qid, "question": question, "intent": "fact", "config": "default", "strategy": strategy,
            "metrics": {"recall@5": recall, "hit@5": recall, "ndcg@10": recall, "mrr": recall, "hit@1": recall,
                        "recall@10": recall},
            "context_tokens": tokens, "steps": 1, "latency_ms": 1.0, "hits": [], "trace": {}}


def _click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click()
    at.run()
    assert not at.exception
    return at


def test_home_shows_the_demo_before_anything_is_loaded(data_dir):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert [m.label for m in at.metric] == ["Documents loaded", "Saved configurations", "Evaluation runs"]
    assert [m.value for m in at.metric] == ["0", "0", "0"]
    labels = [b.label for b in at.button]
    assert labels == ["Load samples", "Compare splits", "Ask both", "Open leaderboard"]
    assert any("Start with step 1" in i.value for i in at.info)
    assert at.button(key="demo_agent").disabled  # no question chosen without documents: none is made up
    assert any("3. One-shot RAG versus the agent**  \nLoad the sample documents first" in m.value
               for m in at.markdown)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("demo_docs", {"page": "documents", "load_samples": True}),
        ("demo_eval", {"page": "evaluate", "question_set": "golden", "leaderboard": True}),
    ],
)
def test_each_step_prefills_its_page(data_dir, switched, key, expected):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    _click(at, key)
    assert at.session_state["prefill"] == expected
    assert switched == [PAGES[expected["page"]]]


def test_split_step_names_the_sample_document(data_dir, switched):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    _click(at, "demo_split")
    doc_id = load_path(ROOT / "samples" / "configuration.md").id
    assert at.session_state["prefill"] == {"page": "explorer", "doc_id": doc_id, "strategy_b": "fixed"}


def test_latest_leaderboard_comes_from_the_latest_run(data_dir):
    records = [_record("q1", "Easy one?", "hybrid", 1.0, 100), _record("q1", "Easy one?", "agent", 1.0, 90)]
    run = EvalRun(id="r1", created="2026-01-01T00:00:00+00:00", question_set={"name": "golden", "questions": []},
                  configs=[], strategies=["hybrid", "agent"], records=records, status="complete")
    ResultsStore(data_dir).save(run)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert at.subheader[-1].value == "Latest leaderboard" and len(at.dataframe) == 1
    # A metric only the agent has ("said not found" on a multi-part set) is a dash, not "None", for a search row.
    assert at.dataframe[0].proto.placeholder == "–"


@pytest.fixture
def samples(data_dir):
    """The sample documents, stored and indexed with the hash embedder (the active configuration below)."""
    store = DocumentStore(data_dir)
    docs = [load_path(p) for p in sorted((ROOT / "samples").glob("*.md"))]
    for doc in docs:
        store.add(doc)
    open_index(HASH_CONFIG, get_settings()).ingest(docs)
    return docs


def _home(**session) -> AppTest:
    return page_app(PAGE, HASH_CONFIG, timeout=60, **session)


def _step_three(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**3. One-shot RAG versus the agent**"))


def test_opening_home_starts_no_job_and_ask_both_works_meanwhile(samples, data_dir, switched):
    at = _home().run()
    assert not at.exception, at.exception
    assert runner_for(data_dir).jobs() == []  # opening a page is no reason to ask 60 questions twice
    assert "The demo question is not chosen for these documents yet" in _step_three(at)
    assert at.button(key="demo_choose").label == "Prepare the demo"
    _click(at, "demo_agent")  # usable before a question is chosen: the side-by-side view, for one's own question
    assert at.session_state["prefill"] == {"page": "agent", "compare": True}
    assert switched == [PAGES["agent"]]


def test_prepare_the_demo_asks_both_every_golden_question_in_the_background_and_picks_a_gain(samples, data_dir,
                                                                                            switched):
    at = _home().run()
    _click(at, "demo_choose")
    assert "**Preparing the demo…**" in _step_three(at) and not at.button(key="demo_agent").disabled
    [job] = runner_for(data_dir).active()
    assert job.kind == "demo" and job.title == "Choosing the demo question: one-shot vs agent on 60 'golden' questions"
    at.run()  # a rerun meanwhile starts no second job
    assert len(runner_for(data_dir).jobs()) == 1
    finish_jobs(at)
    assert not at.exception, at.exception
    text = _step_three(at)
    assert "**Demo ready:**" in text
    golden = {q.question: q for q in load_golden().questions}
    question = next(q for q in golden if f"*“{md_inert(q)}”*" in text)  # one of the golden questions
    assert "chosen among 60 golden questions by what the two answers quote: the agent's answer quotes " in text
    assert "one search's answer (top 5 hybrid) quotes" in text and ", but not " in text
    # The claim holds on the page it opens: the agent's answer quotes a target the one-shot answer does not.
    comparison = compare(golden[question], open_index(HASH_CONFIG, get_settings()), HASH_CONFIG, get_settings())
    assert comparison.answer_gained
    _click(at, "demo_agent")
    assert at.session_state["prefill"] == {"page": "agent", "question": question, "compare": True}
    assert switched == [PAGES["agent"]]
    _home().run()
    assert len(runner_for(data_dir).jobs()) == 1  # chosen once for these documents and this configuration


def _cancel_the_choice(at, data_dir) -> None:
    """Start choosing the demo question, cancel that job, and rerun the page."""
    _click(at, "demo_choose")
    [job] = runner_for(data_dir).active()
    runner_for(data_dir).cancel(job.id)
    runner_for(data_dir).wait(job.id, 60)
    at.run()
    assert not at.exception


def test_a_cancelled_choice_is_not_restarted_until_asked(samples, data_dir):
    at = _home().run()
    _cancel_the_choice(at, data_dir)
    assert "Choosing the question stopped" in _step_three(at)
    assert at.button(key="demo_choose").label == "Choose the question"
    assert runner_for(data_dir).active() == []
    at.button(key="demo_choose").click().run()
    assert [j.kind for j in runner_for(data_dir).active()] == ["demo"]
    finish_jobs(at)
    assert "but not" in _step_three(at) and not at.button(key="demo_agent").disabled


def test_leaderboard_step_lands_on_the_evaluate_page_in_the_app(data_dir):
    missing = [p for p in PAGES.values() if not (ROOT / p).is_file()]
    if missing:
        pytest.skip(f"the router needs every page; not there yet: {missing}")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    _click(at, "demo_eval")
    assert [t.value for t in at.title] == [":material/leaderboard: Evaluate"]
    assert at.radio[0].value == "Built-in golden set"


def test_no_choice_is_started_for_documents_the_golden_questions_do_not_ask_about(data_dir):
    doc = load_bytes("mine.md", b"# Mine\n\nOur own notes about nothing in the golden set.\n")
    DocumentStore(data_dir).add(doc)
    open_index(HASH_CONFIG, get_settings()).ingest([doc])
    at = _home().run()
    assert not at.exception
    assert runner_for(data_dir).jobs() == []
    assert "Load the sample documents first (step 1)" in _step_three(at) and at.button(key="demo_agent").disabled


def test_split_step_says_the_sample_is_gone_after_it_was_deleted_and_offers_to_restore_it(data_dir, switched):
    # A team's own document stays; the sample configuration.md was deleted (Issue 35, item 9).
    doc = load_bytes("mine.md", b"# Mine\n\nOur own notes.\n")
    DocumentStore(data_dir).add(doc)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    text = next(m.value for m in at.markdown if m.value.startswith("**2. Naive versus structure-aware split**"))
    assert "is no longer loaded" in text and "configuration.md" in text
    assert [b.key for b in at.button if b.key == "demo_split"] == []  # no page opened under the sample's name
    _click(at, "demo_split_restore")
    assert at.session_state["prefill"] == {"page": "documents", "load_samples": True}
    assert switched == [PAGES["documents"]]


def test_a_cancelled_choice_keeps_offering_the_last_prepared_question(samples, data_dir, switched):
    # Issue 35 item 9: after a cancelled job step 3 said "not chosen yet"/stopped with no question until re-prepared.
    from rag_core.serving.home_demo import Showcase, save_showcase

    golden = load_golden().questions[0]
    save_showcase(data_dir, "earlier-index", Showcase(golden.id, golden.question, "the agent found more", 0, 1, 1, 2,
                                                      60))
    at = _home().run()
    _cancel_the_choice(at, data_dir)
    text = _step_three(at)
    assert "stopped" in text and f"*“{md_inert(golden.question)}”*" in text and "serving index" in text
    assert at.button(key="demo_choose").label == "Choose the question"
    _click(at, "demo_agent")
    assert at.session_state["prefill"] == {"page": "agent", "question": golden.question, "compare": True}


def test_step_three_stays_usable_during_indexing_with_the_last_prepared_question(samples, data_dir, switched):
    # Issue 35 item 9: any indexing made step 3 unavailable (no question) until the job and a new choice ended.
    import threading

    from rag_core.serving.home_demo import Showcase, save_showcase

    golden = load_golden().questions[1]
    save_showcase(data_dir, "earlier-index", Showcase(golden.id, golden.question, "the agent found more", 0, 1, 1, 2,
                                                      60))
    release = threading.Event()
    job = runner_for(data_dir).submit_task(lambda handle: "done" if release.wait(60) else "", kind="ingest",
                                           title="Indexing", collection=open_index(HASH_CONFIG, get_settings()).name)
    try:
        at = _home().run()
        assert not at.exception
        text = _step_three(at)
        assert "documents being indexed" in text and "serving index" in text
        assert f"*“{md_inert(golden.question)}”*" in text and not at.button(key="demo_agent").disabled
        _click(at, "demo_agent")
        assert at.session_state["prefill"] == {"page": "agent", "question": golden.question, "compare": True}
    finally:
        release.set()
        runner_for(data_dir).wait(job.id, 60)


def test_after_a_cancelled_indexing_job_step_three_keeps_the_last_prepared_question(samples, data_dir, switched):
    # Issue 35 item 9: a cancelled indexing job left the index's contents without a choice: "not chosen yet".
    from rag_core.serving.home_demo import Showcase, save_showcase

    golden = load_golden().questions[2]
    save_showcase(data_dir, "before-the-cancelled-job", Showcase(golden.id, golden.question, "the agent's answer "
                                                                 "quotes overview.md › Storage", 0, 1, 1, 2, 60))
    at = _home().run()
    assert not at.exception
    text = _step_three(at)
    assert "not chosen for these documents yet" not in text and f"*“{md_inert(golden.question)}”*" in text
    assert "The documents changed since the demo question was chosen" in text
    assert at.button(key="demo_choose").label == "Prepare the demo"
    _click(at, "demo_agent")
    assert at.session_state["prefill"] == {"page": "agent", "question": golden.question, "compare": True}


def test_without_a_win_of_the_agents_answer_step_three_says_so_and_offers_the_best_tie(samples, data_dir):
    from rag_core.serving.home_demo import Showcase, save_showcase, showcase_key

    golden = load_golden()
    question = golden.questions[3]
    key = showcase_key(golden, open_index(HASH_CONFIG, get_settings()).documents(), HASH_CONFIG)
    save_showcase(data_dir, key, Showcase(question.id, question.question, "both answers quote 1 of the 1 answer "
                                          "part(s)", 1, 1, 1, 2, 60, agent_wins=False, agent_quoted=1,
                                          one_shot_quoted=1))
    at = _home().run()
    text = _step_three(at)
    assert "Demo ready" not in text and "**No clear win on these documents:**" in text
    assert "on none of the 60 golden questions does the agent's answer quote more" in text
    assert f"*“{md_inert(question.question)}”*: both answers quote 1 of the 1 answer part(s)" in text
    assert not at.button(key="demo_agent").disabled


def test_the_samples_can_be_removed_from_a_teams_index_leaving_its_own_documents(samples, data_dir):
    # Issue 35 item 9: the samples stayed mixed into a team's index and showed up in its answers.
    from rag_core.retrieval import Retriever

    ours = load_bytes("overview.md", b"# Our overview\n\nOur team's own overview: the widget ships on Fridays.\n")
    DocumentStore(data_dir).add(ours)
    index = open_index(HASH_CONFIG, get_settings())
    index.ingest([ours])
    at = _home().run()
    assert not at.exception
    assert any("of the shipped samples" in c.value for c in at.caption)
    _click(at, "demo_remove_samples")
    assert [d.name for d in DocumentStore(data_dir).list()] == ["overview.md"]  # ours: same name, other content
    assert [row["name"] for row in index.documents()] == ["overview.md"]
    hits = Retriever(index, HASH_CONFIG.retrieval, get_settings()).retrieve("What is the default port?").hits
    assert {h.chunk.doc_id for h in hits} == {ours.id}  # no sample in the team's answers
    assert any("Removed 8 sample document(s)" in s.value for s in at.success)
    assert [b for b in at.button if b.key == "demo_remove_samples"] == []  # nothing left to remove


def test_no_removal_is_offered_when_only_the_samples_are_loaded(samples, data_dir):
    at = _home().run()
    assert [b for b in at.button if b.key == "demo_remove_samples"] == []
