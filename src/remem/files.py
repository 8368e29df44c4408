"""Reading a file (or standard input) the caller names, within a bound.

Every file or stream remem reads on a caller's behalf (a document to add, an import,
a checkpoint's state, a configuration or a prompt file, an evaluation set) goes
through `read_bytes` or `read_text`: at most `limit + 1` bytes are read, so
`/dev/zero`, a pipe that never ends or a 1 GB file costs that much and no more, and
is refused with `InvalidInput` naming the limit and what to do instead. The limits
are those of what the file feeds; each caller states its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from remem.errors import InvalidInput

STDIN = "-"  # the name that reads standard input where a command allows it
_BLOCK = 1024 * 1024


def read_bytes(path: str | os.PathLike[str], limit: int, what: str, advice: str) -> bytes:
    """The bytes of `path` (`-`: standard input), at most `limit` of them; InvalidInput
    when it holds more ("... is over `limit` bytes, the limit for `what`; `advice`") or
    cannot be read."""
    name = os.fspath(path)
    try:
        if name == STDIN:
            data = _read(sys.stdin.buffer.read, limit)
        else:
            with Path(name).open("rb") as f:
                data = _read(f.read, limit)
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {name}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {name}: {exc.strerror or exc}") from None
    if data is None:
        shown = "standard input" if name == STDIN else name
        raise InvalidInput(f"{shown} is over {limit} bytes, the limit for {what}; {advice}")
    return data


def read_text(path: str | os.PathLike[str], limit: int, what: str, advice: str) -> str:
    """`read_bytes` as UTF-8 text; InvalidInput when it is not UTF-8."""
    data = read_bytes(path, limit, what, advice)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{os.fspath(path)} is not UTF-8 text") from None


def _read(read: Callable[[int], bytes], limit: int) -> bytes | None:
    """Up to `limit` bytes from `read` (a file's `read`), None once there are more."""
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        block = read(min(_BLOCK, limit + 1 - size))
        if not block:
            return b"".join(parts)
        parts.append(block)
        size += len(block)
    return None
