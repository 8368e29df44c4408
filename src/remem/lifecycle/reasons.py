"""An erasure's reason must not carry what it erases (issue 39).

A deletion job keeps its reason or ticket reference, and the receipt and audit
trail built from it outlive the erasure: an operator who typed an erased word
there ("forget that she sees Dr. Weber") would keep the very thing erased. So
before anything is erased, `refuse_erased_words` reads the text of what will be
erased (a record: its text, field, value and metadata, its history's texts and reasons,
its source events; an actor: every event, record, document (title, source, chunks)
and checkpoint of the actor, a page at a time; the strings of JSON values, not their
keys) and refuses, with InvalidInput, a reason that repeats any of its content words.

A content word is a word of `WORD` (letters and digits), case-folded, at least
`MIN_CHARS` long, that is neither a function word (`STOPWORDS`) nor one of
`PROCEDURAL`, the words that describe a request rather than a person ("user asked
to erase", "GDPR request"). Numbers count: a ticket "DSR-4821" is refused when
4821 is the PIN being erased. The error names how many words and where they sit
in the reason, never the words: an error may be logged.

The reason is free text, not a category and a ticket id, so every surface and
client keeps its contract; a ticket id of a safe charset could still carry an
erased word, so it would need this check all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from remem.errors import InvalidInput
from remem.memory.deps import Deps
from remem.model import Record
from remem.store.roles import Scope
from remem.store.text import STOPWORDS, WORD
from remem.thread.api import checkpoint_scan, has_thread_state

MIN_CHARS = 3  # shorter words ("dr", "43") say too little to refuse a reason for
PAGE = 200  # events, records or checkpoints read at once when an actor's text is checked
PAGE_BYTES = 1024 * 1024
PROCEDURAL = frozenset(
    """ask asked asking request requested requests requester ticket tickets case
    erase erased erasure erasing forget forgotten forgetting delete deleted deletion remove
    removed removal user users customer customers subject subjects data personal person
    gdpr ccpa dsr dsar article art right rights law legal privacy policy compliance retention
    per via support operator admin complaint correction wrong incorrect outdated duplicate
    test testing account memory memories record records event events all everything
    """.split()
)


def content_words(text: str) -> list[str]:
    """The reason's content words, in order (with repeats), case-folded."""
    return [
        w
        for w in (m.casefold() for m in WORD.findall(text))
        if len(w) >= MIN_CHARS and w not in STOPWORDS and w not in PROCEDURAL
    ]


def repeated(reason: str, texts: Iterable[str]) -> list[int]:
    """The 1-based positions, among the reason's words, of those some text holds
    (stops reading `texts` once every content word was found)."""
    said = [m.casefold() for m in WORD.findall(reason)]
    wanted = set(content_words(reason))
    found: set[str] = set()
    for text in texts:
        if not wanted - found:
            break
        found |= wanted & {m.casefold() for m in WORD.findall(text)}
    return [i for i, w in enumerate(said, 1) if w in found]


def refuse_erased_words(
    deps: Deps, reason: str | None, *, record: Record | None = None, actor: str | None = None
) -> None:
    """InvalidInput, before anything is erased, when `reason` repeats a content word of
    `record` (its versions' text and its source events) or of everything of `actor`."""
    if not reason or not content_words(reason):
        return
    texts = _record_texts(deps, record) if record is not None else _actor_texts(deps, actor or "")
    at = repeated(reason, texts)
    if at:
        where = ", ".join(str(i) for i in at)
        raise InvalidInput(
            f"the reason repeats {len(at)} word(s) of what is being erased (word {where} of "
            "the reason); the receipt and the audit log keep the reason after the erasure, "
            "so give a ticket reference or say what was asked without quoting the memory, "
            "e.g. 'DSR-1042: user asked to be forgotten'. Nothing was erased"
        )


def _strings(value: Any) -> Iterator[str]:
    """The strings and numbers held in a JSON value (metadata, a checkpoint's state),
    not the keys of its objects (field names, not what was said)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _one_record(r: Record) -> Iterator[str]:
    yield r.text
    yield r.field or ""  # a family key names its member: "allergy:cashew"
    if isinstance(r.value, str):
        yield r.value
    yield from _strings(r.metadata)


def _record_texts(deps: Deps, record: Record) -> Iterator[str]:
    yield from _one_record(record)
    for h in deps.store.records.history(deps.tenant, record.id):
        yield h.text or ""
        yield h.reason or ""  # a reviewer's reason may quote the record; it is erased too
    for e in deps.store.events.get_events(deps.tenant, list(record.source.event_ids)):
        yield e.text
        yield from _strings(e.metadata)


def _actor_texts(deps: Deps, actor: str) -> Iterator[str]:
    store, tenant = deps.store, deps.tenant
    after = None
    while True:
        page, after = store.events.events_page(
            tenant, actor, None, after, PAGE, max_bytes=PAGE_BYTES
        )
        for e in page:
            yield e.text
            yield from _strings(e.metadata)
        if after is None:
            break
    last = None
    while True:
        records = store.records.records_page(Scope(tenant, actor), None, last, PAGE)
        for r in records:
            yield from _one_record(r)
        if len(records) < PAGE:
            break
        last = (records[-1].valid_from, records[-1].id)
    index = store.documents
    for doc_id in index.scope_documents(tenant, f"actor:{actor}"):
        doc = index.get(tenant, doc_id)
        if doc is not None:
            yield doc.title or ""
            yield doc.source_uri or ""  # a file's name, erased with the document
            yield from (c.text for c in index.chunks(tenant, doc_id))
    yield from _checkpoint_texts(deps, actor)


def _checkpoint_texts(deps: Deps, actor: str) -> Iterator[str]:
    """The actor's checkpoints' states, `PAGE` at a time by workflow name."""
    if not has_thread_state(deps):
        return
    before = None
    while True:
        found = checkpoint_scan(deps, actor=actor, before=before, limit=PAGE)
        for cp in found:
            yield from _strings(cp.state.as_dict())
        if len(found) < PAGE:
            break
        before = found[-1].workflow
