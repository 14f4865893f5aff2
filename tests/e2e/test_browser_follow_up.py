"""A follow-up question in one Agent Playground conversation, in a real browser (Debian chromium via Playwright,
marker ``browser``) on the sample documents as ``make run`` serves them (offline policy).

A follow-up that shares words with the first question but asks about something else must be answered from its own
evidence: the agent searches again for it and quotes a passage about the new topic, not the first answer's
passages (issue 25: "How do I add a dependency from a git repository?" then "How do I publish a package?" was
answered with the git passages, without a search).
"""

from __future__ import annotations

import pytest

from tests.e2e.serving import require_browser, serve_app
from tests.e2e.test_browser import _check_clean, _open, _settle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    require_browser()
    with serve_app(tmp_path_factory.mktemp("follow_up_data"), samples=True) as url:
        yield url


def _ask(page, question: str) -> str:
    """Ask in the chat; the text of the agent's answer message (its steps, answer and citations)."""
    chat = page.locator('[data-testid="stChatInputTextArea"]')
    chat.fill(question)
    chat.press("Enter")
    _settle(page, 300_000)
    messages = page.locator('[data-testid="stChatMessage"]')
    assert messages.count() % 2 == 0, "a question without its answer"
    return messages.last.inner_text()


def _conversation(page, app_url: str, first: str, follow_up: str) -> tuple[str, str]:
    _open(page, app_url, "Agent Playground")
    return _ask(page, first), _ask(page, follow_up)


def test_a_follow_up_sharing_a_word_searches_again_and_quotes_its_own_topic(app_url, page):
    first, second = _conversation(page, app_url, "How do I create a backup?", "How do I create a job?")
    assert "Searched paragraphs for “How do I create a backup?”" in first
    assert "wrenctl backup create" in first  # Operations guide › Creating a backup
    # The follow-up's own steps: a search for the new question, then an answer quoting the job passage.
    assert "Searched paragraphs for “How do I create a job?”" in second, second
    assert "client.create_job(" in second  # REST API reference › Create a job
    assert "wrenctl backup create" not in second, "the follow-up was answered with the first question's passage"
    _check_clean(page, "agent_follow_up")


def test_a_follow_up_on_a_neighbouring_section_quotes_that_section(app_url, page):
    first, second = _conversation(page, app_url, "How do I rotate an API key?",
                                  "How do I rotate the database password?")
    # Operations guide › Rotating an API key: a how-to question is answered with its steps and their command
    key_passage = "wrenctl keys rotate key_9TQ2M4 --grace 48h"
    assert key_passage in first, first
    # The first context holds the database-password section too: reused (no search needed) or searched again,
    # the answer must quote that section, ranked for the new question.
    assert "ALTER ROLE wrenfall PASSWORD" in second, second  # Operations guide › Rotating the database password
    assert key_passage not in second, "the follow-up was answered with the first question's passage"
