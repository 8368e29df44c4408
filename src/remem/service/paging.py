"""Keyset cursors over the service's lists (memories, documents, deletions, jobs, keys,
procedures).

Each list is read in one fixed order whose key is unique (`(valid_from, id)` newest
first for records, the job's or deletion's number newest first, ...), and a page is
read by the store's query *after* the key of the last item handed out:

    after = paging.read("memories", query, cursor, (TIME, TEXT))   # None: the first page
    rows = <the store's query, after `after`, limit + 1 rows>
    items, next_cursor = paging.page(rows, limit, lambda r: (r.valid_from, r.id), "memories", query)

So an item stored while a client pages (it sorts before the cursor, newest first)
shifts nothing: every item that was there when paging began is handed out exactly
once, however many arrive, and no list is read past its page. An item changed so that
it moves (a document updated) may be met again or not at all, as in any keyset.

A cursor is the list's name, a digest of the query it continues (the key's tenant and
actor and the list's filters) and the key, base64url-encoded JSON; it carries no
content. One that is not such a cursor, or belongs to another list or another query
(another tenant's, actor's or filter's), is `InvalidCursor` (HTTP 400), never echoed:
a cursor can only ever position the caller's own list, which the store reads within
the key's scope whatever the cursor says.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import Query

from remem.errors import InvalidCursor, InvalidInput
from remem.timeutil import parse_time

T = TypeVar("T")
Key = tuple[Any, ...]

TIME, TEXT, NUMBER = "time", "text", "number"  # the parts a key is made of
MAX_CURSOR = 600  # characters
_MAX_NUMBER = 2**63 - 1
Cursor = Annotated[
    str | None,
    Query(max_length=MAX_CURSOR, description="the next_cursor of the page before"),
]
BAD_CURSOR = "cursor is not one this list handed out; omit it to start from the first page"
OTHER_QUERY = (
    "cursor belongs to another list or query (another key, actor or filter); omit it to "
    "start from the first page of this one"
)


def page(
    rows: Sequence[T],
    limit: int,
    key: Callable[[T], Key],
    name: str,
    query: Sequence[object],
) -> tuple[list[T], str | None]:
    """The first `limit` of `rows` (read `limit + 1` after the cursor) and the cursor of
    the next page (None: the list ends here)."""
    items = list(rows[:limit])
    if len(rows) <= limit or not items:
        return items, None
    return items, write(name, query, key(items[-1]))


def after(rows: Sequence[T], cursor_key: Key | None, key: Callable[[T], Key]) -> list[T]:
    """The rows of a list already in memory, sorted by `key` newest first, that come after
    `cursor_key` (all: None): the keyset over a list a store reads whole (procedures,
    records as of a time)."""
    ordered = sorted(rows, key=key, reverse=True)
    if cursor_key is None:
        return ordered
    return [r for r in ordered if key(r) < cursor_key]


def write(name: str, query: Sequence[object], key: Key) -> str:
    """A cursor for the page after `key` of list `name` under `query`."""
    parts = [p.isoformat() if isinstance(p, datetime) else p for p in key]
    text = json.dumps([name, _digest(name, query), *parts], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def read(
    name: str, query: Sequence[object], cursor: str | None, shape: Sequence[str]
) -> Key | None:
    """The key a cursor of `write` holds for list `name` under `query` (None: no cursor),
    its parts of the kinds `shape` names (TIME, TEXT, NUMBER); InvalidCursor otherwise."""
    if cursor is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        found = json.loads(raw.decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidCursor(BAD_CURSOR) from None
    if not isinstance(found, list) or len(found) != 2 + len(shape) or found[0] != name:
        raise InvalidCursor(BAD_CURSOR if not isinstance(found, list) else OTHER_QUERY)
    if found[1] != _digest(name, query):
        raise InvalidCursor(OTHER_QUERY)
    return tuple(_part(kind, value) for kind, value in zip(shape, found[2:], strict=True))


def _part(kind: str, value: object) -> Any:
    if kind == NUMBER and type(value) is int and 0 <= value <= _MAX_NUMBER:
        return value
    if kind == TEXT and isinstance(value, str) and 0 < len(value) <= 400:
        return value
    if kind == TIME and isinstance(value, str) and len(value) <= 64:
        try:
            return parse_time(value, "cursor")
        except InvalidInput:  # not a time this service wrote
            pass
    raise InvalidCursor(BAD_CURSOR)


def _digest(name: str, query: Sequence[object]) -> str:
    """A short digest of the query a cursor continues (not a secret: a check)."""
    text = json.dumps([name, *query], default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
