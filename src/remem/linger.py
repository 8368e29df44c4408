"""How long what another process erased may stay in this process's caches.

An erasure empties the caches of the process that runs it at once
(`remem.lifecycle.erasure.drop_erased`). Other processes on the same database (the
workers of `remem serve --workers N`, a CLI beside a service) learn of it from the
database: caches kept beside a scope's version drop that scope's entries when a read
shows the version moved on (every erasure moves it), SQLite's decoded records are
dropped when the file changed. What no read tells them of (texts kept by their words,
an actor erased whose scope is never read again) is dropped by a `Sweep`: every
`LINGER_SECONDS` the cache is emptied, or its entries past their time, at its first
use after that. A process that stops using a cache keeps what it holds until its
next use; none of it is ever served after the erasure (each cache checks the scope's
version, or holds texts a search must first find).

Values level: imports nothing of remem.
"""

from __future__ import annotations

import time

LINGER_SECONDS = 60.0
"""At most this long (then until the cache's next use) another process's erasure stays
in a cache of this process that no read tells of it. Emptying a cache once a minute
costs what it saves in one use: at 100,000 records, decoding one recall's records again
(2-3 ms), stemming its candidates (0.5 ms), embedding a repeated query (10 ms)."""


def _clock() -> float:
    return time.monotonic()


class Sweep:
    """A time that comes round every `seconds` (`LINGER_SECONDS`): `due()` is True at
    the first call after it, then not until it comes round again. One clock read per
    call; two threads may both see it due (each then empties the cache: harmless)."""

    __slots__ = ("_next", "seconds")

    def __init__(self, seconds: float = LINGER_SECONDS) -> None:
        self.seconds = seconds
        self._next = _clock() + seconds

    def due(self) -> bool:
        """Whether the time came round since the last call that said so."""
        now = _clock()
        if now < self._next:
            return False
        self._next = now + self.seconds
        return True
