"""Issue 39 items 2–3: the web route's reply is read under a byte cap and a wall-clock deadline, and redirects to
another origin are refused. Loopback servers only."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_core.errors import RagError
from rag_core.retrieval import web

OK_BODY = json.dumps({"results": [{"url": "https://e.org/a", "title": "t", "content": "c"}]}).encode()


def _serve(handle):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 (http.server API)
            handle(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def servers():
    started = []

    def start(handle):
        server, url = _serve(handle)
        started.append(server)
        return url

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def test_redirect_to_another_local_port_is_refused(servers):
    fetched = []

    def secrets(h):
        fetched.append(h.path)
        body = json.dumps({"results": [{"url": "http://x/s", "title": "db_password=hunter2", "content": "s"}]})
        h.send_response(200)
        h.end_headers()
        h.wfile.write(body.encode())

    secret_url = servers(secrets)

    def redirect(h):
        h.send_response(302)
        h.send_header("Location", f"{secret_url}/internal/secrets")
        h.end_headers()

    with pytest.raises(RagError, match="another origin"):
        web.web_search(servers(redirect), "x")
    assert fetched == []  # refused before the other port was asked anything


@pytest.mark.parametrize("target", ["ftp://127.0.0.1/pub/secrets", "https://{netloc}/search", "file:///etc/passwd"])
def test_redirect_to_another_scheme_is_refused_and_one_to_the_same_origin_followed(servers, target):
    def redirect(h):
        if h.path.startswith("/moved"):
            h.send_response(200)
            h.end_headers()
            h.wfile.write(OK_BODY)
            return
        h.send_response(302)
        h.send_header("Location", target.format(netloc=h.headers["Host"]))
        h.end_headers()

    url = servers(redirect)
    with pytest.raises(RagError, match=r"redirected (to another origin|\(HTTP 302\) to '.*', which is not followed)"):
        web.web_search(url, "x")  # file: was refused by urllib itself, reported as 'answered HTTP 302' before
    target = "/moved?q=x"
    assert [h.chunk.metadata["url"] for h in web.web_search(url, "x")] == ["https://e.org/a"]


def test_fifty_thousand_results_with_one_url_are_dropped_before_any_work(servers, monkeypatch):
    """Every duplicate was tokenised before it was dropped (44.5 s in the issue): now only the first is."""
    tokenised = []
    monkeypatch.setattr(web, "count_tokens", lambda text: tokenised.append(text) or len(text.split()))
    row = {"url": "https://e.org/same", "title": "the same page", "content": "x" * 20}
    body = json.dumps({"results": [row] * 50_000}).encode()
    assert len(body) < web.MAX_REPLY_BYTES

    def many(h):
        h.send_response(200)
        h.end_headers()
        h.wfile.write(body)

    start = time.monotonic()
    hits = web.web_search(servers(many), "x", k=5)
    assert [h.chunk.metadata["url"] for h in hits] == ["https://e.org/same"]
    assert len(tokenised) == 1  # the old loop tokenised all 50,000
    assert time.monotonic() - start < 5


def test_reply_over_the_byte_cap_is_refused(servers, monkeypatch):
    monkeypatch.setattr(web, "MAX_REPLY_BYTES", 10_000)

    def big(h):
        h.send_response(200)
        h.end_headers()
        h.wfile.write(b'{"results": [' + b" " * 50_000 + b"]}")

    with pytest.raises(RagError, match="more than 10,000 bytes"):
        web.web_search(servers(big), "x")


def test_a_trickling_reply_is_cut_at_the_deadline(servers):
    def trickle(h):
        h.send_response(200)
        h.end_headers()
        try:
            for _ in range(40):
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(0.1)
            h.wfile.write(OK_BODY)
        except OSError:
            pass

    start = time.monotonic()
    with pytest.raises(RagError, match="time limit"):
        web.web_search(servers(trickle), "x", timeout_s=1.0)
    assert time.monotonic() - start < 2.5


def test_a_stalled_read_ends_at_the_deadline_not_a_socket_timeout_later(servers):
    """Headers, one byte at 1.2 s, then silence: the next read waits only for the time left, not a whole new timeout."""
    def stall(h):
        h.send_response(200)
        h.end_headers()
        h.wfile.flush()
        try:
            time.sleep(1.2)
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(6)
        except OSError:
            pass

    start = time.monotonic()
    with pytest.raises(RagError, match="time limit|unreachable"):
        web.web_search(servers(stall), "x", timeout_s=1.5)
    assert time.monotonic() - start < 2.1  # each read could wait a whole timeout: 1.2 + 1.5 = 2.7 s
