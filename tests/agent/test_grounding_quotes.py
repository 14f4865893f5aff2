"""Grounding that knows a quote (issue 35.3): a unit copied verbatim from the passage it cites is supported, a
cited table or list is checked with its citation, and "answers no part" uses the plan's relevance.

Each test fails on the grounding before that change: a table's rows were checked one by one, all but the last
attributed by word overlap to whichever passage shared most words (another table with the same header), and a
quote was "answering no part" whenever its chunk was not in the covered set, however relevant the quote.
"""

from __future__ import annotations

from rag_core.agent.answer import EXTRACTIVE_NOTE
from rag_core.agent.coverage import PART_COVERED, PartCoverage
from rag_core.agent.grounding import CoveredEvidence, check_grounding, covered_evidence, is_verbatim_quote
from rag_core.types import Chunk, Hit

# The benchmark table the issue saw flagged ("states the number '4625'"), and a second table with the same header
# and tools (another page's older run): word overlap alone cannot tell their rows apart.
BENCH = ("## Benchmarks\n\n| Tool | Cold start (ms) | Rebuild (ms) |\n| --- | --- | --- |\n"
         "| vite | 4625 | 120 |\n| webpack | 9100 | 900 |\n| parcel | 7300 | 450 |")
HEADER = "| Tool | Cold start (ms) | Rebuild (ms) |\n| --- | --- | --- |\n"
OLD_BENCH = ("## Older benchmarks\n\n| Tool | Cold start (ms) | Rebuild (ms) |\n| --- | --- | --- |\n"
             "| vite | 5100 | 130 |\n| webpack | 9800 | 950 |\n| parcel | 7700 | 480 |")
KEYS = ("To rotate an API key, run `wren keys rotate --name KEY`. The old key keeps working during the grace "
        "period. The grace period lasts 24 hours by default. Set `auth.key_rotation_grace` to change it.")
# Another held chunk (a previous turn's) with the same words as the key passage, and more of them.
KEYS_FAQ = ("FAQ: rotate an API key? Run `wren keys rotate --name KEY`; the old key keeps working during the grace "
            "period, 24 hours by default (`auth.key_rotation_grace` changes the grace period). Rotate keys often.")


def _hits(*pairs: tuple[str, str]) -> list[Hit]:
    chunks = [Chunk(id=i, doc_id=i, granularity="paragraph", chunk_type="prose", text=t, start=0, end=len(t),
                    tokens=60) for i, t in pairs]
    return [Hit(chunk=c, score=1.0, confidence=1.0, source_name=f"{c.id}.md") for c in chunks]


def _table_hits() -> list[Hit]:
    # "zz-old" sorts last, so on a tie of word overlap it is the passage an uncited row is attributed to
    return _hits(("bench", BENCH), ("zz-old", OLD_BENCH))


def _extractive(*blocks: str) -> str:
    return "\n".join([EXTRACTIVE_NOTE, "", *blocks])


def test_a_table_quoted_whole_with_its_citation_is_supported_numbers_and_all():
    table = HEADER + "| vite | 4625 | 120 |\n| webpack | 9100 | 900 |"
    check = check_grounding(_extractive("", table, "", "[bench]", ""), _table_hits())
    assert check.grounded, check.reason
    assert [(s.supported, s.chunk_ids, s.attributed) for s in check.sentences] == [(True, ["bench"], False)]
    assert "verbatim" in check.sentences[0].reason


def test_a_table_row_quoted_under_its_header_is_supported():
    # The extractive answer quotes a row under its table's header: not adjacent in the source, each line in it.
    row = "| Tool | Cold start (ms) | Rebuild (ms) |\n| --- | --- | --- |\n| parcel | 7300 | 450 |"
    check = check_grounding(_extractive("", row, "", "[bench]", ""), _table_hits())
    assert check.grounded, check.reason
    assert check.sentences[0].chunk_ids == ["bench"]


def test_an_invented_number_in_a_cited_table_is_caught_against_the_passage_it_cites():
    # The first row's numbers are the other table's: before, that row was attributed by word overlap to it and kept.
    table = HEADER + "| vite | 5100 | 130 |\n| webpack | 9100 | 900 |"
    check = check_grounding(_extractive("", table, "", "[bench]", ""), _table_hits())
    assert not check.grounded
    assert [u["sentence"] for u in check.unsupported] == ["| vite | 5100 | 130 |"]
    assert check.unsupported[0]["reason"].startswith("the passage it cites does not say this")


def test_an_invented_number_in_a_sentence_that_is_not_a_copy_is_still_caught():
    hits = _hits(("keys", KEYS))
    check = check_grounding("The grace period lasts 48 hours by default [keys].", hits)
    assert not check.grounded and "number '48'" in check.unsupported[0]["reason"]
    check = check_grounding("The grace period lasts 24 hours by default [keys].", hits)
    assert check.grounded and check.sentences[0].reason == "quoted verbatim from the passage it cites"


def test_a_number_inside_a_longer_one_is_no_verbatim_copy():
    hits = _hits(("bench", BENCH.replace("4625", "14625")))
    check = check_grounding("| vite | 4625 | 120 | [bench]", hits)
    assert not check.grounded and "number '4625'" in check.unsupported[0]["reason"]


def test_a_list_quoted_with_one_citation_is_checked_against_that_passage():
    # Three items under one citation on its own line: every item rests on "keys" (before, the first two were
    # attributed by word overlap to the FAQ chunk, which covers no part, and flagged "answers no part").
    items = ("1. To rotate an API key, run `wren keys rotate --name KEY`.\n"
             "2. The old key keeps working during the grace period.\n"
             "3. The grace period lasts 24 hours by default.")
    hits = _hits(("keys", KEYS), ("zz-faq", KEYS_FAQ))
    parts = [PartCoverage("How do I rotate a key?", "rotate API key", "question", covered=True, confidence=0.8,
                          chunk_ids=["keys"], supporting=["keys"])]
    covered = covered_evidence(parts, hits)
    assert covered == {"keys"}
    check = check_grounding(_extractive("", items, "", "[keys]", ""), hits, extractive=True, covered=covered)
    assert check.grounded, check.reason
    assert [(s.supported, s.chunk_ids) for s in check.sentences] == [(True, ["keys"])] * 3


def test_a_quote_attributed_to_the_wrong_chunk_is_still_caught():
    hits = _hits(("keys", KEYS), ("bench", BENCH))
    # a verbatim sentence of "keys" cited to "bench"
    check = check_grounding("- The grace period lasts 24 hours by default. [bench]", hits)
    assert not check.grounded and check.unsupported[0]["reason"].startswith("the passage it cites does not say")
    # the same sentence inside a list whose one citation names "bench": before, it was attributed to "keys" and kept
    items = "- The grace period lasts 24 hours by default.\n- vite 4625 120"
    check = check_grounding(_extractive("", items, "", "[bench]", ""), hits)
    assert not check.grounded
    assert check.unsupported[0]["sentence"] == "The grace period lasts 24 hours by default."


def test_a_verbatim_quote_relevant_to_a_part_by_the_plans_relevance_answers_it():
    # A follow-up: its one part scored the key chunk 0.34 as a whole (not covered), yet the quoted sentence holds
    # every term of the part's query; scored the plan's way it is above PART_COVERED, so it answers the part.
    hits = _hits(("keys", KEYS), ("bench", BENCH))
    part = PartCoverage("How long is the grace period?", "grace period long lasts", "question", covered=False,
                        confidence=0.34)
    covered = CoveredEvidence(set(), [part])
    answer = _extractive("- The grace period lasts 24 hours by default. [keys]")
    check = check_grounding(answer, hits, extractive=True, covered=covered)
    assert check.grounded, check.reason
    assert f"{PART_COVERED:.2f} needed" in check.sentences[0].reason
    # a quote relevant to no part still answers no part
    answer = _extractive("- Set `auth.key_rotation_grace` to change it. [keys]")
    check = check_grounding(answer, hits, extractive=True, covered=covered)
    assert not check.grounded
    assert check.unsupported[0]["reason"].startswith("quoted from a passage that answers no part")


def test_a_part_uncovered_for_a_name_the_documents_never_mention_is_answered_by_nothing():
    hits = _hits(("keys", KEYS))
    # decide_found un-covers a part asking about a missing name though its evidence scored above the threshold
    part = PartCoverage("How long is the Redis grace period?", "grace period long lasts", "question",
                        covered=False, confidence=0.9)
    answer = _extractive("- The grace period lasts 24 hours by default. [keys]")
    check = check_grounding(answer, hits, extractive=True, covered=CoveredEvidence(set(), [part]))
    assert not check.grounded


def test_is_verbatim_quote_reads_units_as_the_check_reports_them():
    hits = _table_hits()
    assert is_verbatim_quote("| vite | 4625 | 120 | [bench]", hits)
    assert is_verbatim_quote("1. | webpack | 9100 | 900 |", hits)
    assert not is_verbatim_quote("| vite | 4626 | 120 |", hits)
    assert not is_verbatim_quote("[bench]", hits)
