"""Chunks cut along a document's structure: pure functions of a `Parsed` document.

Paragraphs under the same position (heading path or page) are joined into one
chunk while it stays within `MAX_CHUNK_CHARS`; a longer paragraph is cut at a
sentence end, else at a space. A chunk never spans two positions, and its
`text` is exactly `parsed.text[start:end]`. Its hash (of its position and its
text) is what a changed document is compared by: a chunk whose hash is stored
already is kept as it is (not embedded or indexed again).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from remem.documents.parse import Parsed, Section

MAX_CHUNK_CHARS = 1200
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?\s")


@dataclass(frozen=True, slots=True)
class Piece:
    """One chunk of a document before it is stored: its span, position, text and hash."""

    ordinal: int
    start: int
    end: int
    position: dict[str, Any]
    text: str
    chunk_hash: str


def content_hash(text: str) -> str:
    """The hash a document's normalised text is known by (same text: same document)."""
    return hashlib.sha256(text.encode()).hexdigest()


def chunk(parsed: Parsed, max_chars: int = MAX_CHUNK_CHARS) -> list[Piece]:
    """The chunks of `parsed`, in document order."""
    spans: list[Section] = []
    for s in parsed.sections:
        spans += _cut(parsed.text, s, max_chars)
    groups: list[list[Section]] = []
    for s in spans:
        last = groups[-1] if groups else None
        if (
            last is not None
            and last[-1].position() == s.position()
            and s.end - last[0].start <= max_chars
        ):
            last.append(s)
        else:
            groups.append([s])
    pieces: list[Piece] = []
    for i, group in enumerate(groups):
        start, end = group[0].start, group[-1].end
        position = group[0].position()
        text = parsed.text[start:end]
        digest = hashlib.sha256(
            (json.dumps(position, sort_keys=True) + "\x00" + text).encode()
        ).hexdigest()
        pieces.append(Piece(i, start, end, position, text, digest))
    return pieces


def _cut(text: str, s: Section, max_chars: int) -> list[Section]:
    """`s` as is, or cut into parts of at most `max_chars` at sentence ends or spaces."""
    out: list[Section] = []
    start = s.start
    while s.end - start > max_chars:
        window = text[start : start + max_chars]
        ends = [m.end() for m in _SENTENCE_END.finditer(window)]
        cut = ends[-1] if ends and ends[-1] > max_chars // 3 else window.rfind(" ") + 1
        if cut <= 0:
            cut = max_chars
        stop = start + cut
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        out.append(Section(start, stop, s.headings, s.page))
        start += cut
        while start < s.end and text[start].isspace():
            start += 1
    if s.end > start:
        out.append(Section(start, s.end, s.headings, s.page))
    return out
