"""Links in server and model text are inert or marked in every element: autolinks ``<scheme:...>`` (which need
no ``//``), bare URLs and reference links alike, in messages (``md_inert``), labels (``md_escape``) and answers
(``safe_markdown``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.loaders import load_bytes
from rag_core.services import open_index
from tests.app.apptest_helpers import page_app
from tests.app.test_untrusted_text import active_parts
from tests.fakes import openai_server as fake
from ui.safe_text import md_escape, md_inert, safe_markdown

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "agent_playground.py")
CONFIG = RAGConfig(name="inert-links", embedding=EmbeddingConfig(embedder="hash"), retrieval={"strategy": "auto"})
BEACON = "<https:127.0.0.1:8799/beacon>"  # an autolink: CommonMark links it, the browser reads https://127.0.0.1...
LINKS = [BEACON, "<HTTPS:evil.test/x>", "<javascript:alert(1)>", "<mailto:a@evil.test>", "<a+b.c-d:x/y?q=1>",
         "<a!b@evil.test>", "https://evil.test/x", "www.evil.test", "a@evil.test",
         "[x][r]\n\n[r]: <https:evil.test/r>", "[r]\n\n[r]: https://evil.test/r", "![i][r]\n\n[r]: http://evil.test/i"]


def _ordinary_links(markdown: str) -> list[str]:
    """What ``active_parts`` finds, not counting raw HTML (``md_inert`` leaves tags: Streamlit shows them as text)."""
    return [part for part in active_parts(markdown) if not part.startswith("html")]


@pytest.mark.parametrize("link", LINKS)
def test_every_link_form_is_inert_or_marked(link):
    message = f"The model server answered 500: model {link} is overloaded"
    assert _ordinary_links(md_inert(message)) == []
    assert active_parts(md_escape(message)) == []
    assert active_parts(safe_markdown(message)) == []


def test_an_autolink_becomes_code_in_messages_and_inert_text_in_answers():
    assert active_parts(f"model {BEACON}") == ["link: https:127.0.0.1:8799/beacon"]  # live as typed
    assert md_inert(f"model {BEACON} not found") == f"model ` {BEACON} ` not found"
    assert md_escape(f"model {BEACON}") == f"model ` {BEACON} `"
    assert safe_markdown(f"model {BEACON}") == "model ` https:127.0.0.1:8799/beacon `"  # no host: not kept as a link
    assert safe_markdown("<https://docs.example.com/x>") == (  # an http(s) link with a host: kept, marked
        "[` https://docs.example.com/x ` ↗ docs.example.com](<https://docs.example.com/x>)")
    # not autolinks (a one-letter scheme, a space): left as written
    assert md_inert("<a:b> and <ab:c d> and 127.0.0.1:9") == "<a:b> and <ab:c d> and 127.0.0.1:9"


PIECES = ["<", ">", "https:", "javascript:", "mailto:", "127.0.0.1:8799/beacon", "evil.test", "@", "a", "+", ".", "-",
          ":", "/", " ", "\n", "[", "]", "(", ")", "[r]: ", "`", "\\", "!", "www.", "://", "\u00a0"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_no_arrangement_of_link_pieces_becomes_active(text):
    assert _ordinary_links(md_inert(text)) == []
    assert active_parts(md_escape(text)) == []
    assert active_parts(safe_markdown(text)) == []


@pytest.fixture
def indexed(data_dir):
    guide = "# Keys\n\nTo rotate the API key, open Settings, choose Keys and press Rotate.\n"
    open_index(CONFIG).ingest([load_bytes("guide.md", guide.encode())])


def _shown(at) -> str:
    return "\n\n".join(e.value for kind in ("error", "warning", "info", "success", "caption", "markdown")
                       for e in getattr(at, kind))


def test_an_autolink_in_a_server_error_is_inert_in_the_page(indexed, monkeypatch):
    with fake.ScriptedOpenAIServer([fake.error(400, f"model {BEACON} does not exist")] * 4) as server:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM_MODEL", "asked-model")
        monkeypatch.setenv("RAG_LLM_MAX_RETRIES", "0")
        at = page_app(PAGE, CONFIG, agent_policy="llm")
        at.run()
        at.chat_input[0].set_value("How do I rotate the API key?").run()
    assert not at.exception
    warnings = "\n\n".join(w.value for w in at.warning)
    assert "beacon" in warnings  # the server's words are shown ...
    assert _ordinary_links(_shown(at)) == []  # ... with the autolink as code


def test_an_autolink_as_the_served_model_name_is_inert_in_the_page(indexed, monkeypatch):
    with fake.LlamaCppServer([fake.answer("Press Rotate [1].")], alias=BEACON, route="keyword") as server:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM_MODEL", "asked-model")
        at = page_app(PAGE, CONFIG, agent_policy="llm-answer")
        at.run()
        at.chat_input[0].set_value("How do I rotate the API key?").run()
    assert not at.exception
    infos = "\n\n".join(i.value for i in at.info)
    assert "beacon" in infos  # the note naming the model the server answered as ...
    assert _ordinary_links(_shown(at)) == []  # ... shows the name as code
