"""The ``web`` route: a SearxNG-compatible JSON search API, its results turned into hits.

``GET {url}?q=<query>&format=json`` answers ``{"results": [{"url", "title", "content", "score"?}, ...]}``
(SearxNG's format; other meta-search engines offering the same JSON work too). Each result becomes a hit on a
synthetic chunk (granularity ``document``, doc id ``web:<host>``, not verbatim) whose text is the title and
snippet, so web results flow through the same de-dup and formatting as indexed chunks. Standard library only:
one GET does not justify another HTTP dependency.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from rag_core.errors import RagError
from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Hit

USER_AGENT = "agentic-rag-studio/0.1 (+web route)"
MAX_FIELD_CHARS = 2_000  # a result's title or snippet past this is cut before any tokenising
MAX_RESULTS_SCANNED = 200  # results looked at per reply; SearxNG answers tens
MAX_REPLY_BYTES = 5_000_000  # a reply past this is refused, read no further
READ_SIZE = 65_536


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the same scheme and host:port (a redirect elsewhere could reach local services)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (old.scheme, old.netloc) != (new.scheme, new.netloc):
            raise RagError(f"web search at {old.scheme}://{old.netloc} redirected to another origin "
                           f"({new.scheme}://{new.netloc}); refused")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _read_capped(response, deadline: float, url: str) -> bytes:
    """Streams the body; stops at ``MAX_REPLY_BYTES`` or the wall-clock deadline (a trickle cannot outlast it)."""
    parts: list[bytes] = []
    size = 0
    # urllib's timeout is per socket operation: a read started just before the deadline could wait a whole timeout
    # more. http.client keeps its socket private (``fp.raw._sock``), and no public hook bounds one read by a
    # wall clock, so each read's socket timeout is set to the time left where the socket can be reached.
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RagError(f"web search at {url} did not answer within the time limit")
        if sock is not None:
            sock.settimeout(left)
        try:
            part = response.read1(READ_SIZE)
        except TimeoutError as e:
            raise RagError(f"web search at {url} did not answer within the time limit") from e
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > MAX_REPLY_BYTES:
            raise RagError(f"web search at {url} answered more than {MAX_REPLY_BYTES:,} bytes; refused")
        parts.append(part)


def _chunk_for(result: dict[str, Any], position: int) -> Chunk | None:
    url = str(result.get("url") or "").strip()[:MAX_FIELD_CHARS]
    title = str(result.get("title") or "")[:MAX_FIELD_CHARS].strip()
    snippet = str(result.get("content") or "")[:MAX_FIELD_CHARS].strip()
    if not url or not (title or snippet):
        return None
    text = f"{title}\n\n{snippet}".strip()
    host = urllib.parse.urlsplit(url).netloc or "web"
    return Chunk(
        id="web-" + hashlib.sha256(url.encode()).hexdigest()[:16],
        doc_id=f"web:{host}",
        granularity="document",
        chunk_type="prose",
        text=text,
        start=0,
        end=len(text),
        tokens=count_tokens(text),
        heading_path=[title or url],
        verbatim=False,
        position=position,
        metadata={"url": url, "source_name": host, "engine": result.get("engine", "")},
    )


def web_search(url: str, query: str, k: int = 5, timeout_s: float = 10.0) -> list[Hit]:
    """Search ``query`` on the SearxNG-compatible endpoint ``url``; up to ``k`` hits, best first."""
    if not url:
        raise RagError("web search is not configured: set RAG_WEB_SEARCH_URL to a SearxNG-compatible JSON endpoint")
    if not query.strip():
        raise ValueError("the query is empty: type what you are looking for")
    separator = "&" if urllib.parse.urlsplit(url).query else "?"
    request_url = f"{url}{separator}{urllib.parse.urlencode({'q': query, 'format': 'json'})}"
    request = urllib.request.Request(request_url, headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
    try:
        deadline = time.monotonic() + timeout_s  # over the whole request, not per read
        opener = urllib.request.build_opener(_SameOriginRedirects)
        with opener.open(request, timeout=timeout_s) as response:
            payload = json.loads(_read_capped(response, deadline, url).decode("utf-8"))
    except urllib.error.HTTPError as e:
        if 300 <= e.code < 400:  # urllib refuses a redirect to a scheme it does not follow (file:, data:) this way
            where = str(e.headers.get("Location", "") if e.headers else "")[:200] or "nowhere"
            raise RagError(f"web search at {url} redirected (HTTP {e.code}) to {where!r}, which is not followed: "
                           "only redirects to the same origin are; refused") from e
        raise RagError(f"web search at {url} answered HTTP {e.code}: check RAG_WEB_SEARCH_URL and that JSON "
                       "output is enabled (SearxNG: search.formats includes json)") from e
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise RagError(f"web search at {url} is unreachable ({e}); check RAG_WEB_SEARCH_URL") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RagError(f"web search at {url} did not answer JSON; is it a SearxNG-compatible endpoint?") from e
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise RagError(f"web search at {url} answered JSON without a 'results' list")
    hits: list[Hit] = []
    seen: set[str] = set()
    for result in results[:MAX_RESULTS_SCANNED]:
        if not isinstance(result, dict):
            continue
        key = str(result.get("url") or "").strip()[:MAX_FIELD_CHARS]
        if key in seen:  # a duplicate is dropped before any work (tokenising) is spent on it
            continue
        try:
            raw = float(result.get("score") or 0.0)
        except (TypeError, ValueError, OverflowError):
            continue  # a result whose score is not a number drops only itself
        if not math.isfinite(raw):
            continue
        chunk = _chunk_for(result, len(hits))
        if chunk is None:
            continue
        seen.add(key)
        rank = len(hits) + 1
        hits.append(Hit(chunk=chunk, score=raw if raw else 1.0 / rank, ranks={"web": rank},
                        scores={"web": raw}, source_name=chunk.metadata["source_name"]))
        if len(hits) >= k:
            break
    return hits
