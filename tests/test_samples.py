"""The shipped sample corpus, its golden question set and the hostile fixtures keep their promises.

The corpus is what ``make run`` loads and what the golden set is scored against, so these tests pin what other
layers rely on: size and file mix, the structures the chunker must handle, and golden answers that exist
verbatim, once, under the heading the question names.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections import Counter
from pathlib import Path

from markdown_it import MarkdownIt

from rag_core.tokens import count_tokens
from rag_core.types import HEADING_SEPARATOR

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
HOSTILE = SAMPLES / "hostile"
GOLDEN = SAMPLES / "golden.jsonl"
SAMPLE_SUFFIXES = {".md", ".csv", ".py"}
INTENTS = ("fact", "code", "procedure", "data")
GOLDEN_KEYS = {"id", "question", "intent", "answer_text", "doc", "heading"}
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


def sample_files() -> list[Path]:
    return sorted(p for p in SAMPLES.iterdir() if p.is_file() and p.suffix in SAMPLE_SUFFIXES)


def golden() -> list[dict]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]


def answers_of(item: dict) -> list[str]:
    return [item["answer_text"], *item.get("answer_texts", [])]


def markdown_headings(text: str) -> list[tuple[int, str, list[str]]]:
    """(level, title, heading path) for every heading, nesting by level as a jump from H1 to H3 requires."""
    text = FRONT_MATTER.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    stack: list[tuple[int, str]] = []
    found = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        level, title = int(token.tag[1]), tokens[index + 1].content
        stack = [(lvl, name) for lvl, name in stack if lvl < level] + [(level, title)]
        found.append((level, title, [name for _, name in stack]))
    return found


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    tokens = MarkdownIt("commonmark").parse(text)
    return [(t.info.strip(), t.content) for t in tokens if t.type == "fence"]


def top_level_names(source: str) -> set[str]:
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            names.add(f"class {node.name}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(f"def {node.name}")
    return names


# ------------------------------------------------------------------------------------------------ the corpus


def test_sample_file_mix_count_and_size():
    files = sample_files()
    kinds = Counter(p.suffix for p in files)
    assert 8 <= len(files) <= 12
    assert 1 <= kinds[".csv"] <= 2 and 1 <= kinds[".py"] <= 2 and kinds[".md"] >= 6
    total = sum(p.stat().st_size for p in files)
    assert 40_000 <= total <= 80_000, f"sample corpus is {total} bytes"


def test_markdown_has_the_structures_the_chunker_must_handle():
    texts = {p.name: p.read_text(encoding="utf-8") for p in sample_files() if p.suffix == ".md"}
    assert sum(bool(FRONT_MATTER.match(t)) for t in texts.values()) == 1
    levels = {name: [level for level, _, _ in markdown_headings(t)] for name, t in texts.items()}
    assert any(seq[:2] == [1, 3] for seq in levels.values()), "one document must jump from H1 to H3"
    assert any(4 in seq for seq in levels.values()), "headings must nest four levels somewhere"
    joined = "\n".join(texts.values())
    assert re.search(r"^!!! warning.*\n    \S", joined, re.MULTILINE), "an indented MkDocs warning admonition"
    assert re.search(r"^> \S", joined, re.MULTILINE), "a block quote"
    assert re.search(r"^   +- \S", joined, re.MULTILINE), "a nested list"
    assert re.search(r"^\| --- \| --- \|", joined, re.MULTILINE), "a GFM table"
    languages = {info for t in texts.values() for info, _ in fenced_blocks(t)}
    assert {"python", "typescript", "javascript", "bash", "yaml", "sql", "go"} <= languages


def test_one_long_prose_section_and_one_long_code_block():
    longest_section, longest_code = 0, 0
    for path in sample_files():
        if path.suffix != ".md":
            continue
        text = path.read_text(encoding="utf-8")
        longest_code = max([longest_code] + [count_tokens(code) for _, code in fenced_blocks(text)])
        for part in re.split(r"^#{1,6} .*$", text, flags=re.MULTILINE):
            if "```" not in part:
                longest_section = max(longest_section, count_tokens(part))
    assert longest_section > 600
    assert longest_code > 600


def test_csv_files_are_rectangular_tables_of_30_to_60_rows():
    for path in sample_files():
        if path.suffix != ".csv":
            continue
        rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
        assert 30 <= len(rows) - 1 <= 60, path.name
        assert {len(row) for row in rows} == {len(rows[0])}, f"{path.name} has ragged rows"


def test_python_samples_parse_and_document_their_top_level_code():
    for path in sample_files():
        if path.suffix != ".py":
            continue
        module = ast.parse(path.read_text(encoding="utf-8"))
        assert ast.get_docstring(module), path.name
        defs = [n for n in module.body if isinstance(n, ast.ClassDef | ast.FunctionDef)]
        assert len(defs) >= 3, path.name
        assert all(ast.get_docstring(n) for n in defs if not n.name.startswith("_")), path.name


def test_plan_matrix_answers_a_data_question_exactly():
    rows = list(csv.DictReader((SAMPLES / "plans.csv").read_text(encoding="utf-8").splitlines()))
    team = {row["limit"]: row["value"] for row in rows if row["plan"] == "Team"}
    assert team["API requests per month"] == "5000000"
    assert team["API rate limit"] == "600"
    assert {row["plan"] for row in rows} == {"Community", "Team", "Business", "Enterprise"}


# ------------------------------------------------------------------------------------------------ golden set


def test_golden_is_valid_jsonl_with_unique_ids_and_known_intents():
    lines = [line for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = [json.loads(line) for line in lines]
    assert all(isinstance(item, dict) and GOLDEN_KEYS <= item.keys() for item in items)
    ids = [item["id"] for item in items]
    assert len(ids) == len(set(ids))
    questions = [item["question"].strip().casefold() for item in items]
    assert len(questions) == len(set(questions)), "a question is asked twice"
    assert all(re.fullmatch(r"q\d{2,3}", i) for i in ids)
    assert {item["intent"] for item in items} <= set(INTENTS)


def test_golden_has_at_least_12_questions_per_intent_and_6_multi_part():
    items = golden()
    per_intent = Counter(item["intent"] for item in items)
    assert len(items) >= 48
    assert all(per_intent[intent] >= 12 for intent in INTENTS), per_intent
    multi = [item for item in items if "answer_texts" in item]
    assert len(multi) >= 6
    assert all(len(item["answer_texts"]) == 2 and item["answer_text"] in item["answer_texts"] for item in multi)


def test_golden_answers_are_short_and_occur_exactly_once_in_the_named_doc_only():
    texts = {p.name: p.read_text(encoding="utf-8") for p in sample_files()}
    for item in golden():
        assert item["doc"] in texts, f"{item['id']}: unknown doc {item['doc']}"
        for answer in answers_of(item):
            assert 3 <= len(answer.split()) <= 12, f"{item['id']}: {answer!r} should be 3-12 words"
            assert texts[item["doc"]].count(answer) == 1, f"{item['id']}: {answer!r} not once in {item['doc']}"
            elsewhere = [name for name, text in texts.items() if name != item["doc"] and answer in text]
            assert not elsewhere, f"{item['id']}: {answer!r} also in {elsewhere}"


def test_golden_answers_do_not_copy_the_question():
    for item in golden():
        assert item["answer_text"].lower() not in item["question"].lower(), item["id"]


def test_golden_headings_name_a_real_section_of_the_doc():
    for item in golden():
        path = SAMPLES / item["doc"]
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".md":
            paths = {HEADING_SEPARATOR.join(p) for _, _, p in markdown_headings(text)}
            assert item["heading"] in paths, f"{item['id']}: no heading path {item['heading']!r}"
        elif path.suffix == ".py":
            assert item["heading"] in top_level_names(text), item["id"]
        else:
            assert item["heading"] == "", item["id"]


def test_heading_paths_nest_a_jump_from_h1_to_h3_under_the_h1():
    headings = markdown_headings((SAMPLES / "installation.md").read_text(encoding="utf-8"))
    assert headings[:2] == [
        (1, "Installing Wrenfall", ["Installing Wrenfall"]),
        (3, "Before you begin", ["Installing Wrenfall", "Before you begin"]),
    ]


def test_golden_answers_fit_inside_one_chunk_under_the_named_heading():
    """With the real loader and chunker, each answer lies in one paragraph or row chunk below its heading."""
    from rag_core.chunking import chunk_document
    from rag_core.config import ChunkingConfig
    from rag_core.loaders import load_path

    chunks = {p.name: chunk_document(load_path(p), ChunkingConfig()) for p in sample_files()}
    for item in golden():
        for answer in answers_of(item):
            holders = [c for c in chunks[item["doc"]] if c.granularity in ("paragraph", "row") and answer in c.text]
            assert holders, f"{item['id']}: {answer!r} is split across chunks"
            headings = [c.heading for c in holders]
            assert any(h.startswith(item["heading"]) for h in headings), (item["id"], headings)


# ------------------------------------------------------------------------------------------------ hostile


def test_hostile_fixtures_hold_every_attack_the_security_tests_need():
    markdown = (HOSTILE / "hostile.md").read_text(encoding="utf-8")
    for needle in ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[link](javascript:alert(1))",
                   "Ignore previous instructions and"):
        assert needle in markdown
    page = (HOSTILE / "hostile.html").read_text(encoding="utf-8")
    assert "<script>" in page and 'onerror="alert(1)"' in page and 'href="javascript:alert(1)"' in page
    assert "Ignore previous instructions" in page


def test_hostile_fixtures_and_golden_set_are_not_sample_documents():
    from rag_core.loaders import sample_paths

    names = {Path(p).resolve() for p in sample_paths()}
    assert names == {p.resolve() for p in sample_files()}
