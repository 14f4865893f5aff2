"""Untrusted text stays inert in a real browser: no request leaves for any host but the app's own.

A document and a demo bundle carry remote images, Markdown links, raw HTML and ``<script>`` in every text field;
the LLM policy runs against a loopback OpenAI-compatible server whose answers carry the same. Every page is
visited and the agent asked with both policies, while the browser's requests, a beacon server's hits, dialogs and
Streamlit exception boxes are counted: all must stay at zero.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from tests.e2e.serving import CHROMIUM, REPO, require_browser, serve_app
from tests.fakes import openai_server

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "test-artifacts" / "screenshots"


class Beacon:
    """A loopback HTTP server the hostile texts point at: any hit means the browser fetched a document's URL."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                owner.hits.append(self.path)
                self.send_response(204)
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def hostile(self, field: str) -> str:
        """Markdown that would fetch, link or run something if drawn as is; ``field`` names where it sits."""
        return (f"{field} ![pixel]({self.url}/img-{field}.png?q=secret) [a link]({self.url}/link-{field}) "
                f"<img src='{self.url}/raw-{field}.png' onerror='alert(1)'> <script>alert('{field}')</script> "
                f"<a href='{self.url}/a-{field}'>html link</a> $x^2$ www.beacon.invalid")

    def short(self, field: str) -> str:
        """The same in fewer characters, for names and ids (which have a 300-character limit)."""
        return f"{field} ![p]({self.url}/s-{field}.png) <img src='{self.url}/t-{field}.png'> [l]({self.url}/u)"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class HostileLLM(openai_server.ScriptedOpenAIServer):
    """An OpenAI-compatible server that searches once, then answers with hostile Markdown (and answers any
    request without tools, such as the LLM router's, with hostile text)."""

    def __init__(self, beacon: Beacon) -> None:
        super().__init__()
        self.beacon = beacon
        self.script = self  # ScriptedOpenAIServer pops its next response from ``script``

    def __bool__(self) -> bool:
        return True

    def pop(self, _index: int) -> dict:
        payload = self.requests[-1]["json"]
        if not payload.get("tools"):
            return openai_server.answer(self.beacon.hostile("router"))
        if any(m.get("role") == "tool" for m in payload.get("messages", [])):
            return openai_server.tool_call("done", {"answer": "LLM answer: " + self.beacon.hostile("llm-answer"),
                                                    "citations": []}, call_id="call_done")
        return openai_server.tool_call("search", {"query": "backup retention period"}, call_id="call_search")


def _bundle(beacon: Beacon) -> bytes:
    """A demo bundle with hostile text in every free-text field (configuration names follow their own rule)."""
    from rag_core.config import RAGConfig
    from rag_core.evaluation.bundle import export_bundle
    from rag_core.evaluation.questions import Question, QuestionSet
    from rag_core.evaluation.runner import Outcome, run_evaluation
    from rag_core.loaders import load_bytes
    from rag_core.types import Chunk

    questions = [Question(id=f"q{i} {beacon.short(f'qid{i}')}", question=beacon.hostile(f"question{i}"),
                          intent="fact", answer_texts=[beacon.hostile("answer-text")]) for i in (1, 2)]
    question_set = QuestionSet(name=beacon.short("set-name"), kind="upload", questions=questions,
                               source=beacon.hostile("source"))
    chunk = Chunk(id="c1", doc_id="d1", granularity="paragraph", chunk_type="prose", text=beacon.hostile("hit"),
                  start=0, end=1, tokens=5, heading_path=[beacon.hostile("heading")])

    def execute(question, strategy, config, index, settings):
        if question.startswith("question2") and strategy == "agent":
            raise ValueError(beacon.hostile("record-error"))
        return Outcome(ranked=[(chunk, beacon.short("source-name"))], context_tokens=5, steps=1,
                       trace={"answer": beacon.hostile("trace")}, route=beacon.short("route"),
                       answer=beacon.hostile(f"answer-{strategy}"))

    run = run_evaluation(question_set, [RAGConfig(name="hostile-config")], ["hybrid", "agent"],
                         index_factory=lambda config: None, execute=execute)
    run.note, run.label = beacon.hostile("note"), beacon.short("label")
    doc = load_bytes("bundled-hostile.md", beacon.hostile("bundle-document").encode())
    return export_bundle(run, [doc], trace_question_ids=[q.id for q in questions]).encode()


@pytest.fixture(scope="module")
def beacon():
    server = Beacon()
    yield server
    server.close()


@pytest.fixture(scope="module")
def app(tmp_path_factory, beacon):
    require_browser()
    with HostileLLM(beacon) as llm, serve_app(tmp_path_factory.mktemp("untrusted_browser"), {
            "RAG_LLM_BASE_URL": llm.base_url, "RAG_LLM_MODEL": "hostile-model", "RAG_LLM_API_KEY": "test-key",
            "RAG_LLM_MAX_RETRIES": "0"}) as url:
        yield url, llm


@pytest.fixture
def page(app):
    from playwright.sync_api import sync_playwright

    url = app[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.foreign, page.dialogs = [], []
        own = urlsplit(url).netloc

        def on_request(request):
            parts = urlsplit(request.url)
            if parts.scheme not in ("data", "blob", "about") and parts.netloc != own:
                page.foreign.append(request.url)

        context.on("request", on_request)
        page.on("websocket", lambda ws: on_request(type("R", (), {"url": ws.url.replace("ws", "http", 1)})))
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
        page.app_url = url
        yield page
        context.close()
        browser.close()


_IDLE_JS = """() => !!document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]')
    && !document.querySelector('[data-testid="stSkeleton"]')"""


def _settle(page, timeout_ms: int = 120_000) -> None:
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_timeout(700)
    for _ in range(2):
        page.wait_for_function(_IDLE_JS, timeout=timeout_ms)
        page.wait_for_timeout(700)


def _open(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    _settle(page)


def _check(page, beacon: Beacon, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"untrusted_{name}.png"), full_page=True)
    assert page.locator('[data-testid="stException"]').count() == 0, f"{name}: exception box shown"
    assert "Traceback (most recent call last)" not in page.content(), f"{name}: traceback shown"
    assert page.foreign == [], f"{name}: the browser asked another host: {page.foreign}"
    assert beacon.hits == [], f"{name}: the beacon was fetched: {beacon.hits}"
    assert page.dialogs == [], f"{name}: a script from untrusted text ran: {page.dialogs}"
    assert page.locator(f'img[src^="{beacon.url}"], iframe, [data-testid="stMarkdown"] a[href^="javascript"]'
                        ).count() == 0, f"{name}: an untrusted element was drawn"
    # Links to other hosts are only the marked http(s) links of answers (never a link from raw HTML or a chart).
    unmarked = page.evaluate("""own => [...document.querySelectorAll('a[href]')]
        .filter(a => { try { return new URL(a.href).host !== own } catch (e) { return true } })
        .filter(a => !a.textContent.includes('↗')).map(a => a.outerHTML.slice(0, 200))""",
                             urlsplit(page.app_url).netloc)
    unmarked = [a for a in unmarked if "streamlit.io" not in a and "plotly" not in a]  # the app's own chrome
    assert unmarked == [], f"{name}: unmarked links to other hosts: {unmarked}"


def _expand_all(page) -> None:
    for summary in page.locator('[data-testid="stExpander"] summary >> visible=true').all():
        summary.click()
        page.wait_for_timeout(300)
    _settle(page)


def _ask(page, question: str) -> None:
    chat = page.locator('[data-testid="stChatInputTextArea"]')
    chat.fill(question)
    chat.press("Enter")
    _settle(page, 240_000)


def test_untrusted_text_never_reaches_out(app, page, beacon, tmp_path):
    app_url, llm = app
    document = tmp_path / "hostile-untrusted.md"
    document.write_text(f"# Backups {beacon.hostile('heading')}\n\nThe backup retention period is 30 days. "
                        f"{beacon.hostile('body')}\n\n| key | value |\n|---|---|\n| retention | "
                        f"![cell]({beacon.url}/cell.png) |\n")
    bundle = tmp_path / "hostile-bundle.json"
    bundle.write_bytes(_bundle(beacon))

    page.goto(app_url)
    _settle(page)
    _check(page, beacon, "home_empty")

    _open(page, "Documents")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(document))
    _settle(page, 300_000)
    assert "hostile-untrusted.md" in page.inner_text("body")
    _check(page, beacon, "documents")

    _open(page, "Evaluate")
    page.get_by_role("tab", name="Demo bundle").click()
    page.locator('[data-testid="stFileUploader"]').filter(has_text="Bundle file").locator(
        '[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(bundle))
    _settle(page)
    page.get_by_role("button", name="Import bundle").click()
    _settle(page)
    assert "Imported run" in page.inner_text("body")
    _expand_all(page)
    _check(page, beacon, "evaluate_bundle")
    page.get_by_role("tab", name="Results").click()
    _settle(page)
    _expand_all(page)
    _check(page, beacon, "evaluate_results")

    _open(page, "Home")
    assert "Latest leaderboard" in page.inner_text("body")
    _check(page, beacon, "home_with_bundle")

    _open(page, "Chunk Explorer")
    _check(page, beacon, "chunk_explorer_source")
    page.get_by_text("Charts", exact=True).click()
    _settle(page)
    for chart in page.locator('[data-testid="stPlotlyChart"]').all():
        chart.hover()
        page.wait_for_timeout(300)
    _check(page, beacon, "chunk_explorer_charts")

    _open(page, "Retrieval Lab")
    box = page.locator('[data-testid="stTextInput"] input').first
    box.fill("What is the backup retention period?")
    box.press("Enter")
    _settle(page, 240_000)
    _check(page, beacon, "retrieval_lab")

    _open(page, "Agent Playground")
    _ask(page, "What is the backup retention period?")
    errors = [e.inner_text() for e in page.locator('[data-testid="stAlertContentError"]').all()]
    assert "30 days" in page.inner_text('[data-testid="stChatMessage"] >> nth=1'), errors
    _expand_all(page)
    _check(page, beacon, "agent_offline")
    page.locator('[data-testid="stSidebar"]').get_by_text("llm", exact=True).click()
    _settle(page)
    _ask(page, "What is the backup retention period?")
    assert "LLM answer" in page.inner_text("body")
    assert any(r["json"].get("tools") for r in llm.requests), "the LLM policy never asked the loopback server"
    _expand_all(page)
    _check(page, beacon, "agent_llm")
    # What the answers quoted is on screen, as text.
    body = page.inner_text("body")
    assert f"{beacon.url}/img-llm-answer.png?q=secret" in body and "image: pixel" in body
    json.dumps(llm.requests)  # the recorded requests are plain JSON (nothing odd was sent)
