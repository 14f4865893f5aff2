"""The HTTP server's guards in process (Starlette's test client on ``http_app``, no subprocess): the bearer token
lets the right one through and nothing else, a foreign Origin or Host (DNS rebinding) is refused whatever the
token, a local Origin is served, and a non-local bind needs a token. ``test_mcp_http.py`` (slow) runs a real
server and the SDK's client."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from rag_core.mcp_server.server import Backend, http_app

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}
TOKEN = {"Authorization": "Bearer s3cret"}


def _statuses(app, *headers: dict) -> list[int]:
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        return [client.post("/mcp", json=INIT, headers={**ACCEPT, **h}).status_code for h in headers]


def test_the_token_lets_only_itself_through():
    app = http_app(Backend("unused"), token="s3cret")
    assert _statuses(app, {}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}, TOKEN) == \
        [401, 401, 401, 200]


def test_a_foreign_origin_or_host_is_refused_and_a_local_origin_served():
    app = http_app(Backend("unused"), token="s3cret")
    foreign_origin, foreign_host, local = _statuses(
        app, {**TOKEN, "Origin": "http://evil.example"}, {**TOKEN, "Host": "evil.example:8765"},
        {**TOKEN, "Origin": "http://localhost:3000"})
    assert (foreign_origin, foreign_host, local) == (403, 421, 200)
    assert _statuses(http_app(Backend("unused")), {"Origin": "http://attacker.test"}, {}) == [403, 200]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20"])
def test_a_non_local_bind_needs_a_token(host):
    with pytest.raises(ValueError, match="RAG_MCP_TOKEN"):
        http_app(Backend("unused"), host=host)
    app = http_app(Backend("unused"), host=host, token="s3cret")
    with TestClient(app, base_url=f"http://{host}:8765") as client:
        assert client.post("/mcp", json=INIT, headers={**ACCEPT, **TOKEN}).status_code == 200
