"""Start and stop a local ``chroma run`` server on a free loopback port (tests, the load benchmark, demos).

Usage::

    with ChromaServer(path) as server:
        settings = Settings(chroma_host=server.host, chroma_port=server.port)
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from rag_core.errors import IndexError_

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def chroma_executable() -> str:
    """The ``chroma`` command of this Python environment (falls back to PATH)."""
    beside = Path(sys.executable).with_name("chroma")
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if not found:
        raise IndexError_("the `chroma` command is not installed; pip install chromadb")
    return found


def heartbeat(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether a Chroma server answers its heartbeat at host:port."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/api/v2/heartbeat", timeout=timeout_s) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ChromaServer:
    """A ``chroma run`` child process persisting to ``path``; stopped on ``stop()`` or leaving the ``with``."""

    def __init__(self, path: Path | str, host: str = HOST, port: int | None = None, startup_timeout_s: float = 60.0):
        self.path = Path(path)
        self.host = host
        self.port = port or free_port(host)
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen | None = None
        self.log_path = self.path.parent / f"chroma-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ChromaServer:
        self.path.mkdir(parents=True, exist_ok=True)
        command = [chroma_executable(), "run", "--path", str(self.path), "--host", self.host, "--port", str(self.port)]
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        with open(self.log_path, "ab") as log:
            # Own process group, so stop() ends the server and anything it spawned, and nothing else.
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise IndexError_(f"chroma run exited with code {self.process.returncode}; see {self.log_path}")
            if heartbeat(self.host, self.port):
                return self
            time.sleep(0.2)
        self.stop()
        raise IndexError_(f"chroma run did not answer on {self.url} within {self.startup_timeout_s:.0f} s")

    def stop(self, timeout_s: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout_s)

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
