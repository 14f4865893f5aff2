"""The Agent Playground with a local model in a real browser: the llm-answer answer streams in, cites its chunks,
and a planted image in the answer is not fetched (Debian chromium, Playwright, a llama.cpp-like server)."""

from __future__ import annotations

import pytest

from tests.e2e.serving import require_browser, serve_app
from tests.e2e.test_browser import (  # noqa: F401 - the browser and page fixtures are shared
    _check_clean,
    _open,
    _settle,
    browser,
    page,
)
from tests.fakes import openai_server as fake

pytestmark = pytest.mark.browser

ANSWER = ("The REST API listens on port 8080 by default [1]. Change it with the server port setting in the "
          "configuration file [1]. ![logo](http://127.0.0.1:9/leak.png)")


@pytest.fixture(scope="module")
def llm_app(tmp_path_factory):
    require_browser()
    # 30 words at 12 tokens/s: the answer takes about 2.5 s to arrive, piece by piece.
    with fake.LlamaCppServer([fake.answer(ANSWER)], tokens_per_s=12, route="keyword") as server, serve_app(
            tmp_path_factory.mktemp("browser_llm_data"), {"RAG_LLM_BASE_URL": server.base_url,
                                                          "RAG_LLM_MODEL": "smollm2", "RAG_LLM_API_KEY": "x"},
            samples=True) as url:
        yield url, server


def test_llm_answer_streams_cites_and_fetches_nothing(llm_app, page):  # noqa: F811 - the shared fixture
    url, server = llm_app
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "leak" in r.url else None)
    _open(page, url, "Agent Playground")
    page.locator('[data-testid="stSidebar"]').get_by_text("llm-answer", exact=True).click()
    _settle(page)
    chat = page.locator('[data-testid="stChatInputTextArea"]')
    chat.fill("What is the default port of the REST API?")
    chat.press("Enter")
    # While the model writes, the answer grows under a cursor; it is replaced by the cited answer at the end.
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
        .some(e => e.innerText.includes('port 8080') && e.innerText.includes('▌'))""", timeout=180_000)
    _settle(page, 180_000)
    text = page.locator('[data-testid="stChatMessage"]').last.inner_text()
    assert "listens on port 8080 by default" in text and "▌" not in text
    assert "[image: logo" in text and "not one of the" not in text
    # The samples never mention port 8080: the cited answer is invented, and marked so (it used to pass as grounded)
    assert "Not grounded" in text and "8080" in text.split("Not grounded", 1)[1]
    assert page.locator('[data-testid="stButton"] button').filter(has_text="attach_file").count() >= 1  # a citation
    assert not fetched, f"the planted image was fetched: {fetched}"
    sent = [r["json"] for r in server.requests if r["json"].get("stream")]
    assert len(sent) == 1 and "tools" not in sent[0]
    _check_clean(page, "agent_llm_answer")
