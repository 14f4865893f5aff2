"""Agent steps and answers in words for people (ui/agent/agent_text.py), names escaped."""

from __future__ import annotations

from types import SimpleNamespace

from rag_core.types import Chunk
from tests.fakes.index import FakeIndex
from ui.agent.agent_text import raw_call, readable_answer, step_title

CHUNK = Chunk(id="c35269a3c27e52b5", doc_id="d1", granularity="section", chunk_type="prose", text="x", start=0,
              end=1, tokens=1, heading_path=["Guide", "Keys_and *tokens*"])
NAMES = {"d1": "guide[1].md"}


def _step(tool, **args):
    return SimpleNamespace(tool=tool, args=args)


def test_step_titles_read_as_sentences():
    index = FakeIndex([CHUNK], names=NAMES)
    assert step_title(_step("search", query="rotate key", granularity="section"), index) == \
        "Searched sections for “rotate key”"
    assert step_title(_step("search", query="plans", granularity="row", strategy="keyword"), index) == \
        "Searched table rows for “plans” by keyword search"
    assert step_title(_step("zoom_in", section_id=CHUNK.id), index) == \
        r"Zoomed into guide\[1\]\.md › Keys\_and \*tokens\*"
    assert step_title(_step("zoom_out", chunk_id="0" * 16), index) == \
        "Zoomed out to the section around 0000000000000000"
    assert step_title(_step("done", answer="a", citations=["x", "y"]), index) == "Answered, citing 2 passage\\(s\\)"
    assert step_title(_step("list_sections", doc_id="d1"), index) == r"Listed the sections of guide\[1\]\.md"
    # a time-budget stop names its cause (not the endpoint failing)
    assert step_title(_step("out_of_time"), index) == "The question's time budget ran out before the model answered"


def test_the_raw_call_is_kept_for_the_expander():
    assert raw_call(_step("search", query="rotate key", granularity="section")) == \
        "search(query='rotate key', granularity='section')"


def test_answers_name_their_sources_instead_of_chunk_ids():
    answer = "Press **Rotate**. [c35269a3c27e52b5]\n\n- Other [ffffffffffffffff]"
    shown = readable_answer(answer, FakeIndex([CHUNK], names=NAMES))
    assert shown == ("Press **Rotate**. \\[guide\\[1\\].md › Keys\\_and *tokens*\\]\n\n"
                     "- Other \\[ffffffffffffffff\\]")  # an id the index does not know stays as it was
