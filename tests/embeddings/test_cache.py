"""The persistent SQLite embedding cache: only new texts are embedded, across instances, threads and processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rag_core.embeddings import CachedEmbedder, HashingEmbedder, get_embedder
from rag_core.embeddings.cache import CACHE_FILE
from rag_core.errors import EmbeddingError


def test_only_new_texts_are_embedded(tmp_path, make_counting):
    inner = make_counting()
    cached = CachedEmbedder(inner, tmp_path)
    first = cached.embed_documents(["a", "bb", "a"])
    assert inner.calls == [["a", "bb"]]  # the repeated text is embedded once
    second = cached.embed_documents(["bb", "ccc", "a"])
    assert inner.calls[-1] == ["ccc"]
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    assert (cached.hits, cached.misses) == (3, 3)
    assert cached.id == "counting-4" and cached.dim == 4 and cached.size() == 3


def test_persists_across_instances(tmp_path, make_counting):
    CachedEmbedder(make_counting(), tmp_path).embed_documents(["x", "yy"])
    inner = make_counting()
    again = CachedEmbedder(inner, tmp_path)
    again.embed_documents(["yy", "x"])
    assert inner.calls == []
    assert (tmp_path / CACHE_FILE).exists()
    mode = sqlite3.connect(tmp_path / CACHE_FILE).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_keyed_by_embedder_id(tmp_path, make_counting):
    CachedEmbedder(make_counting(id="one"), tmp_path).embed_documents(["same"])
    other = make_counting(id="two")
    CachedEmbedder(other, tmp_path).embed_documents(["same"])
    assert other.calls == [["same"]]


def test_wrong_size_vectors_are_misses(tmp_path, make_counting):
    CachedEmbedder(make_counting(dim=4, id="e"), tmp_path).embed_documents(["t"])
    bigger = make_counting(dim=8, id="e")
    assert CachedEmbedder(bigger, tmp_path).embed_documents(["t"]).shape == (1, 8)
    assert bigger.calls == [["t"]]


def test_query_is_cached(tmp_path, make_counting):
    inner = make_counting()
    cached = CachedEmbedder(inner, tmp_path)
    q1 = cached.embed_query("what?")
    q2 = cached.embed_query("what?")
    np.testing.assert_array_equal(q1, q2)
    assert inner.calls == [["what?"]]
    assert cached.embed_documents(["what?"]).shape == (1, 4) and len(inner.calls) == 1


def test_progress_counts_cached_and_new_rows(tmp_path):
    cached = CachedEmbedder(HashingEmbedder(), tmp_path)
    cached.embed_documents(["a", "b"])
    seen = []
    cached.embed_documents(["a", "b", "c", "d", "c"], progress=lambda d, t: seen.append((d, t)))
    assert seen == [(2, 5), (5, 5)]


def test_vectors_equal_the_inner_embedder(tmp_path):
    inner = HashingEmbedder(32)
    cached = CachedEmbedder(inner, tmp_path)
    texts = ["one two", "three", "one two three"]
    cold = cached.embed_documents(texts)
    warm = cached.embed_documents(texts)
    np.testing.assert_array_equal(cold, inner.embed_documents(texts))
    np.testing.assert_array_equal(warm, cold)
    assert warm.dtype == np.float32 and warm.flags.writeable


def test_threads_share_one_cache(tmp_path, make_counting):
    inner = make_counting()
    cached = CachedEmbedder(inner, tmp_path)
    texts = [f"text {i}" for i in range(50)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda chunk: cached.embed_documents(chunk), [texts[i::4] for i in range(4)]))
    assert sum(len(r) for r in results) == 50
    assert cached.size() == 50


def test_two_processes_write_the_same_file(tmp_path):
    code = (
        "import sys; from rag_core.embeddings import get_embedder; "
        "e = get_embedder('hash', cache_dir=sys.argv[1]); "
        "[e.embed_documents([f'{sys.argv[2]} {i}' for i in range(j, j + 20)]) for j in range(0, 200, 20)]"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), name]) for name in ("left", "right")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert get_embedder("hash", cache_dir=tmp_path).size() == 400


def test_unwritable_cache_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(EmbeddingError, match="cannot create the embedding cache folder"):
        CachedEmbedder(HashingEmbedder(), blocker / "cache")


def test_get_embedder_wraps_and_rejects_unknown(tmp_path):
    embedder = get_embedder("hash", cache_dir=tmp_path)
    assert isinstance(embedder, CachedEmbedder) and embedder.id == "hash-384"
    assert isinstance(get_embedder("hash"), HashingEmbedder)
    with pytest.raises(EmbeddingError, match="unknown embedder 'bert'; choose one of minilm, hash, openai"):
        get_embedder("bert")


def test_damaged_cache_file_is_set_aside(tmp_path, make_counting):
    (tmp_path / CACHE_FILE).write_bytes(b"this is not an SQLite database, just junk bytes" * 100)
    inner = make_counting()
    cached = CachedEmbedder(inner, tmp_path)
    assert cached.embed_documents(["a"]).shape == (1, 4)
    assert CachedEmbedder(make_counting(), tmp_path).size() == 1
    assert len(list(tmp_path.glob(f"{CACHE_FILE}.damaged-*"))) == 1


def test_locked_cache_is_not_damage_and_still_embeds(tmp_path, make_counting, monkeypatch, caplog):
    from rag_core.embeddings import cache as cache_module

    CachedEmbedder(make_counting(), tmp_path).embed_documents(["keep me"])
    monkeypatch.setattr(cache_module, "BUSY_TIMEOUT_S", 0.05)
    blocker = sqlite3.connect(tmp_path / CACHE_FILE, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        fresh = CachedEmbedder(make_counting(), tmp_path / "other")  # another folder is unaffected
        assert fresh.size() == 0
        # Writing is blocked: the vectors still come back (the cache only saves time), with a warning logged.
        with caplog.at_level("WARNING"):
            vectors = CachedEmbedder(make_counting(), tmp_path).embed_documents(["new text", "keep me"])
        assert vectors.shape == (2, 4)
        assert "could not write 1 vectors to the embedding cache" in caplog.text
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert not list(tmp_path.glob(f"{CACHE_FILE}.damaged-*"))
    assert CachedEmbedder(make_counting(), tmp_path).size() == 1
