"""Dropping an FTS5 index's deleted terms from the file without leaking index levels.

FTS5 keeps a deleted row's terms in its index segments until they are merged.
'optimize' merges every segment into one; on the SQLite this runs on (3.40,
before the upstream fix of early 2023) it writes that segment one level below
the deepest level in use and never removes the emptied levels above it. New
rows land on level 0 in small segments that are not promoted next to the big
one, so every 'optimize' after a write adds a level. The structure record
refuses more than 2,000 levels: after about 2,000 erasures the table cannot
even be opened ("database disk image is malformed", SQLITE_CORRUPT_VTAB) while
`PRAGMA integrity_check` passes. One connection reaches it as surely as two;
several processes only erase faster.

So the index is merged with 'optimize' while it has at most `MAX_LEVELS`
levels, and rebuilt instead ('rebuild': every row re-indexed from the table's
own content, the structure written afresh with no levels) when it has more.
Either way no page keeps an erased term (the old pages are freed and, under
`secure_delete`, zeroed). 'optimize' of 10,000 records took 18 ms of CPU and
'rebuild' 112 ms, so a rebuild every `MAX_LEVELS` erasures adds about 4 ms to
each. The level count is the first varint after the 4-byte cookie of the
structure record (row 10 of the `_data` table, see fts5_index.c); one byte
holds any count below 128, and a larger or unreadable count rebuilds.
"""

from __future__ import annotations

import sqlite3

MAX_LEVELS = 32  # FTS5's own merges never go past 64 levels (FTS5_MAX_LEVEL)
STRUCTURE_ROWID = 10  # FTS5_STRUCTURE_ROWID: the index's structure record
_STRUCTURE = "SELECT block FROM {table}_data WHERE id = " + str(STRUCTURE_ROWID)
_COMMAND = "INSERT INTO {table} ({table}) VALUES ('{command}')"


def fts_levels(db: sqlite3.Connection, table: str) -> int:
    """The number of levels in `table`'s index structure; 128 stands for 128 or more
    (and for a record this code cannot read)."""
    row = db.execute(_STRUCTURE.format(table=table)).fetchone()
    block = bytes(row[0]) if row is not None and row[0] is not None else b""
    return block[4] if len(block) > 4 and block[4] < 0x80 else 128


def scrub_fts(db: sqlite3.Connection, table: str) -> str:
    """Merge away `table`'s deleted terms inside the caller's write transaction:
    'optimize', or 'rebuild' past `MAX_LEVELS` levels. Returns the command run."""
    command = "rebuild" if fts_levels(db, table) > MAX_LEVELS else "optimize"
    db.execute(_COMMAND.format(table=table, command=command))
    return command
