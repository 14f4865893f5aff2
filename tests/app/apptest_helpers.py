"""Helpers for page tests (imported by the test modules; not a test module itself)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from rag_core.config import RAGConfig


def page_app(page: str, config: RAGConfig, timeout: float = 120, **session) -> AppTest:
    """An AppTest of ``page`` whose active configuration is ``config``, with extra session state."""
    at = AppTest.from_file(page, default_timeout=timeout)
    at.session_state["active_config"] = config
    for key, value in session.items():
        at.session_state[key] = value
    return at


APP = str(Path(__file__).resolve().parents[2] / "app.py")


def studio_app(config: RAGConfig, timeout: float = 120, **session) -> AppTest:
    """An AppTest of the whole app (the router with every page), for tests that move between pages."""
    return page_app(APP, config, timeout, **session)


def visit_another_page(at: AppTest, page: str, back: str = "views/home.py") -> AppTest:
    """Go to ``back`` (another page: Streamlit forgets the widgets ``page`` drew), then return to ``page``."""
    at.switch_page(back).run()
    assert not at.exception
    at.switch_page(page).run()
    assert not at.exception
    return at


def finish_jobs(at: AppTest | None = None, timeout: float = 120) -> AppTest | None:
    """Wait for the background jobs of this test's data directory, then rerun ``at`` to show their result."""
    from rag_core.config import get_settings
    from rag_core.serving.jobs import runner_for

    runner = runner_for(get_settings().data_dir)
    for job in runner.active():
        runner.wait(job.id, timeout)
    if at is not None:
        at.run()
    return at
