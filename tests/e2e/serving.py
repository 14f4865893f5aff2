"""One way to serve the app for the real-browser tests: `streamlit run app.py` on loopback with its own data folder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
# Switched off unless a test sets them: a developer's own endpoints must not leak into the browser tests.
_SERVICES = ("RAG_LLM_BASE_URL", "RAG_LLM_MODEL", "RAG_LLM_API_KEY", "RAG_CHROMA_HOST", "RAG_WEB_SEARCH_URL")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_browser() -> None:
    """Skip when Debian's chromium or Playwright is missing (never download a browser build)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")


def index_with_hash_embedder(data_dir: Path, documents) -> None:
    """Prepare ``data_dir`` as an earlier session would leave it: ``documents`` stored and indexed with the hash
    embedder (fast and deterministic) at the default chunking, that configuration active but not saved (Home
    counts 0 saved configurations until one is applied)."""
    from rag_core.config import EmbeddingConfig, RAGConfig, Settings
    from rag_core.loaders.document_store import DocumentStore
    from rag_core.services import open_index
    from rag_core.serving.activestate import activate

    settings = Settings(data_dir=data_dir)
    store = DocumentStore(data_dir)
    stored = [store.add(document)[0] for document in documents]
    config = RAGConfig(embedding=EmbeddingConfig(embedder="hash"))
    open_index(config, settings).ingest(stored)
    activate(settings, config, save=False)


@contextmanager
def serve_app(data_dir: Path, env: dict[str, str] | None = None, samples: bool = False) -> Iterator[str]:
    """The app's URL, served from ``data_dir`` with ``env`` on top (``samples``: index them first, as
    ``make run`` does); stopped on exit."""
    full = {**os.environ, "RAG_DATA_DIR": str(data_dir), "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1"}
    for var in _SERVICES:
        full.pop(var, None)
    full.update(env or {})
    if samples:
        subprocess.run([sys.executable, "-m", "rag_core.bootstrap"], cwd=REPO, env=full, check=True, timeout=900)
    port = free_port()
    log_path = Path(data_dir) / "streamlit.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
             "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=REPO, env=full, stdout=log, stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(120):
                try:
                    if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                        break
                except OSError:
                    time.sleep(0.5)
            else:
                pytest.fail("streamlit did not start: " + log_path.read_text()[-2000:])
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
