"""Two app instances (separate data folders) on one `chroma run`: one truth, visible everywhere within RAG_SYNC_S.

Each instance is a process with its own ``RAG_DATA_DIR`` and the same ``RAG_CHROMA_HOST``/``PORT``: the command
line (``python -m rag_core ...``) and ``instance.py`` (a long-lived instance that searches, zooms or removes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.chroma_server

REPO = Path(__file__).resolve().parents[2]
INSTANCE = Path(__file__).with_name("instance.py")
SYNC_S = 1.0

AUTH = """# Auth

Tokens are signed with the RS256 algorithm.

## Rotation

Signing keys rotate every ninety days.
"""
BILLING = """# Billing

Invoices are emailed monthly to the account owner.

## Refunds

Refunds reach the card within five working days.
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from rag_core.stores.chroma.server import ChromaServer

    with ChromaServer(tmp_path_factory.mktemp("two-instances") / "db") as running:
        yield running


class Instance:
    """One app instance: a data folder of its own, the shared server."""

    def __init__(self, name: str, data_dir: Path, server, collection: str):
        self.name, self.data_dir, self.collection = name, data_dir, collection
        self.env = {**os.environ, "PYTHONPATH": str(REPO), "RAG_DATA_DIR": str(data_dir),
                    "RAG_CHROMA_HOST": server.host, "RAG_CHROMA_PORT": str(server.port), "RAG_SYNC_S": str(SYNC_S),
                    "RAG_LEASE_TTL_S": "5", "ANONYMIZED_TELEMETRY": "False"}

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, *args], cwd=REPO, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def cli(self, *args: str, timeout: float = 180) -> dict | list:
        done = subprocess.run([sys.executable, "-m", "rag_core", *args], cwd=REPO, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{self.name}: {args}: {done.stderr}"
        return json.loads(done.stdout)

    def ingest(self, *paths: Path) -> dict:
        return self.cli("ingest", *map(str, paths), "--collection", self.collection, "--embedder", "hash", "--json")

    def search(self, query: str, strategy: str) -> list[str]:
        result = self.cli("search", query, "--collection", self.collection, "--strategy", strategy, "--json")
        return [hit["doc_name"] for hit in result["hits"]]

    def run(self, *args: str, timeout: float = 180) -> dict:
        done = subprocess.run([sys.executable, str(INSTANCE), self.collection, *args], cwd=REPO, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"{self.name}: {args}: {done.stderr}"
        return json.loads(done.stdout.strip().splitlines()[-1])

    def watch(self, query: str, wanted: str, timeout_s: float = 60) -> subprocess.Popen:
        process = self.popen(str(INSTANCE), self.collection, "watch", query, wanted, str(timeout_s))
        first = process.stdout.readline()
        assert "ready" in first, process.stderr.read()
        return process


def _watched(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def pair(tmp_path, server, request):
    collection = "two-" + str(abs(hash(request.node.name)) % 10**8)
    return (Instance("A", tmp_path / "a", server, collection), Instance("B", tmp_path / "b", server, collection))


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _consistent(state: dict) -> None:
    assert state["chunks"] == state["vectors"] == state["bm25_rows"] > 0, state
    assert state["missing_parents"] == 0, state


def test_ingest_through_a_is_found_through_b_within_the_refresh_time(pair, tmp_path):
    a, b = pair
    a.ingest(_write(tmp_path / "in", "auth.md", AUTH))
    watcher = b.watch("invoices emailed monthly", "present")  # B is running (opened, cache built) before A writes
    a.ingest(_write(tmp_path / "in2", "billing.md", BILLING))
    committed = time.time()
    seen = _watched(watcher)
    assert seen["seen"] is not None, "B never saw A's ingest"
    assert seen["seen"] - committed <= SYNC_S + 1.0
    found = seen["find"]
    assert found["keyword"][0][1] == "billing.md"
    assert "billing.md" in [name for _, name in found["vector"]]
    assert any("Invoices are emailed" in text for text in found["zoom"])  # B's zoom tools read it
    # A fresh B process (the command line) finds it by keyword and by vector search; its zoom tools read it too.
    assert b.search("invoices emailed monthly", "keyword")[0] == "billing.md"
    assert "billing.md" in b.search("invoices emailed monthly owner", "vector")
    zoom = b.run("find", "Billing Refunds")["zoom"]
    assert any("Invoices are emailed" in text for text in zoom)
    assert b.cli("config", "list") == []  # nothing else leaked into B's view
    state = b.run("state")
    assert state["library"] == ["auth.md", "billing.md"]  # B's Documents page lists what A uploaded
    _consistent(state)


def test_delete_through_b_stops_a_returning_it(pair, tmp_path):
    a, b = pair
    a.ingest(_write(tmp_path / "in", "auth.md", AUTH), _write(tmp_path / "in", "billing.md", BILLING))
    assert b.search("invoices emailed monthly", "keyword")[0] == "billing.md"
    watcher = a.watch("invoices emailed monthly", "absent")  # A serves while B deletes
    removed = b.run("remove", "billing.md")
    deleted = time.time()
    assert removed == {"removed": [True]}
    seen = _watched(watcher)
    assert seen["seen"] is not None and seen["seen"] - deleted <= SYNC_S + 1.0
    assert "billing.md" not in a.search("invoices emailed monthly", "keyword")
    assert "billing.md" not in a.search("invoices emailed monthly owner", "vector")
    state = a.run("state")
    assert state["documents"] == ["auth.md"]
    _consistent(state)


def test_concurrent_ingests_end_in_one_consistent_collection(pair, tmp_path):
    a, b = pair
    a.ingest(_write(tmp_path / "seed", "auth.md", AUTH))
    folder_a, folder_b = tmp_path / "fa", tmp_path / "fb"
    for i in range(6):
        for folder, word in ((folder_a, "alpha"), (folder_b, "beta")):
            text = f"# {word} {i}\n\n{word} topic {i}.\n\n## Detail\n\nMore on {word}{i}.\n"
            _write(folder, f"{word[0]}{i}.md", text)
    args = ("-m", "rag_core", "ingest", "--collection", a.collection, "--embedder", "hash", "--json")
    first, second = a.popen(*args[:3], str(folder_a), *args[3:]), b.popen(*args[:3], str(folder_b), *args[3:])
    for process in (first, second):
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    for instance in (a, b):
        state = instance.run("state")
        names = ["auth.md", *(f"a{i}.md" for i in range(6)), *(f"b{i}.md" for i in range(6))]
        assert state["documents"] == sorted(names)
        _consistent(state)
    assert a.run("state")["generation"] == b.run("state")["generation"]


def test_killing_a_mid_ingest_leaves_b_answering_from_the_last_version(pair, tmp_path, server):
    import chromadb

    a, b = pair
    a.ingest(_write(tmp_path / "seed", "auth.md", AUTH))
    before = b.run("state")
    big = "\n\n".join(f"# Part {i}\n\nZebra crossing number {i} is painted white.\n\n- item {i}\n- more {i}"
                      for i in range(1500))
    writer = a.popen("-m", "rag_core", "ingest", str(_write(tmp_path / "big", "big.md", big)),
                     "--collection", a.collection, "--embedder", "hash")
    rows = chromadb.HttpClient(host=server.host, port=server.port).get_collection(a.collection)
    deadline = time.monotonic() + 120
    while rows.count() <= before["vectors"]:  # wait until A has written some rows, then kill it
        assert writer.poll() is None, writer.stderr.read()
        assert time.monotonic() < deadline, "A never started writing"
        time.sleep(0.02)
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    assert rows.count() > before["vectors"]  # rows of the dead ingest are in the server ...
    state = b.run("state")  # ... but B answers from the last committed version
    assert state["documents"] == ["auth.md"] and state["chunks"] == before["chunks"]
    assert b.search("zebra crossing painted", "keyword") == []
    assert b.search("tokens signed RS256", "keyword")[0] == "auth.md"
    # The next writer (B) takes the dead writer's lease and sweeps its rows.
    b.ingest(_write(tmp_path / "in", "billing.md", BILLING))
    state = b.run("state")
    assert state["documents"] == ["auth.md", "billing.md"]
    _consistent(state)


def test_a_configuration_saved_through_a_is_listed_by_b(pair, tmp_path):
    a, b = pair
    config = tmp_path / "shared.json"
    config.write_text(json.dumps({"name": "team-shared", "retrieval": {"initial_k": 7}}), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "rag_core", "config", "import", str(config)], cwd=REPO, env=a.env,
                   check=True, capture_output=True)
    assert "team-shared" in b.cli("config", "list")
    shown = b.cli("config", "show", "team-shared")
    assert shown["retrieval"]["initial_k"] == 7
    assert not (b.data_dir / "configs").exists() and not (a.data_dir / "configs").exists()  # on the server only
    subprocess.run([sys.executable, "-m", "rag_core", "config", "delete", "team-shared"], cwd=REPO, env=b.env,
                   check=True, capture_output=True)
    assert "team-shared" not in a.cli("config", "list")
