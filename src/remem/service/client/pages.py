"""Reading a cursor-paged list of the service to its end, or to a number of items.

Every list route answers `{KEY: [...], "next_cursor": ...}` and takes `limit` (a page)
and `cursor` (the `next_cursor` of the page before); `collect` follows the cursors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PAGE = 1000  # the service's largest page


def collect(
    call: Callable[..., Any],
    path: str,
    key: str,
    params: Mapping[str, Any],
    *,
    limit: int | None = None,
    cursor: str | None = None,
) -> list[Any]:
    """The items under `key` of `GET path?params`, page after page from `cursor` (None:
    the first), until the list ends or `limit` items (None: no limit) are read."""
    found: list[Any] = []
    while limit is None or len(found) < limit:
        size = PAGE if limit is None else min(PAGE, limit - len(found))
        query = {**params, "limit": size} | ({} if cursor is None else {"cursor": cursor})
        page = call("GET", path, params=query)
        found.extend(page[key])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    return found
