"""The `Client`'s document methods (a mixin): `Memory`'s, over `/v1/documents`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from remem.errors import InvalidInput
from remem.model import DocumentItem
from remem.service.client.pages import collect
from remem.store.roles import ForgetReport


class DocumentClient:
    """Documents through the HTTP service, under the key's scope."""

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        raise NotImplementedError

    def add_document(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        text: str | None = None,
        title: str | None = None,
        source_uri: str | None = None,
        scope: str = "tenant",
        format: str | None = None,
        sensitivity: str = "normal",
    ) -> dict[str, Any]:
        """Add a document from a file (a multipart upload) or from `text`; the answer's
        `status` is added, updated (a new version) or unchanged (`Memory.add_document`)."""
        if (path is None) == (text is None):
            raise InvalidInput("add_document needs exactly one of path or text")
        fields = {"title": title, "source_uri": source_uri, "scope": scope, "format": format,
                  "sensitivity": sensitivity}  # fmt: skip
        given = {k: v for k, v in fields.items() if v is not None}
        if text is not None:
            out: dict[str, Any] = self._call("POST", "/v1/documents", json={"text": text, **given})
            return out
        assert path is not None
        file = Path(path)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {os.fspath(file)!r}: {exc.strerror}") from None
        got: dict[str, Any] = self._call("POST", "/v1/documents", files={"file": (file.name, data)},
                                         data=given)  # fmt: skip
        return got

    def list_documents(self, *, scope: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """The documents the key may read (of one scope, when given)."""
        params: dict[str, Any] = {"scope": scope} if scope else {}
        return collect(self._call, "/v1/documents", "documents", params, limit=limit)

    def get_document(self, document_id: str) -> dict[str, Any]:
        """One document with its chunks: `{"document", "chunks"}`."""
        out: dict[str, Any] = self._call("GET", f"/v1/documents/{quote(document_id, safe='')}")
        return out

    def search_documents(
        self, *, query: str, actor: str | None = None, k: int = 10,
        namespaces: tuple[str, ...] = (),
    ) -> list[DocumentItem]:  # fmt: skip
        """The chunks best matching `query` among the documents the key may read."""
        body = {"query": query, "top_k": k, "namespaces": list(namespaces)}
        if actor is not None:
            body["actor_id"] = actor
        found = self._call("POST", "/v1/documents/search", json=body)["documents"]
        return [document_item(d) for d in found]

    def remove_document(self, document_id: str) -> ForgetReport:
        """Remove a document from every index and verify it (`Memory.remove_document`)."""
        out = self._call("DELETE", f"/v1/documents/{quote(document_id, safe='')}")
        return forget_report(out)


def forget_report(d: dict[str, Any]) -> ForgetReport:
    """A verified erasure's report from its JSON (a document's, or `Client.forget`'s)."""
    return ForgetReport(deleted=d["deleted"], verified=d["verified"], remaining=d["remaining"],
                        job_id=d["job_id"], attempts=d["attempts"])  # fmt: skip


def document_item(d: dict[str, Any]) -> DocumentItem:
    """A packet's document chunk from its JSON."""
    return DocumentItem(
        id=d["id"],
        document_id=d["document_id"],
        title=d["title"],
        source_uri=d["source_uri"],
        version=int(d["version"]),
        position=dict(d["position"]),
        span=(int(d["span"][0]), int(d["span"][1])),
        text=d["text"],
        score=float(d["score"]),
        tokens=int(d["tokens"]),
        flags=tuple(d["flags"]),
    )
