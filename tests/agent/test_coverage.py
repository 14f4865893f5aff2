"""Coverage of a question's parts: the part-by-part fill, each part's evidence, and "not found"."""

from __future__ import annotations

from rag_core.agent import ask
from rag_core.agent.coverage import (
    NOT_FOUND_ANSWER,
    PartCoverage,
    decide_found,
    fill_by_parts,
    name_candidates,
    score_parts,
    unknown_names,
)
from rag_core.agent.plan import Part
from rag_core.config import RAGConfig
from rag_core.types import Chunk, Hit


def _hit(cid: str, doc: str = "d", start: int = 0, tokens: int = 100, heading: str = "H") -> Hit:
    chunk = Chunk(id=cid, doc_id=doc, granularity="paragraph", chunk_type="prose", text=cid, start=start,
                  end=start + 10, tokens=tokens, heading_path=[heading])
    return Hit(chunk=chunk, score=1.0, confidence=0.5)


def test_every_part_gets_its_best_before_any_gets_its_second():
    whole = [_hit("w1", start=0), _hit("w2", start=20), _hit("w3", start=40), _hit("w4", start=60)]
    part_a = [_hit("a1", "a"), _hit("a2", "a", 20)]
    part_b = [_hit("b1", "b"), _hit("b2", "b", 20)]
    kept = fill_by_parts([whole, part_a, part_b], budget=400)
    # Round one: the whole question's two best, then each part's best; the budget ends there.
    assert [h.chunk.id for h in kept] == ["w1", "w2", "a1", "b1"]


def test_a_part_whose_best_is_already_in_adds_nothing_that_round():
    whole = [_hit("w1"), _hit("w2", start=20)]
    part = [_hit("w1"), _hit("p2", "p")]
    kept = fill_by_parts([whole, part], budget=10_000, lead=1)
    assert [h.chunk.id for h in kept] == ["w1", "w2", "p2"]


def test_a_chunk_too_big_is_skipped_for_a_smaller_one():
    kept = fill_by_parts([[_hit("big", tokens=900), _hit("small", start=20, tokens=50)]], budget=500, lead=1)
    # The first chunk is always kept whatever its size; here it does not fit, so the smaller one is taken instead.
    assert [h.chunk.id for h in kept] == ["big"]
    kept = fill_by_parts([[_hit("first", tokens=400), _hit("big", start=20, tokens=900),
                           _hit("small", start=40, tokens=50)]], budget=500, lead=1)
    assert [h.chunk.id for h in kept] == ["first", "small"]


def test_spread_takes_a_new_section_first():
    part = [_hit("s1", heading="Same"), _hit("s2", start=20, heading="Same"), _hit("o1", start=40, heading="Other")]
    whole = [_hit("w", "w", heading="Same")]
    kept = fill_by_parts([whole, [_hit("x", "d", 80, heading="Same")], part], budget=10_000, spread=True, lead=1)
    assert [h.chunk.id for h in kept][:3] == ["w", "x", "o1"]


def test_name_candidates_skip_sentence_starts_quotes_and_paths():
    question = "Does it run on PyPy? Can names like 'UserResponse' or reports/q1.csv work with MessagePack and GIL?"
    assert name_candidates(question) == ["PyPy", "MessagePack", "GIL"]


def test_a_missing_name_decides_only_when_the_question_is_about_it():
    vectors = {"q": [1.0, 0.0], "far": [0.0, 1.0], "near": [0.99, 0.14]}

    def embed(texts):
        import numpy as np

        out = []
        for text in texts:
            # The question without "Avro" moves far; without "Mac" it barely moves.
            out.append(vectors["q"] if "Avro" in text and "Mac" in text else
                       vectors["far"] if "Mac" in text else vectors["near"])
        return np.array(out, dtype=np.float32)

    question = "Building on my Mac, how do I export Avro schemas?"
    assert unknown_names(question, lambda w: False, embed) == ["Avro"]
    assert unknown_names(question, lambda w: w == "Avro", embed) == []


def _shift_embed(far_without):
    """A fake embedder: a text moves far when one of ``far_without`` was removed from it, else stays put."""
    import numpy as np

    def embed(texts):
        return np.array([[1.0, 0.0] if all(w in t for w in far_without) else [0.0, 1.0] for t in texts],
                        dtype=np.float32)
    return embed


def test_a_name_of_several_words_is_missing_when_one_of_its_words_is():
    from rag_core.agent.coverage import name_phrases

    question = "How do I pull secret values from AWS Secrets Manager at startup?"
    assert name_phrases(question, name_candidates(question)) == ["AWS Secrets Manager"]
    known = {"AWS", "Secrets"}.__contains__
    # Each word alone barely matters; the phrase is the thing asked about.
    assert unknown_names(question, known, _shift_embed(["AWS Secrets Manager"])) == ["AWS Secrets Manager"]
    assert unknown_names(question, lambda w: True, _shift_embed(["AWS Secrets Manager"])) == []


def test_a_plural_or_verb_form_of_a_known_word_is_known():
    question = "Old devices send JSON POSTs without a header: why are they rejected?"
    assert unknown_names(question, {"JSON", "POST"}.__contains__, None) == []
    assert unknown_names(question, {"JSON"}.__contains__, None) == ["JSON POSTs"]


def test_a_missing_name_central_to_one_asking_part_decides_for_that_part():
    question = "Does pydantic run on PyPy, and how does its speed there compare with CPython?"
    parts = [Part("Does pydantic run on PyPy", "Does pydantic run on PyPy"),
             Part("how does its speed there compare with CPython?", "speed CPython")]
    known = {"CPython"}.__contains__

    def embed_part(texts):  # the whole question hardly moves without PyPy, but its first question does
        import numpy as np
        return np.array([[1.0, 0.0] if ("PyPy" in t or "CPython" in t) else [0.0, 1.0] for t in texts],
                        dtype=np.float32)
    assert unknown_names(question, known, embed_part) == []
    assert unknown_names(question, known, embed_part, parts=parts) == ["PyPy"]
    # A statement that sets the scene is not asking about the name it mentions.
    story = [Part("Our users speak German", "users speak German", role="context"),
             Part("How can I show them messages in their language?", "messages language")]
    assert unknown_names("Our users speak German. How can I show them messages in their language?",
                         lambda w: False, embed_part, parts=story) == []


def test_decide_found():
    covered = [PartCoverage("a", "a", "question", True, 0.8, ["c1"]), PartCoverage("b", "b", "question", False, 0.3)]
    assert decide_found(covered, []) == (True, "1 of 2 part(s) covered")
    found, why = decide_found(covered, ["Avro"])
    assert not found and "never mention 'Avro'" in why
    found, why = decide_found([PartCoverage("a", "a", "question", False, 0.05)], [])
    assert not found and "nothing retrieved is relevant" in why


def test_score_parts_names_each_parts_evidence(fake_index):
    hits = [Hit(chunk=fake_index.get(i), score=1.0, confidence=0.5) for i in ("auth-p0", "auth-p1")]
    parts = [Part("rotate the key", "rotate key"), Part("penguins", "penguins migrate south")]
    coverage = score_parts(parts, hits, fake_index.embed_texts)
    assert coverage[0].chunk_ids and coverage[0].confidence > coverage[1].confidence
    assert not coverage[1].covered and coverage[1].chunk_ids == []


def test_ask_reports_found_plan_and_parts(fake_index, fake_retriever):
    result = ask("How do I rotate the API key safely, and how long do tokens last before they expire?", fake_index,
                 RAGConfig(), None, policy="offline", retriever=fake_retriever)
    data = result.to_dict()
    assert data["found"] is True and data["plan"]["kind"] == "multi-part"
    assert [p["text"] for p in data["parts"]] == ["How do I rotate the API key safely",
                                                  "how long do tokens last before they expire?"]
    assert all(set(p) == {"text", "query", "role", "covered", "confidence", "chunk_ids"} for p in data["parts"])


def test_a_question_about_something_never_mentioned_is_not_found(fake_index, fake_retriever):
    result = ask("How do I export the keys to Kubernetes with Terraform?", fake_index, RAGConfig(), None,
                 policy="offline", retriever=fake_retriever)
    assert not result.found and result.answer.startswith(NOT_FOUND_ANSWER)
    assert "Kubernetes" in result.found_reason and result.citations == [] and not result.grounded
    assert "Closest places found (not an answer)" in result.answer
    assert result.steps[-1].args["citations"] == [] and "not found: the documents never mention" in \
        result.steps[-1].reason


def test_an_extractive_answer_names_the_parts_nothing_covers(fake_index, fake_retriever):
    result = ask("How do I rotate the API key safely, and how many zebras live in the savanna grasslands?",
                 fake_index, RAGConfig(), None, policy="offline", retriever=fake_retriever)
    assert result.found and [p["covered"] for p in result.parts] == [True, False]
    # Part by part in the plan's order: the covered part quoted, the other saying so with its best evidence.
    rotate, zebras = result.answer.index("#### 1. How do I rotate"), result.answer.index("#### 2. how many zebras")
    assert rotate < result.answer.index("[auth-p1]") < zebras
    assert result.answer.splitlines()[-1].startswith(
        "No passage found covers: how many zebras live in the savanna grasslands? (best evidence 0.01, under the 0.45")


def test_an_acronym_the_context_spells_out_is_known():
    from rag_core.agent.coverage import spelled_out

    texts = ["FastAPI's author learned from the Django REST Framework, created by Tom Christie."]
    assert spelled_out("DRF", texts) and not spelled_out("GIL", texts)
    question = "Is there any connection between DRF's author and FastAPI?"
    assert unknown_names(question, lambda w: w == "FastAPI", None, texts) == []
    assert unknown_names(question, lambda w: w == "FastAPI", None, ["Django only"]) == ["DRF"]


def test_a_relevant_context_is_quoted_even_when_no_passage_shares_a_word():
    from rag_core.agent.answer import NOT_FOUND, extractive_answer

    hits = [Hit(chunk=Chunk(id="c1", doc_id="d", granularity="paragraph", chunk_type="prose",
                            text="Use a path converter to capture slashes.", start=0, end=40, tokens=9),
                score=1.0, confidence=0.6)]
    assert extractive_answer("whole filesystem location variable?", hits).text == NOT_FOUND
    relaxed = extractive_answer("whole filesystem location variable?", hits, min_score=0.0)
    assert relaxed.citations == ["c1"] and "path converter" in relaxed.text


def test_a_name_found_only_by_its_stem_is_unknown():
    from rag_core.agent.coverage import judge_coverage
    from rag_core.agent.plan import plan_question

    pypi = Chunk(id="c", doc_id="d", granularity="paragraph", chunk_type="prose", text="Install it from PyPI.",
                 start=0, end=21, tokens=5)

    class Stemmed:  # BM25 stems "PyPy" and "PyPI" alike
        def keyword_search(self, query, k, filters=None, exclude_ids=()):
            return [(pypi, 1.0)] if query.lower().startswith("pyp") else []

        embed_texts = None

    question = "Does it run on PyPy at all?"
    hits = [Hit(chunk=pypi, score=1.0, confidence=0.9)]
    _, found, why = judge_coverage(question, plan_question(question), hits, Stemmed())
    assert not found and "'PyPy'" in why


def test_a_missing_name_in_one_part_leaves_the_other_parts_answered():
    parts = [PartCoverage("What is the price of the Pro plan", "q1", "question", True, 0.7, ["c1"]),
             PartCoverage("how do I rotate the API key?", "q2", "question", True, 0.8, ["c2"])]
    found, why = decide_found(parts, ["Pro"])
    assert found and "1 of 2 part(s) covered" in why and "'Pro'" in why
    assert (parts[0].covered, parts[0].chunk_ids) == (False, []) and parts[1].covered
    both = [PartCoverage("Does it run on PyPy", "q1", "question", True, 0.7, ["c1"]),
            PartCoverage("how fast is it on PyPy?", "q2", "question", True, 0.6, ["c2"])]
    assert not decide_found(both, ["PyPy"])[0]


def test_a_part_referring_back_to_a_missing_name_asks_about_it_too():
    from rag_core.agent.plan import plan_question

    plan = plan_question("Does pydantic run on PyPy at all, and how does its speed there compare with CPython?")
    assert plan.parts[1].refers_to.startswith("Does pydantic run on PyPy")
    parts = [PartCoverage(p.text, p.query, p.role, True, 0.7, ["c"], p.refers_to) for p in plan.parts]
    found, why = decide_found(parts, ["PyPy"])
    assert not found and "'PyPy'" in why


def test_a_hyphenated_name_is_one_candidate():
    question = "Why does my Accept-Version header, or X-Request-ID, vanish from Soundex-encoded or Python-version data?"
    assert name_candidates(question) == ["Accept-Version", "X-Request-ID"]


def test_a_proper_name_of_plain_words_is_missing_when_the_documents_never_join_them():
    question = "What memory limits should I set on Google Cloud Run, and does JSON Schema help?"
    known = {"Google", "Cloud", "Run", "JSON", "Schema"}.__contains__  # each word, never the phrases
    # "JSON Schema" (an acronym beside a word) is as often two names; "Google Cloud Run" is one thing.
    assert unknown_names(question, known, None) == ["Google Cloud Run"]
    assert unknown_names(question, lambda w: True, None) == []


def test_a_name_the_documents_mention_only_away_from_the_evidence_decides_not_found(fake_index):
    from rag_core.agent.coverage import judge_coverage, names_only_elsewhere
    from rag_core.agent.plan import plan_question

    rotate = [Hit(chunk=fake_index.get("auth-p1"), score=1.0, confidence=0.6)]
    # "Pro" is in the plans document, not in the key-rotation evidence the question finds.
    question = "How do I rotate an API key for a Pro workspace?"
    coverage, found, why = judge_coverage(question, plan_question(question), rotate, fake_index)
    assert not found and "no evidence found mentions 'Pro' (the documents name it only elsewhere)" in why
    assert judge_coverage("How do I rotate an API key?", plan_question("How do I rotate an API key?"), rotate,
                          fake_index)[1]
    plans = [Hit(chunk=fake_index.get("plans-p1"), score=1.0, confidence=0.6)]
    assert judge_coverage(question, plan_question(question), rotate + plans, fake_index)[1]
    # Acronyms and code names are not judged so (questions use them in passing), nor is a question with no evidence.
    assert names_only_elsewhere("How do I rotate a GB key for a Pro workspace?", lambda w: True, ["rotate"]) == ["Pro"]
    assert names_only_elsewhere("How do I rotate an API key in WrenCli?", lambda w: True, ["rotate"]) == []
    assert names_only_elsewhere(question, lambda w: True, []) == []
    assert names_only_elsewhere(question, lambda w: True, ["Pros and cons"]) == []  # a plural is the name


def test_decide_found_words_missing_and_elsewhere_names_apart():
    part = [PartCoverage("a", "a", "question", True, 0.8, ["c1"])]
    found, why = decide_found(part, ["Avro"], ["Redis"])
    assert not found and why.startswith("the documents never mention 'Avro' and no evidence found mentions 'Redis'")
