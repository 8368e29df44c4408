"""The document flows, one implementation for every surface (library, CLI, HTTP, MCP).

`add` parses, chunks, screens and stores a document version; `listing`, `get`
read under the principal's scope; `search` finds chunks (words and vectors,
fused by rank) inside the scopes the principal may read; `with_documents` adds
them to a recall's packet inside what is left of its token budget, after the
memories (memory keeps precedence: a document never displaces a record).
Removal is a deletion job like `forget` (`remem.lifecycle.erasure`).
"""

from __future__ import annotations

import itertools
import logging
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from remem.documents.scope import (
    DocScope,
    check_write,
    listable_keys,
    may_read,
    parse_scope,
    readable_keys,
)
from remem.embed.base import embed_or_none
from remem.errors import ConflictError, EmbedderError, InvalidInput, NotFound, RefusedContent
from remem.memory.deps import Deps
from remem.model import DocumentItem, Packet, Sensitivity
from remem.policy.dataclasses import refusal_reason, secret_kinds, shown
from remem.policy.scope import Principal, named, refuse_secret_in
from remem.policy.text import check_text
from remem.policy.untrusted import instruction_flags
from remem.recall.budget import ITEM_OVERHEAD_TOKENS, estimate_tokens, pack
from remem.recall.fusion import MIN_VECTOR_ONLY_COSINE
from remem.store.flows.documents import DocumentWrite, StoredChunk, StoredDocument
from remem.writes.checks import sensitivity as check_sensitivity

if TYPE_CHECKING:  # parsing and chunking load on ingest, not to recall
    from remem.documents.chunk import Piece
    from remem.recall.request import RecallAsk

MAX_TITLE_CHARS = 500
MAX_URI_CHARS = 2000
WRITE_ATTEMPTS = 3  # a version raced by another writer is diffed again, this many times
RRF_K = 60  # reciprocal-rank fusion's constant (as in the literature)
_ORDER = [s.value for s in Sensitivity]
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: not in a one-line name

log = logging.getLogger("remem")


@dataclass(frozen=True, slots=True)
class AddResult:
    """What adding a document did: `added`, `updated` (a new version) or `unchanged`."""

    status: str
    document: StoredDocument
    chunks: dict[str, int] = field(default_factory=dict)  # added, kept, removed

    def as_dict(self) -> dict[str, Any]:
        """The outcome as JSON."""
        return {"status": self.status, "chunks": self.chunks, "document": self.document.as_dict()}


def add(
    deps: Deps,
    who: Principal,
    *,
    data: bytes | str,
    name: str | None = None,
    title: str | None = None,
    source_uri: str | None = None,
    scope: str | DocScope = "tenant",
    format: str | None = None,
    sensitivity: str | Sensitivity = Sensitivity.NORMAL,
) -> AddResult:
    """Add one document, or a new version of the one its scope knows by the same source
    URI (else title): same content again changes nothing; changed content re-indexes
    only the chunks whose hash is new and keeps the previous version in its history.

    A chunk holding a secret refuses the whole document (`RefusedContent` naming the
    chunk's position); nothing is stored. Parsing is bounded (`bounds.Bounds`: the
    2,000,000 characters of `MAX_DOCUMENT_CHARS`, `[documents] max_pages` and
    `max_parse_seconds`); past a bound, InvalidInput says which.
    """
    where = scope if isinstance(scope, DocScope) else parse_scope(scope)
    check_write(who, where)
    if where.name:  # an actor or namespace name is stored with the document
        refuse_secret_in(f"document scope's {where.kind}", where.name)
    if not isinstance(data, str | bytes):
        raise InvalidInput(f"a document is text or bytes; got {type(data).__name__}")
    title = None if title is None else _string("title", title, MAX_TITLE_CHARS)
    source_uri = None if source_uri is None else _string("source_uri", source_uri, MAX_URI_CHARS)
    if name is not None and not isinstance(name, str):
        raise InvalidInput(f"a document's file name must be a string; got {type(name).__name__}")
    label = name or source_uri or title or ""
    from remem.documents.chunk import chunk, content_hash
    from remem.documents.parse import MAX_DOCUMENT_CHARS, Bounds, format_of, parse

    fmt = format_of(label, format)
    level = check_sensitivity(sensitivity) or Sensitivity.NORMAL
    conf = deps.config.documents
    parsed = parse(data, fmt, Bounds(MAX_DOCUMENT_CHARS, conf.max_pages, conf.max_parse_seconds))
    check_text("the document's text", parsed.text)  # no lone surrogate reaches a store
    if not parsed.text.strip():
        raise InvalidInput("the document holds no text")
    pieces = chunk(parsed)
    if not pieces:  # headings only: nothing a search could find (0 chunks were stored)
        raise InvalidInput("the document holds no text outside its headings; nothing was stored")
    cap = deps.config.documents.max_chunks
    if len(pieces) > cap:  # before anything is embedded or stored: refused whole
        raise InvalidInput(
            f"the document cuts into {len(pieces)} chunks; the limit is {cap} "
            "(`[documents] max_chunks` in the configuration): nothing was stored; split it "
            "into several documents, or raise the limit"
        )
    _screen(parsed.text, pieces)
    # a title made from a file name is screened as a given one is (an upload's name is
    # the client's text); one made from the first line is screened with its chunk
    doc_title = title or _string("title", _title_of(name, source_uri, pieces), MAX_TITLE_CHARS)
    # known by its URI, else its title; an upload named with its folders by that whole
    # path, so "finance/report.txt" and "hr/report.txt" (both titled report.txt) are two
    folders = _named_path(name) if title is None and source_uri is None else None
    source_key = source_uri or f"title:{folders or doc_title}"
    digest = content_hash(parsed.text)
    attempt = 1
    while True:
        try:
            return _store_version(deps, where, fmt, level, parsed.text, pieces, doc_title,
                                  source_uri, source_key, digest)  # fmt: skip
        except ConflictError:
            # another writer stored this document (or a version of it, or removed it)
            # between our read and our write: read again and diff against what it wrote
            if attempt >= WRITE_ATTEMPTS:
                raise
            attempt += 1


def _store_version(
    deps: Deps,
    where: DocScope,
    fmt: str,
    level: Sensitivity,
    text: str,
    pieces: Sequence[Piece],
    doc_title: str,
    source_uri: str | None,
    source_key: str,
    digest: str,
) -> AddResult:
    """Store `pieces` as the next version of the document `source_key` names (or as a
    new document); ConflictError when another writer changed it since it was read."""
    store = deps.store.documents
    stored = store.find(deps.tenant, where.key(), source_key)
    if stored is not None and stored.content_hash == digest:
        return AddResult("unchanged", stored, {"added": 0, "kept": stored.chunks, "removed": 0})
    now = deps.clock()
    doc_id = stored.id if stored is not None else deps.ids("doc")
    old = store.chunks(deps.tenant, doc_id) if stored is not None else []
    new, moved, dropped = _diff(doc_id, where.key(), pieces, old, deps)
    flags = tuple(dict.fromkeys(f for c in [*new, *moved] for f in c.flags))
    history = () if stored is None else (*stored.history, {
        "version": stored.version, "version_id": stored.version_id,
        "content_hash": stored.content_hash, "updated_at": stored.updated_at.isoformat(),
    })  # fmt: skip
    document = StoredDocument(
        id=doc_id,
        tenant=deps.tenant,
        scope_key=where.key(),
        source_key=source_key,
        title=doc_title,
        source_uri=source_uri,
        format=fmt,
        content_hash=digest,
        version=1 if stored is None else stored.version + 1,
        version_id=deps.ids("docv"),
        history=history,
        sensitivity=level.value,
        flags=flags,
        chars=len(text),
        created_at=stored.created_at if stored is not None else now,
        updated_at=now,
        chunks=len(pieces),
    )
    embedder = deps.embedder()
    vectors: tuple[Any, ...] = ()
    model = ""
    if embedder is not None and new:
        # None while the embedder cannot embed (`embed_or_none`): words find them meanwhile
        vectors = tuple(embed_or_none(embedder, [c.text for c in new]))
        model = embedder.name
    store.apply(DocumentWrite(document, tuple(new), vectors, model, tuple(moved),
                              tuple(dropped), replaces=stored is not None,
                              previous_version_id=None if stored is None else stored.version_id,
                              ))  # fmt: skip
    counts = {"added": len(new), "kept": len(moved), "removed": len(dropped)}
    return AddResult("added" if stored is None else "updated", document, counts)


def _string(what: str, value: object, limit: int) -> str:
    """`value` in NFC (the form the text is in, so one title is one document however
    it was typed), or InvalidInput / RefusedContent saying what is wrong (never what
    a secret was)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} must be a non-empty string")
    check_text(what, value)
    value = unicodedata.normalize("NFC", value)
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters; the limit is {limit}")
    control = _CONTROL.search(value)
    if control is not None:
        raise InvalidInput(
            f"{what} contains a control character (\\x{ord(control.group()):02x}) at position "
            f"{control.start()}; it must be one line of printable text (nothing was stored)"
        )
    kinds = secret_kinds(value)
    if kinds:
        raise RefusedContent(refusal_reason(kinds, what=f"the document's {what}"))
    return value


def where_of(position: dict[str, Any]) -> str:
    """A position as people read it: 'page 3', 'Install > Linux', or 'the top'."""
    if "page" in position:
        return f"page {position['page']}"
    headings = position.get("headings") or []
    return " > ".join(headings) if headings else "the top"


def _screen(text: str, pieces: Sequence[Piece]) -> None:
    """Refuse a document any chunk or heading of which holds a secret, naming where
    (never what). Headings are screened apart: they are stored in each chunk's position,
    not in its text, and a heading holding a secret is not named."""
    screened: set[tuple[str, ...]] = set()
    for p in pieces:
        span = f"characters {p.start}-{p.end}"
        headings = tuple(p.position.get("headings") or ())
        if headings not in screened:
            screened.add(headings)
            kinds = secret_kinds(list(headings))
            if kinds:
                what = f"a heading above the document's chunk {p.ordinal + 1} ({span})"
                raise RefusedContent(refusal_reason(kinds, what=what) + " (nothing was stored)")
        kinds = secret_kinds(p.text)
        if kinds:
            what = f"the document's chunk {p.ordinal + 1} ({where_of(p.position)}, {span})"
            raise RefusedContent(refusal_reason(kinds, what=what) + " (nothing was stored)")
    # a secret cut in two where a long run without spaces is cut into chunks is in
    # neither half: the text from one chunk's start to the next one's end holds it whole
    for a, b in itertools.pairwise(pieces):
        kinds = secret_kinds(text[a.start : b.end])
        if kinds:
            what = (
                f"the document's text across chunks {a.ordinal + 1} and {b.ordinal + 1} "
                f"(characters {a.start}-{b.end})"
            )
            raise RefusedContent(refusal_reason(kinds, what=what) + " (nothing was stored)")


def _named_path(name: str | None) -> str | None:
    """An upload's file name as sent, when it names folders ("finance/report.txt",
    "a\\b.txt" with the separators as "/"), screened as a title is; else None."""
    if not name:
        return None
    path = "/".join(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))
    return _string("file name", path, MAX_URI_CHARS) if "/" in path else None


def _title_of(name: str | None, source_uri: str | None, pieces: Sequence[Piece]) -> str:
    if name:
        title = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    elif source_uri:
        title = source_uri.rstrip("/").rsplit("/", 1)[-1] or source_uri
    else:
        title = pieces[0].text.strip().split("\n", 1)[0][:80] if pieces else ""
    title = _CONTROL.sub(" ", title).strip()[:MAX_TITLE_CHARS]
    return title or "untitled"


def _diff(
    doc_id: str, scope_key: str, pieces: Sequence[Piece], old: Sequence[StoredChunk], deps: Deps
) -> tuple[list[StoredChunk], list[StoredChunk], list[str]]:
    """New chunks, kept ones moved to their new place, and the ids of those gone."""
    by_hash: dict[str, list[StoredChunk]] = defaultdict(list)
    for c in old:
        by_hash[c.chunk_hash].append(c)
    new: list[StoredChunk] = []
    moved: list[StoredChunk] = []
    for p in pieces:
        if by_hash.get(p.chunk_hash):
            kept = by_hash[p.chunk_hash].pop(0)
            moved.append(replace(kept, ordinal=p.ordinal, position=p.position, start=p.start,
                                 end=p.end))  # fmt: skip
            continue
        new.append(StoredChunk(
            id=deps.ids("chk"), document_id=doc_id, scope_key=scope_key, ordinal=p.ordinal,
            position=p.position, start=p.start, end=p.end, text=p.text,
            chunk_hash=p.chunk_hash, flags=instruction_flags(p.text),
        ))  # fmt: skip
    dropped = [c.id for rest in by_hash.values() for c in rest]
    return new, moved, dropped


# -- reads -----------------------------------------------------------------------------


def listing(
    deps: Deps,
    who: Principal,
    scope: str | None = None,
    limit: int = 100,
    after: tuple[datetime, str] | None = None,
) -> list[StoredDocument]:
    """The documents `who` may read (of one scope, when given), newest change first, then
    by id; after the one at `after` (its updated_at and id), a keyset page."""
    if not isinstance(limit, int) or not 1 <= limit <= 10_000:
        raise InvalidInput(f"limit must be an integer from 1 to 10000; got {shown(limit)}")
    keys = listable_keys(who, None if scope is None else parse_scope(scope))
    if keys is None and who.actor is not None:
        keys = readable_keys(who, None)
    return deps.store.documents.listing(deps.tenant, keys, limit, after)


def get(deps: Deps, who: Principal, document_id: str) -> tuple[StoredDocument, list[StoredChunk]]:
    """One document `who` may read, with its chunks; NotFound otherwise (a document out
    of the key's scope is not revealed)."""
    if not isinstance(document_id, str) or not document_id:
        raise InvalidInput("document_id must be a non-empty string")
    doc = deps.store.documents.get(deps.tenant, document_id)
    if doc is None or not may_read(who, parse_scope(doc.scope_key)):
        raise NotFound(f"no document {named(document_id)} for this key")
    return doc, deps.store.documents.chunks(deps.tenant, document_id)


SEARCH_ATTEMPTS = 3  # a search whose hits vanished before they were read runs again


def search(
    deps: Deps,
    who: Principal,
    *,
    query: str,
    actor: str | None = None,
    k: int = 10,
    namespaces: Sequence[str] = (),
    max_sensitivity: str | Sensitivity | None = None,
) -> list[DocumentItem]:
    """The chunks best matching `query` among the documents `who` may read for `actor`
    (the tenant's, the actor's, the named namespaces'), best first."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be a non-empty string")
    if not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidInput(f"k must be an integer from 1 to 1000; got {shown(k)}")
    keys = readable_keys(who, actor, namespaces)
    index = deps.store.documents
    pool = max(3 * k, 30)
    embedder, _ = deps.searching()  # none while a reindex to its model is pending
    qvec = None
    if embedder is not None:
        try:
            qvec = embedder.embed([query])[0]
        except EmbedderError as exc:  # an embeddings server down: by words alone
            log.warning("document recall is lexical only: %s", exc)
    for attempt in range(1, SEARCH_ATTEMPTS + 1):
        lexical = [h.id for h in index.lexical(deps.tenant, keys, query, pool)]
        ranked = [lexical]
        if embedder is not None and qvec is not None:
            near = index.nearest(deps.tenant, keys, embedder.name, qvec, pool)
            # as for records: a chunk only the vectors found must be similar enough to count
            matched = set(lexical)
            ranked.append([cid for cid, cos in near
                           if cid in matched or cos >= MIN_VECTOR_ONLY_COSINE])  # fmt: skip
        scores = fuse_ranks(ranked)
        found = index.chunks_by_id(deps.tenant, list(scores))
        # a chunk found by the search and gone when read: its document was replaced or
        # removed in between, and its new version's chunks were not searched: again
        if len(found) == len(scores) or attempt == SEARCH_ATTEMPTS:
            break
    limit = check_sensitivity(max_sensitivity)
    top = _ORDER.index(limit.value) if limit is not None else len(_ORDER)
    items = [
        _item(c, d, scores[c.id])
        for c, d in found
        if _ORDER.index(d.sensitivity) <= top and d.scope_key in keys
    ]
    items.sort(key=lambda it: (-it.score, it.id))
    return items[:k]


def fuse_ranks(rankings: Sequence[Sequence[str]]) -> dict[str, float]:
    """Reciprocal-rank fusion of ranked id lists: each list's rank r adds 1 / (60 + r)."""
    scores: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            scores[cid] += 1.0 / (RRF_K + rank)
    return dict(scores)


def _item(c: StoredChunk, d: StoredDocument, score: float) -> DocumentItem:
    return DocumentItem(
        id=c.id,
        document_id=d.id,
        title=d.title,
        source_uri=d.source_uri,
        version=d.version,
        position=c.position,
        span=(c.start, c.end),
        text=c.text,
        score=score,
        tokens=estimate_tokens(c.text) + ITEM_OVERHEAD_TOKENS,
        flags=c.flags,
    )


def with_documents(
    deps: Deps,
    who: Principal,
    packet: Packet,
    *,
    actor: str | None,
    query: str,
    k: int,
    namespaces: Sequence[str] = (),
    max_sensitivity: str | Sensitivity | None = None,
) -> Packet:
    """`packet` with the best document chunks after its memories, inside what is left of
    its budget: memory keeps precedence, a chunk never displaces a record."""
    items = search(deps, who, query=query, actor=actor, k=k, namespaces=namespaces,
                   max_sensitivity=max_sensitivity)  # fmt: skip
    kept, dropped, used = pack([(it, it.tokens) for it in items], packet.budget - packet.tokens)
    notes = list(packet.notes)
    if dropped:
        notes.append(f"{len(dropped)} document chunk(s) left out: over the budget")
    return replace(packet, documents=tuple(kept), tokens=packet.tokens + used, notes=tuple(notes))


SOURCES = ("memory", "documents")


def recall_sources(
    deps: Deps, who: Principal, ask: RecallAsk, memory: Callable[[], Packet]
) -> Packet:
    """A recall over `ask.sources`: the memory packet (`memory()`, when memory is read)
    and then, when documents are read, their chunks in what is left of the budget, as
    `who` may read them. Default: memory only, the packet exactly as before."""
    read = check_sources(ask.sources)
    namespaces = check_namespaces(ask.document_namespaces)  # before anything is read
    budget = ask.budget
    if "memory" in read:
        packet = memory()
    else:
        if not isinstance(budget, int) or not 1 <= budget <= 1_000_000:
            raise InvalidInput(f"budget must be an integer from 1 to 1000000; got {shown(budget)}")
        packet = Packet((), (), 0, budget)
    if "documents" not in read:
        return packet
    return with_documents(deps, who, packet, actor=ask.actor, query=ask.query, k=ask.k,
                          namespaces=namespaces,
                          max_sensitivity=ask.max_sensitivity)  # fmt: skip


def check_namespaces(namespaces: object) -> tuple[str, ...]:
    """The document namespaces a recall also reads: a list of texts (each checked where it
    is read); InvalidInput for anything else, a plain text included (read one character
    at a time, it named namespaces nobody meant)."""
    if not isinstance(namespaces, list | tuple) or not all(isinstance(n, str) for n in namespaces):
        raise InvalidInput(
            f"document_namespaces must be a list of namespaces; got {shown(namespaces)}"
        )
    return tuple(namespaces)


def check_sources(sources: Sequence[str] | str | None) -> tuple[str, ...]:
    """The sources a recall reads ('memory', 'documents'; a comma-separated text too);
    default memory only. InvalidInput for an unknown one or none."""
    if sources is None:
        return ("memory",)
    if isinstance(sources, str):
        listed = [s.strip() for s in sources.split(",")]
    elif isinstance(sources, list | tuple):
        listed = list(sources)
    else:
        raise InvalidInput(
            f"sources must be a list of memory and/or documents; got {shown(sources)}"
        )
    for s in listed:
        if s not in SOURCES:
            raise InvalidInput(f"sources must be memory and/or documents; got {shown(s)}")
    if not listed:
        raise InvalidInput("sources must name memory, documents or both")
    return tuple(dict.fromkeys(listed))
