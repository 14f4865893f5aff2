"""A tuning study as a background job: refused requests, progress and result files, cancel keeps the trials,
parameter importance from the stored study (and the message when there are too few trials)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.config import get_settings
from rag_core.evaluation.questions import Question, QuestionSet
from rag_core.serving.jobs import JobRunner
from rag_core.serving.tuning_jobs import (
    job_spec,
    load_result,
    param_importances,
    progress_fraction,
    read_progress,
    save_result,
    stored_results,
    submit_tune,
)
from rag_core.tuning import TuneSpec
from tests.fakes.tune_result import FakeTune, fake_result

QUESTIONS = QuestionSet(name="set", kind="upload", questions=[Question(id="q1", question="Why?", answer_texts=["x"])])


@pytest.fixture
def runner(data_dir):
    return JobRunner(data_dir)


def test_a_study_without_questions_or_with_a_beir_set_is_refused(runner):
    settings = get_settings()
    spec = TuneSpec(collection="docs")
    with pytest.raises(ValueError, match="pick a question set, or draft"):
        submit_tune(runner, spec, None, settings=settings, tune=FakeTune(settings))
    with pytest.raises(ValueError, match="empty"):
        submit_tune(runner, spec, QuestionSet(name="e", kind="upload", questions=[]), settings=settings,
                    tune=FakeTune(settings))
    beir = QuestionSet(name="b", kind="beir", questions=QUESTIONS.questions)
    with pytest.raises(ValueError, match="BEIR"):
        submit_tune(runner, spec, beir, settings=settings, tune=FakeTune(settings))
    assert not runner.jobs()


def test_progress_is_a_file_and_the_result_is_stored_under_the_jobs_key(runner):
    settings = get_settings()
    fake = FakeTune(settings)
    spec = TuneSpec(collection="docs", minutes=5)
    job = submit_tune(runner, spec, QUESTIONS, settings=settings, tune=fake)
    assert job.kind == "tune" and job_spec(job) == spec
    assert fake.reported.wait(30)
    key = job.settings["key"]
    progress = read_progress(settings, key)
    assert progress.trials_done == 3 and progress.best == 0.62
    assert progress_fraction(spec, progress) == pytest.approx(30 / 270)
    running = runner.get(job.id)
    # 30 s done, 240 s left: the sidebar's ETA follows the study's
    assert (running.steps_done, running.steps_total) == (30, 270) and "3 trials, 1 pruned" in running.step_text
    fake.release.set()
    done = runner.wait(job.id, 30)
    assert done.state == "done" and done.result == key and stored_results(settings) == [key]
    stored = load_result(settings, key)
    assert stored.question_set == "set" and stored.spec == spec and stored.result.significant
    assert "use the tuned configuration" in done.message


def test_cancel_keeps_the_trials_so_far(runner):
    settings = get_settings()
    fake = FakeTune(settings)
    job = submit_tune(runner, TuneSpec(collection="docs", minutes=5), QUESTIONS, settings=settings, tune=fake)
    assert fake.reported.wait(30)
    runner.cancel(job.id)
    done = runner.wait(job.id, 30)
    assert done.state == "cancelled" and done.message.startswith("cancelled: 6 trials")
    assert load_result(settings, done.result).result.status == "cancelled"


def test_unreadable_or_missing_results_say_so(data_dir):
    settings = get_settings()
    with pytest.raises(ValueError, match="no stored tuning result"):
        load_result(settings, "missing")
    with pytest.raises(ValueError, match="not a tuning result name"):
        load_result(settings, "../etc")
    folder = Path(data_dir) / "tuning" / "results"
    (folder / "bad.json").write_text(json.dumps({"job": "bad", "spec": {}, "result": {"study": 1}}))
    with pytest.raises(ValueError, match="unreadable"):
        load_result(settings, "bad")


def test_importance_from_the_stored_study_and_too_few_trials(data_dir):
    settings = get_settings()
    result = fake_result(settings, significant=True)
    importances = param_importances(settings, result)
    assert set(importances) == {"chunking.max_tokens", "retrieval.initial_k"}
    assert all(0.0 <= v <= 1.0 for v in importances.values())
    few = result.model_copy(update={"trials": result.trials[:3]})  # two complete
    assert param_importances(settings, few).startswith("Too few complete trials")
    gone = result.model_copy(update={"study": "no-such-study"})
    assert param_importances(settings, gone).startswith("Parameter importance could not be computed")
    save_result(settings, "k1", "set", TuneSpec(collection="docs"), result)
    assert load_result(settings, "k1").result == result
