"""``MetaRecords``: the ``studio-meta`` collection of a Chroma server, where the records several instances share
live (``rag_core.stores.shared`` reads and writes them: manifests, leases, pending writes, sources; and
``rag_core.stores.records``' saved configurations and runs). Each record carries a 1-dimensional dummy vector,
because Chroma stores no row without one; records are found by their metadata fields, and the Chroma ``where``
clause that becomes stays here."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from rag_core.errors import IndexError_

META_COLLECTION = "studio-meta"
_DUMMY = [0.0]
_PAGE = 1000


class MetaRecords:
    """The ``studio-meta`` collection of a Chroma server, connected on first use."""

    def __init__(self, connect: Callable[[], Any], where: str):
        self._connect = connect
        self._where = where
        self._collection = None

    def _live(self):
        if self._collection is None:
            try:
                self._collection = self._connect().get_or_create_collection(
                    META_COLLECTION, embedding_function=None, metadata={"purpose": "Agentic RAG Studio shared state"})
            except IndexError_:
                raise
            except Exception as e:
                raise IndexError_(f"{self._where} is unreachable or unusable: {e}") from e
        return self._collection

    def _fail(self, what: str, e: Exception) -> IndexError_:
        self._collection = None  # reconnect next time (the server may have restarted)
        return IndexError_(f"{what} failed on {self._where} ({META_COLLECTION}): {e}")

    def put(self, record_id: str, document: str, metadata: dict[str, Any]) -> None:
        self.put_many([(record_id, document, metadata)])

    def put_many(self, records: list[tuple[str, str, dict[str, Any]]]) -> None:
        try:
            for start in range(0, len(records), 100):
                part = records[start : start + 100]
                self._live().upsert(ids=[r[0] for r in part], embeddings=[_DUMMY] * len(part),
                                    documents=[r[1] for r in part], metadatas=[r[2] for r in part])
        except IndexError_:
            raise
        except Exception as e:
            raise self._fail("writing shared records", e) from e

    def claim(self, record_id: str, document: str, metadata: dict[str, Any]) -> bool:
        """Write ``record_id`` unless it exists; True when the stored record is ours (its ``token`` matches)."""
        token = uuid.uuid4().hex
        try:
            self._live().add(ids=[record_id], embeddings=[_DUMMY], documents=[document],
                             metadatas=[{**metadata, "token": token}])
        except IndexError_:
            raise
        except Exception as e:
            raise self._fail("committing", e) from e
        found = self.get([record_id], documents=False)
        return bool(found) and found[0][2].get("token") == token

    def get(self, ids: list[str], documents: bool = True) -> list[tuple[str, str | None, dict[str, Any]]]:
        """``(id, document, metadata)`` of the records of ``ids`` that exist."""
        include = ["metadatas", "documents"] if documents else ["metadatas"]
        rows: list[tuple[str, str | None, dict[str, Any]]] = []
        try:
            for start in range(0, len(ids), _PAGE):
                got = self._live().get(ids=ids[start : start + _PAGE], include=include)
                docs = got.get("documents") or [None] * len(got["ids"])
                rows.extend(zip(got["ids"], docs, [dict(m or {}) for m in got["metadatas"]], strict=True))
        except IndexError_:
            raise
        except Exception as e:
            raise self._fail("reading shared records", e) from e
        return rows

    def find(self, documents: bool = False, **fields: str) -> list[tuple[str, str | None, dict[str, Any]]]:
        """Every record whose metadata holds these ``fields`` values (paged)."""
        include = ["metadatas", "documents"] if documents else ["metadatas"]
        where = _chroma_where(fields)
        rows: list[tuple[str, str | None, dict[str, Any]]] = []
        try:
            offset = 0
            while True:
                got = self._live().get(where=where, include=include, limit=_PAGE, offset=offset)
                docs = got.get("documents") or [None] * len(got["ids"])
                rows.extend(zip(got["ids"], docs, [dict(m or {}) for m in got["metadatas"]], strict=True))
                if len(got["ids"]) < _PAGE:
                    return rows
                offset += _PAGE
        except IndexError_:
            raise
        except Exception as e:
            raise self._fail("reading shared records", e) from e

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        try:
            for start in range(0, len(ids), _PAGE):
                self._live().delete(ids=ids[start : start + _PAGE])
        except IndexError_:
            raise
        except Exception as e:
            raise self._fail("deleting shared records", e) from e


def _chroma_where(fields: dict[str, Any]) -> dict[str, Any] | None:
    """The Chroma ``where`` clause matching every one of ``fields`` (None: every record)."""
    clauses = [{key: value} for key, value in fields.items()]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
