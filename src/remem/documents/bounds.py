"""What parsing one document may take (`remem.documents.parse`, `remem.documents.pdf`).

`Bounds` holds the limits; a `Deadline` is one parse's CPU time, checked by the
parsers as they go; `check_length` is the characters' limit. Past any, the error is
`InvalidInput` naming the bound and what to do, and nothing is stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from remem.config.sections import Documents
from remem.errors import InvalidInput

MAX_DOCUMENT_CHARS = 2_000_000  # of normalised text
CHECK_LINES = 1024  # Markdown lines or HTML tags between two looks at the clock
_DEFAULTS = Documents()


@dataclass(frozen=True, slots=True)
class Bounds:
    """What parsing one document may take: `max_chars` characters of normalised text,
    `max_pages` pages (a PDF) and `max_seconds` of the parsing thread's CPU time
    (defaults: 2,000,000; `[documents] max_pages`, `max_parse_seconds`)."""

    max_chars: int = MAX_DOCUMENT_CHARS
    max_pages: int = _DEFAULTS.max_pages
    max_seconds: float = _DEFAULTS.max_parse_seconds

    def clock(self) -> Deadline:
        """The deadline of a parse starting now."""
        return Deadline(self.max_seconds)


class Deadline:
    """The CPU time a parse has left: `check` raises InvalidInput once it is spent.
    CPU time of this thread, so a busy machine slows a parse without refusing it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.thread_time()

    def spent(self) -> bool:
        """Whether the parse has run out of time."""
        return time.thread_time() - self.start > self.seconds

    def over(self, where: str = "") -> InvalidInput:
        """The error of a parse out of time; `where` says how far it got."""
        return InvalidInput(
            f"the document took more than {self.seconds:g} s of CPU to read"
            f"{f' ({where})' if where else ''}; nothing was stored: split it into smaller "
            "documents or add its text instead, or raise `[documents] max_parse_seconds`"
        )

    def check(self, where: str = "") -> None:
        """InvalidInput (`over`) once the time is spent."""
        if self.spent():
            raise self.over(where)


def check_length(chars: int, limit: int, where: str = "") -> None:
    """InvalidInput when a document's text of `chars` characters is over `limit`."""
    if chars > limit:
        said = f"{chars} characters of text" if not where else f"over {limit} characters of text"
        raise InvalidInput(
            f"the document is {said}{f' {where}' if where else ''}; the limit is {limit}: "
            "nothing was stored; split it into several documents"
        )
