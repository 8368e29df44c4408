"""`Memory`'s document methods (a mixin): thin over `remem.documents.flows`.

The library and the CLI act as the operator (`remem.policy.scope.operator`), a
tenant-wide admin; the HTTP service and the MCP server call the same flows with
their key's principal.
"""

from __future__ import annotations

import os
from pathlib import Path

from remem.documents import flows
from remem.documents.flows import AddResult
from remem.errors import InvalidInput
from remem.files import read_bytes
from remem.memory.deps import Deps
from remem.model import DocumentItem, Sensitivity
from remem.policy.scope import operator
from remem.store.flows.documents import StoredChunk, StoredDocument
from remem.store.roles import ForgetReport

# a document file is read up to this many bytes, and refused beyond (its text is then
# bounded by `flows.MAX_DOCUMENT_CHARS`): room for a PDF with pictures, not /dev/zero
MAX_DOCUMENT_FILE_BYTES = 32 * 1024 * 1024


class DocumentMethods:
    """Documents beside memory: added, listed, read, searched and removed."""

    deps: Deps
    tenant: str

    def add_document(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        text: str | bytes | None = None,
        title: str | None = None,
        source_uri: str | None = None,
        scope: str = "tenant",
        format: str | None = None,
        sensitivity: str | Sensitivity = Sensitivity.NORMAL,
    ) -> AddResult:
        """Add a document from a file (`path`) or from `text` (str, or bytes of a file).

        `scope` is its access domain: "tenant" (the whole tenant), "actor:NAME" (one
        actor's private document) or "namespace:NAME" (e.g. a team's). `format` is
        text, markdown, html or pdf (default: by the file's suffix, else text). A
        scope knows a document by its `source_uri` (a file's defaults to its
        `file://` URI), else its title: adding it again with the same content is a
        no-op; with changed content it becomes a new version that re-indexes only
        the changed chunks and keeps the previous version's id in its history.
        A file over `MAX_DOCUMENT_FILE_BYTES` (32 MiB) is refused, having read no more.
        """
        if (path is None) == (text is None):
            raise InvalidInput("add_document needs exactly one of path or text")
        name: str | None = None
        if path is not None:
            file = Path(path)
            data: str | bytes = read_bytes(
                file, MAX_DOCUMENT_FILE_BYTES, "a document file",
                "split it into smaller documents, or add its text with `text=`",
            )  # fmt: skip
            name = file.name
            source_uri = source_uri or file.resolve().as_uri()
        else:
            assert text is not None
            data = text
        return flows.add(
            self.deps, operator(self.tenant), data=data, name=name, title=title,
            source_uri=source_uri, scope=scope, format=format, sensitivity=sensitivity,
        )  # fmt: skip

    def list_documents(self, *, scope: str | None = None, limit: int = 100) -> list[StoredDocument]:
        """The tenant's documents (of one scope, when given), most recently changed first."""
        return flows.listing(self.deps, operator(self.tenant), scope, limit)

    def get_document(self, document_id: str) -> tuple[StoredDocument, list[StoredChunk]]:
        """One document and its chunks (position, span, text); NotFound when there is none."""
        return flows.get(self.deps, operator(self.tenant), document_id)

    def search_documents(
        self, *, query: str, actor: str | None = None, k: int = 10,
        namespaces: tuple[str, ...] = (),
    ) -> list[DocumentItem]:  # fmt: skip
        """The chunks best matching `query` in the tenant's documents, `actor`'s own (when
        given) and those of the named `namespaces`, best first, each citing its document."""
        return flows.search(self.deps, operator(self.tenant), query=query, actor=actor, k=k,
                            namespaces=namespaces)  # fmt: skip

    def remove_document(self, document_id: str, *, vacuum: bool = False) -> ForgetReport:
        """Remove a document from every index, leave a tombstone, and verify by reading
        (a deletion job, as `forget` is)."""
        from remem.lifecycle import erasure  # not at import time: a recall never needs it

        return erasure.forget_document(self.deps, document_id, vacuum)
