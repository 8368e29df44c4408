"""Cursor pages over the service's lists (memories, documents, deletions, jobs, keys).

    items, next_cursor = page(lambda n: mem.records(actor=a, limit=n), lambda r: r.id,
                              limit, cursor)

The lists are read newest first, `n` rows at a time, from the start. A cursor holds the
id of the last item handed out and how far into the list it was: the next page starts
after that id wherever it now is (new items arrived at the front shift it back, and
the page still starts right after it), or at the same offset when it is gone. So a
page never repeats an item because another arrived; an item removed meanwhile may
shift one across a page boundary. A list is paged through its first `MAX_WINDOW`
items; past them `next_cursor` is None and the answer says to narrow the list
(a filter) instead. Events have their own keyset cursor (`routes.events`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from typing import Annotated, TypeVar

from fastapi import Query

from remem.errors import InvalidInput

T = TypeVar("T")

MAX_WINDOW = 10_000  # the items a list is paged through
SLACK = 100  # items that may arrive at the front between two pages and still be followed
_CURSOR = re.compile(r"p:([0-9]{1,9})\|(.{1,400})", re.DOTALL)
Cursor = Annotated[
    str | None, Query(max_length=600, description="the next_cursor of the page before")
]
BAD_CURSOR = "cursor is not one this service handed out; omit it to start over"


def page(
    fetch: Callable[[int], Sequence[T]],
    ident: Callable[[T], str],
    limit: int,
    cursor: str | None,
) -> tuple[list[T], str | None]:
    """One page of `limit` items after `cursor` (None: the first), and the next cursor
    (None: the list ends here, or at `MAX_WINDOW`). `fetch(n)` reads the list's first `n`."""
    offset, last = _read(cursor)
    if offset >= MAX_WINDOW:
        return [], None
    window = min(offset + limit + 1 + (SLACK if last is not None else 0), MAX_WINDOW)
    rows = list(fetch(window))
    start = offset
    if last is not None:
        ids = [ident(r) for r in rows]
        start = ids.index(last) + 1 if last in ids else offset
    items = rows[start : start + limit]
    more = len(rows) > start + limit and start + limit < MAX_WINDOW
    if not items or not more:
        return items, None
    return items, _write(start + len(items), ident(items[-1]))


def _write(offset: int, last: str) -> str:
    text = f"p:{offset}|{last}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _read(cursor: str | None) -> tuple[int, str | None]:
    """The offset and last id a cursor of `_write` holds (0, None: the first page);
    anything else is InvalidInput, never echoed."""
    if cursor is None:
        return 0, None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if (m := _CURSOR.fullmatch(text)) is not None:
            return int(m[1]), m[2]
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidInput(BAD_CURSOR)
