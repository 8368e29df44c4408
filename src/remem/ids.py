"""Id sources: time-ordered, random-suffixed ids such as `rec_01JH...`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

IdSource = Callable[[str], str]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32


def new_id(prefix: str) -> str:
    """A new id: prefix, 48 bits of milliseconds and 80 random bits (a ULID)."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


def counter_ids() -> IdSource:
    """A deterministic id source for tests: rec_000001, rec_000002, ..."""
    counts: dict[str, int] = {}

    def make(prefix: str) -> str:
        counts[prefix] = counts.get(prefix, 0) + 1
        return f"{prefix}_{counts[prefix]:06d}"

    return make
