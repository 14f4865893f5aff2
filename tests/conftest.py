"""Shared fixtures: every test gets its own data directory so nothing touches `.rag_data/`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    data_dir = tmp_path / "rag_data"
    monkeypatch.setenv("RAG_DATA_DIR", str(data_dir))
    for var in ("RAG_LLM_BASE_URL", "RAG_LLM_MODEL", "RAG_CHROMA_HOST", "RAG_WEB_SEARCH_URL", "RAG_EMBED_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    yield data_dir


@pytest.fixture
def data_dir(_isolated_data_dir) -> Path:
    return _isolated_data_dir


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.exists():
        pytest.skip("../shared is not beside this checkout")
    return SHARED


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """One `chroma run` on loopback for the session (tests marked chroma_server)."""
    from rag_core.stores.chroma.server import ChromaServer

    with ChromaServer(tmp_path_factory.mktemp("chroma-server") / "db") as server:
        yield server


@pytest.fixture
def collection_name(request) -> str:
    """A collection name unique per test (the server is shared by the whole session)."""
    return "t-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:12]


@pytest.fixture
def scripted_server():
    """Factory: ``with scripted_server([...]) as server`` gives a loopback chat-completions server."""
    from tests.fakes.openai_server import ScriptedOpenAIServer

    return ScriptedOpenAIServer


@pytest.fixture
def make_llm_settings():
    """``make_llm_settings(base_url, **overrides)``: settings whose LLM is a scripted server."""
    from tests.fakes.openai_server import llm_settings

    return llm_settings


@pytest.fixture
def server_down(data_dir):
    """An index built embedded from three sample documents, reopened pointing at a Chroma server that does not
    listen: ``(index, settings, port)``."""
    from rag_core.config import Settings
    from rag_core.embeddings import get_embedder
    from rag_core.index import Index
    from rag_core.loaders import load_path, sample_paths
    from rag_core.stores.chroma.server import free_port

    embedded = Settings(data_dir=data_dir)
    embedder = get_embedder("hash", embedded, None)
    Index.open("served", embedded, embedder).ingest([load_path(p) for p in sample_paths()[:3]])
    port = free_port()
    down = Settings(data_dir=data_dir, chroma_host="127.0.0.1", chroma_port=port)
    return Index.open("served", down, embedder), down, port


@pytest.fixture
def auth_doc():
    """The fake chunker's authentication guide (tests/fakes/chunker.py)."""
    from tests.fakes.chunker import AUTH, make_doc

    return make_doc("auth.md", AUTH)


@pytest.fixture
def billing_doc():
    """The fake chunker's billing guide (tests/fakes/chunker.py)."""
    from tests.fakes.chunker import BILLING, make_doc

    return make_doc("billing.md", BILLING)


@pytest.fixture
def one_by_one(monkeypatch):
    """Each document of an ingest job is its own commit, and the job waits after the first until ``go`` is set
    (a re-index caught half-way: the serving index must keep answering)."""
    import threading

    from rag_core.serving import ingest_job

    go, first_done = threading.Event(), threading.Event()
    original = ingest_job._ingest_batch

    def batch(runner, work, index, docs, files):
        original(runner, work, index, docs, files)
        first_done.set()
        assert go.wait(60), "the test never let the job go on"

    monkeypatch.setattr(ingest_job, "ingest_batches", lambda docs: [[doc] for doc in docs])
    monkeypatch.setattr(ingest_job, "_ingest_batch", batch)
    yield go, first_done
    go.set()


@pytest.fixture(autouse=True)
def _main_module_restored():
    """Streamlit's script runner leaves ``sys.modules["__main__"]`` set to the last AppTest script it ran; a later
    test that spawns a process (multiprocessing's "spawn" re-runs ``__main__`` in the child) would then run that
    script there and fail. Every test ends with the real ``__main__`` back."""
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main
