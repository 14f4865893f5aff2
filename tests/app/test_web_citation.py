"""Issue 39 item 11: a web citation (a web-search hit) does not open an unrelated document in the Chunk Explorer
(its address is shown, as text), and an answer citing it keeps no raw ``[web-…]`` marker."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Hit
from ui import state
from ui.agent.agent_text import readable_answer

WEB_ID = "web-0123456789abcdef"


def web_hit(chunk_id: str = WEB_ID) -> Hit:
    text = "Rotating keys\n\nHow to rotate an API key on the example service."
    chunk = Chunk(id=chunk_id, doc_id="web:example.org", granularity="document", chunk_type="prose", text=text,
                  start=0, end=len(text), tokens=count_tokens(text), heading_path=["Rotating keys"], verbatim=False,
                  metadata={"url": "https://example.org/keys", "source_name": "example.org"})
    return Hit(chunk=chunk, score=1.0, confidence=0.6, source_name="example.org")


def _buttons_script():
    from tests.app.test_web_citation import web_hit
    from ui.agent.agent_view import chunk_buttons

    chunk_buttons([web_hit()], 0, "cite", prefix=":material/attach_file: ")


def test_a_web_citation_shows_its_address_instead_of_opening_a_document(data_dir):
    at = AppTest.from_function(_buttons_script, default_timeout=60).run()
    at.button[0].click().run()
    assert not at.exception
    assert state.PREFILL_KEY not in at.session_state  # nothing for the Chunk Explorer to open
    infos = [i.value for i in at.info]
    assert len(infos) == 1 and "web result, not a stored document" in infos[0]
    assert "` https://example.org/keys `" in infos[0]  # as code: shown, not a link


def test_an_answer_names_its_web_citations_and_keeps_no_raw_marker():
    answer = f"Open Settings and rotate the key [{WEB_ID}]. Elsewhere too [web-fedcba9876543210]."
    shown = readable_answer(answer, None, [web_hit()])
    assert "web-" not in shown
    assert "example.org › Rotating keys" in shown and "web result" in shown
