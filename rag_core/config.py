"""Settings from the environment, and ``RAGConfig``: every tunable parameter in one validated model.

``Settings`` holds deployment facts (where data lives, which servers exist) read from ``RAG_*``
environment variables. ``RAGConfig`` holds what a user tunes (chunking, embedding, retrieval, agent);
named configurations are saved as JSON in the data directory (see ``rag_core.serving.configstore``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag_core.types import ChunkingStrategy, ChunkType, EmbedderName, Granularity, PolicyName, RetrievalStrategy

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    """Deployment settings, read from ``RAG_*`` environment variables (or a ``.env`` file)."""

    model_config = SettingsConfigDict(env_prefix="RAG_", env_file=".env", extra="ignore")

    data_dir: Path = Field(default=PROJECT_ROOT / ".rag_data", description="Where documents, indexes, configs live.")
    # OpenAI-compatible chat model for the agent and the LLM router (off when base URL and model are empty).
    llm_base_url: str = ""
    llm_api_key: str = ""
    llm_model: str = ""
    llm_timeout_s: float = 30.0
    # Seconds added to ``llm_timeout_s`` per 1,000 prompt tokens: a small model on a CPU reads a long prompt slowly
    # (SmolLM2-135M on 2 cores: 4-5k tokens took longer than 30 s before the first word).
    llm_timeout_per_1k_prompt_s: float = Field(10.0, ge=0, le=600)
    # The model's context size in tokens; 0: asked of the server (llama.cpp ``/props``, ``/v1/models``) when needed.
    llm_context_tokens: int = Field(0, ge=0, le=10_000_000)
    llm_max_retries: int = 3
    # Most tokens the model may write per request, by purpose: a tool-calling step, the retrieval router's one-word
    # choice, the final answer. A small local model left unbounded can write until its context is full.
    llm_max_tokens_step: int = Field(512, ge=16, le=32_768)
    llm_max_tokens_router: int = Field(16, ge=1, le=1024)
    llm_max_tokens_answer: int = Field(768, ge=16, le=32_768)
    # Wall-clock budget of one question: past it the agent stops and answers from what it has found.
    llm_time_budget_s: float = Field(60.0, gt=0, le=3600)
    # What runs the local MiniLM model: ONNX Runtime (``onnx``), the numpy pass (``numpy``), or ``auto`` (ONNX
    # Runtime when installed). Same vectors either way; numpy is the fallback where onnxruntime cannot load.
    minilm_engine: Literal["auto", "onnx", "numpy"] = "auto"
    # OpenAI-compatible embeddings endpoint for the ``openai`` embedder.
    embed_base_url: str = ""
    embed_api_key: str = ""
    embed_model: str = "text-embedding-3-small"
    # The vector store backend: a row of ``rag_core.stores.backends`` (a test holds this list equal to the table).
    vector_store: Literal["chroma"] = "chroma"
    # Chroma server (client/server mode); empty host means embedded PersistentClient in data_dir.
    chroma_host: str = ""
    chroma_port: int = 8000
    # With a Chroma server, how often (seconds) an instance asks whether another instance committed to an index it
    # serves; a change is visible everywhere within this time. Writers hold a lease in the server that expires
    # when not renewed for ``lease_ttl_s`` (a crashed writer), and wait up to ``lease_wait_s`` for another's.
    sync_s: float = Field(2.0, ge=0, le=3600)
    lease_ttl_s: float = Field(60.0, gt=0, le=86_400)
    lease_wait_s: float = Field(600.0, ge=0, le=86_400)
    # SearxNG-compatible JSON search API for the ``web`` route; empty means not configured.
    web_search_url: str = ""
    max_upload_mb: int = 50
    # Limits on the work one input can cause (README, "Security"): over a limit the input is refused with a message.
    max_questions: int = Field(5000, ge=1, description="Questions per question set, evaluation and bundle.")
    max_eval_configs: int = Field(40, ge=1, description="Configurations per evaluation and bundle (a sweep has 36).")
    max_bundle_documents: int = Field(10_000, ge=1, description="Documents carried by one bundle.")
    max_upload_files: int = Field(5_000, ge=1, description="Files in one upload (a folder, a pick of files or a ZIP's "
                                  "members); past it the rest are refused with a note, what came first is kept.")
    # Set well above the shared corpora (largest file: 916 headings, 3,935 chunks at 512 tokens, 10,957 at 128;
    # all 290 files: 38,350 chunks at 128 tokens) so they load whole; SciFact's 5,183 abstracts too.
    max_csv_rows: int = Field(5_000, ge=1, description="Rows of one CSV/TSV file; more are cut, with a note.")
    max_headings: int = Field(5_000, ge=1, description="Headings in one document; more and the file is refused.")
    max_chunks_per_document: int = Field(50_000, ge=1, description="Chunks of one document (all granularities).")
    # Peak RSS of a whole ingest (hash embedder, 2 shared cores): 9.9 million characters 504 MB (298 s), 4.9 million
    # 390 MB (110 s); the largest shared corpus file is 0.7 million.
    max_document_mb: float = Field(5.0, gt=0, description="Text of one document after conversion, in millions of "
                                   "characters; a longer one is refused before it is chunked.")
    max_chunks_per_ingest: int = Field(200_000, ge=1, description="Chunks indexed by one ingest.")

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    @property
    def web_configured(self) -> bool:
        return bool(self.web_search_url)


def get_settings() -> Settings:
    """Fresh settings from the current environment (cheap; callers may cache)."""
    return Settings()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ChunkingConfig(_Strict):
    strategy: ChunkingStrategy = "structure"
    max_tokens: int = Field(512, ge=32, le=8192)
    overlap: int = Field(
        32, ge=0, le=1024, description="Token overlap when prose is split (structure) or between windows (fixed)."
    )

    @staticmethod
    def fitted_overlap(max_tokens: int, overlap: int) -> int:
        """``overlap`` kept to at most a quarter of ``max_tokens``: the one rule for an overlap nobody chose with
        a chunk size somebody did (``chunk`` and ``ingest --max-tokens``, a sweep's sizes)."""
        return min(overlap, max(0, max_tokens // 4))

    @classmethod
    def default_overlap(cls, strategy: str, max_tokens: int | None = None) -> int:
        """The overlap when none is given: 50 tokens between fixed windows, 32 when prose is split, fitted to
        ``max_tokens`` when one is given (so ``--max-tokens 64`` means 16 for ``chunk`` and ``ingest`` alike)."""
        base = 50 if strategy == "fixed" else cls.model_fields["overlap"].default
        return base if max_tokens is None else cls.fitted_overlap(max_tokens, base)

    @model_validator(mode="after")
    def _overlap_below_max(self) -> ChunkingConfig:
        if self.overlap >= self.max_tokens:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than max_tokens ({self.max_tokens})")
        return self


class EmbeddingConfig(_Strict):
    embedder: EmbedderName = "minilm"
    hash_dim: int = Field(384, ge=16, le=4096)


DEFAULT_RRF_K = 20


class RetrievalConfig(_Strict):
    # hybrid by default: it found more than auto's vector-or-keyword routes on every set measured (SciFact,
    # the golden set, FastAPI docs QA, code QA; bench scifact, golden, docsqa).
    strategy: RetrievalStrategy = "hybrid"
    fusion: Literal["rrf", "weighted"] = "rrf"
    # RRF's constant: 20, not the customary 60. A smaller k lets each retriever's top ranks weigh more against
    # agreement lower down; measured in one run each (bench docsqa, bench scifact --fusion-sweep), k = 10 / 20 / 30 /
    # 60 / 120 gave one-shot place recall at 1,500 tokens 0.707 / 0.717 / 0.707 / 0.697 / 0.667 on the FastAPI docs
    # and 0.853 / 0.837 / 0.830 / 0.827 / 0.830 on code, and SciFact hybrid nDCG@10 0.7172 / 0.7192 / 0.7182 /
    # 0.7147 / 0.7143 (k = 100); 20 is in the middle of the flat best region on all three.
    rrf_k: int = Field(DEFAULT_RRF_K, ge=1, le=1000)
    hybrid_weight: float = Field(0.5, ge=0.0, le=1.0, description="Weight of the vector score in weighted fusion.")
    section_weight: float = Field(
        1.0, ge=0.0, le=4.0, description="Hybrid passage search: weight of the rank of a passage's section (0: off).")
    granularity: Literal[Granularity, "any"] = "paragraph"
    chunk_types: list[ChunkType] | None = None
    # The intent's chunk types as a hard filter: off by default, since a wrong guess removes the answer (real-docs
    # QA measured it; bench docsqa).
    use_intent_filter: bool = False
    initial_k: int = Field(3, ge=1, le=100)
    max_k: int = Field(20, ge=1, le=200)
    max_iterations: int = Field(3, ge=1, le=10)
    min_confidence: float = Field(0.7, ge=0.0, le=1.0)
    min_score: float = Field(0.0, ge=0.0, le=1.0, description="Hits whose calibrated confidence is below are dropped.")
    dedup_threshold: float = Field(0.85, ge=0.5, le=1.0)
    token_budget: int = Field(4000, ge=100, le=128_000)

    def one_shot(self) -> RetrievalConfig:
        """The one-shot RAG baseline the agent is compared with: one hybrid pass, top 5, no intent filter and no
        relevance floor (the Agent Playground's side-by-side view and ``bench agent``)."""
        return self.model_copy(update={"strategy": "hybrid", "initial_k": 5, "max_iterations": 1, "min_score": 0.0,
                                       "use_intent_filter": False})

    @model_validator(mode="after")
    def _k_order(self) -> RetrievalConfig:
        if self.initial_k > self.max_k:
            raise ValueError(f"initial_k ({self.initial_k}) must not exceed max_k ({self.max_k})")
        return self


class AgentConfig(_Strict):
    policy: PolicyName = "offline"
    max_steps: int = Field(10, ge=1, le=30)
    max_retrievals: int = Field(8, ge=1, le=30)
    context_budget: int = Field(3000, ge=200, le=128_000)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    # A question of several parts whose gathered chunks overflow the budget: keep each chunk's most relevant
    # sentences (rows, items) so more places fit, instead of leaving whole chunks out (rag_core.agent.compress).
    trim_chunks: bool = True
    # With an LLM policy, the model writes the question's plan (kind, parts, search words); the rules of
    # rag_core.agent.plan when this is off or the model's plan fails its checks (rag_core.agent.plan_model).
    plan_by_model: bool = True


class RAGConfig(_Strict):
    """Every tunable parameter of chunking, embedding, retrieval and the agent."""

    name: str = Field("default", min_length=1, max_length=80, pattern=r"^[A-Za-z0-9 _.\-]+$")
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)

    def renamed(self, name: str) -> RAGConfig:
        """This configuration under another ``name``, validated again (pydantic's ``ValidationError`` when bad)."""
        return RAGConfig.model_validate({**self.model_dump(), "name": name})

    def index_key(self) -> str:
        """Short hash of what determines an index: chunking parameters + embedder."""
        payload = json.dumps(
            {"chunking": self.chunking.model_dump(), "embedding": self.embedding.model_dump()}, sort_keys=True
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:10]

    def collection_name(self, base: str = "docs") -> str:
        """Chroma collection name for this configuration (3–63 chars, [a-zA-Z0-9._-])."""
        return f"{base}-{self.index_key()}"


def setting_field(path: str) -> FieldInfo:
    """The pydantic ``FieldInfo`` of a dotted path of ``RAGConfig`` (ValueError naming the known sections)."""
    model: type[BaseModel] = RAGConfig
    parts = path.split(".")
    for depth, part in enumerate(parts):
        fields = model.model_fields
        if part not in fields:
            known = ", ".join(sorted(fields))
            raise ValueError(f"unknown setting '{path}': '{part}' is not one of {known}")
        info = fields[part]
        if depth == len(parts) - 1:
            return info
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ValueError(f"unknown setting '{path}': '{part}' has no sub-settings")
    raise ValueError(f"unknown setting '{path}'")


def field_bounds(path: str) -> tuple[float | None, float | None]:
    """The (ge, le) bounds a field declares with ``Field(ge=…, le=…)`` (None where it declares none): the one place
    the tuner's ranges, the command line's range messages and the pages' widgets read them from."""
    low = high = None
    for item in setting_field(path).metadata:
        if isinstance(item, annotated_types.Ge):
            low = item.ge
        elif isinstance(item, annotated_types.Gt):
            low = item.gt
        elif isinstance(item, annotated_types.Le):
            high = item.le
        elif isinstance(item, annotated_types.Lt):
            high = item.lt
    return low, high
