"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM, LiteLLM ...).

Retries are done here rather than by the ``openai`` client so that the policy is explicit and testable:
exponential backoff on 429 (honouring ``Retry-After``), 5xx, timeouts and refused connections; no retry on
401/403/404/400, which cannot heal by waiting. Every failure ends as an ``EmbeddingError`` saying what to fix.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from rag_core.config import Settings
from rag_core.embeddings.base import (
    batches,
    check_query_text,
    documents_checked,
    l2_normalize,
    report,
)
from rag_core.errors import EmbeddingError
from rag_core.types import Progress

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BATCH_SIZE = 128
MAX_RETRIES = 4
BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
TIMEOUT_S = 60.0
# After the endpoint proved unreachable, requests fail at once for this long instead of retrying again: during an
# outage every search falls back to keyword search without first waiting out the backoff.
OUTAGE_HOLD_S = 15.0
# Dimensions of well-known models, so ``dim`` is known without a request; others are probed once.
KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


def _retry_after_s(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint; vectors are L2-normalised here (not every server does)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        *,
        batch_size: int = BATCH_SIZE,
        max_retries: int = MAX_RETRIES,
        backoff_s: float = BACKOFF_S,
        max_backoff_s: float = MAX_BACKOFF_S,
        timeout_s: float = TIMEOUT_S,
        sleep: Callable[[float], None] = time.sleep,
        outage_hold_s: float = OUTAGE_HOLD_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not model:
            raise EmbeddingError("no embedding model is set: set RAG_EMBED_MODEL (e.g. text-embedding-3-small)")
        if not base_url.startswith(("http://", "https://")):
            raise EmbeddingError(f"the embeddings base URL must start with http:// or https://, got {base_url!r}")
        if batch_size < 1 or max_retries < 0:
            raise ValueError(f"batch_size must be >= 1 and max_retries >= 0, got {batch_size} and {max_retries}")
        # lazy: the OpenAI SDK is heavy, imported only where it is used
        import openai

        self._openai = openai
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._sleep = sleep
        self.outage_hold_s = outage_hold_s
        self._clock = clock
        self._outage: tuple[float, str] | None = None  # (until when, why) after the endpoint proved unreachable
        self.id = "openai-" + re.sub(r"[^A-Za-z0-9._-]+", "-", model)
        # Local servers (Ollama, vLLM) accept any key, but the client insists on one.
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "not-needed", max_retries=0, timeout=timeout_s
        )
        self._dim: int | None = KNOWN_DIMS.get(model) if self.base_url == DEFAULT_BASE_URL else None
        self._dim_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs) -> OpenAIEmbedder:
        base_url = settings.embed_base_url or (DEFAULT_BASE_URL if settings.embed_api_key else "")
        if not base_url:
            raise EmbeddingError(
                "the 'openai' embedder is not configured: set RAG_EMBED_BASE_URL (e.g. http://localhost:11434/v1 "
                "for Ollama) or RAG_EMBED_API_KEY for api.openai.com, or choose the 'minilm' embedder"
            )
        return cls(base_url, settings.embed_model, settings.embed_api_key, **kwargs)

    def assume_dim(self, dim: int) -> None:
        """Take ``dim`` (an index manifest's) as the vector size when it is not known yet, so opening an index
        needs no request: a collection opens, and answers keyword searches, while the endpoint is down."""
        with self._dim_lock:
            if self._dim is None and int(dim) > 0:
                self._dim = int(dim)

    @property
    def dim(self) -> int:
        with self._dim_lock:
            if self._dim is None:
                self._dim = int(self._request(["dimension probe"]).shape[1])
            return self._dim

    def _request(self, texts: list[str]) -> np.ndarray:
        """One embeddings request with retries; rows in input order, not yet normalised."""
        openai = self._openai
        # Most servers reject empty input; a single space embeds as "no content".
        inputs = [text if text.strip() else " " for text in texts]
        self._check_outage()
        attempt = 0
        while True:
            try:
                response = self._client.embeddings.create(model=self.model, input=inputs, encoding_format="float")
                break
            except openai.AuthenticationError as e:
                raise EmbeddingError(
                    f"the embeddings endpoint {self.base_url} refused the API key (401): check RAG_EMBED_API_KEY"
                ) from e
            except openai.PermissionDeniedError as e:
                raise EmbeddingError(
                    f"the embeddings endpoint {self.base_url} denied access (403) to model {self.model!r}"
                ) from e
            except openai.NotFoundError as e:
                raise EmbeddingError(
                    f"{self.base_url}/embeddings or model {self.model!r} was not found (404): check "
                    "RAG_EMBED_BASE_URL (usually ends in /v1) and RAG_EMBED_MODEL"
                ) from e
            except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as e:
                # InternalServerError covers every 5xx; APIConnectionError covers refused connections and timeouts.
                if attempt >= self.max_retries:
                    message = self._give_up_message(e, attempt + 1)
                    if isinstance(e, openai.APIConnectionError):
                        self._outage = (self._clock() + self.outage_hold_s, message)
                    raise EmbeddingError(message) from e
                delay = _retry_after_s(e) if isinstance(e, openai.RateLimitError) else None
                if delay is None:
                    delay = self.backoff_s * (2**attempt)
                self._sleep(min(delay, self.max_backoff_s))
                attempt += 1
            except openai.APIStatusError as e:
                raise EmbeddingError(
                    f"the embeddings endpoint {self.base_url} rejected the request ({e.status_code}): {e.message}"
                ) from e
            except openai.OpenAIError as e:
                raise EmbeddingError(f"the embeddings endpoint {self.base_url} failed: {e}") from e
        self._outage = None
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(inputs):
            raise EmbeddingError(
                f"the embeddings endpoint {self.base_url} returned {len(data)} vectors for {len(inputs)} texts"
            )
        try:
            vectors = np.asarray([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise EmbeddingError(f"the embeddings endpoint {self.base_url} returned malformed vectors: {e}") from e
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise EmbeddingError(f"the embeddings endpoint {self.base_url} returned vectors of shape {vectors.shape}")
        bad = int(np.count_nonzero(~np.isfinite(vectors).all(axis=1)))
        if bad:  # NaN/inf would poison the cache and be refused by the index: fail before either sees them
            raise EmbeddingError(
                f"the embeddings endpoint {self.base_url} returned {bad} of {len(vectors)} vectors with NaN or "
                "infinite values; nothing was cached or indexed, retry when the endpoint is healthy"
            )
        return vectors

    def _check_outage(self) -> None:
        """Fail at once while a recent outage holds (see ``OUTAGE_HOLD_S``); the next request after it tries again."""
        outage = self._outage
        if outage is not None:
            remaining = outage[0] - self._clock()
            if remaining > 0:
                raise EmbeddingError(f"{outage[1]} (not retried for another {remaining:.0f} s)")

    def _give_up_message(self, error: Exception, attempts: int) -> str:
        openai = self._openai
        if isinstance(error, openai.APITimeoutError):
            what = "timed out"
        elif isinstance(error, openai.APIConnectionError):
            what = "is unreachable (connection failed)"
        elif isinstance(error, openai.RateLimitError):
            what = "kept rate-limiting (429)"
        else:
            what = f"kept failing with a server error ({getattr(error, 'status_code', '5xx')})"
        return f"the embeddings endpoint {self.base_url} {what} after {attempts} attempts; check RAG_EMBED_BASE_URL"

    @documents_checked
    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        total = len(texts)
        parts = []
        done = 0
        for batch in batches(texts, self.batch_size):
            vectors = self._request(list(batch))
            if parts and vectors.shape[1] != parts[0].shape[1]:
                raise EmbeddingError(f"the embeddings endpoint {self.base_url} changed vector size mid-request")
            parts.append(vectors)
            done += len(batch)
            report(progress, done, total)
        out = l2_normalize(np.concatenate(parts))
        with self._dim_lock:
            if self._dim is None:
                self._dim = int(out.shape[1])
            elif self._dim != out.shape[1]:
                raise EmbeddingError(
                    f"model {self.model!r} returned {out.shape[1]}-dim vectors, expected {self._dim}"
                )
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([check_query_text(text)])[0]

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(base_url={self.base_url!r}, model={self.model!r})"
