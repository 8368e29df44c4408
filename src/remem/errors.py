"""The exceptions remem raises.

    RememError                  every error remem raises on purpose; has a `code`
     ├── InvalidInput           the caller sent something unusable (empty text, bad time, ...)
     ├── NotFound               an id that does not exist in this tenant
     ├── RefusedContent         content policy refused a write (e.g. a secret)
     ├── ConflictError          a concurrent writer got there first
     └── StoreError             the database could not do what was asked
          ├── SchemaTooNew      the database was written by a newer remem
          └── StoreCorrupt      the file is not a remem database, or is damaged

Driver errors (sqlite3, psycopg) are translated into these at the store
boundary; every message says what was wrong and what to do.
"""

from __future__ import annotations


class RememError(Exception):
    """Root of remem's errors; `code` is a stable machine-readable name."""

    code = "error"


class InvalidInput(RememError):
    code = "invalid_input"


class NotFound(RememError):
    code = "not_found"


class RefusedContent(RememError):
    code = "refused_content"


class ConflictError(RememError):
    code = "conflict"


class StoreError(RememError):
    code = "store_error"


class SchemaTooNew(StoreError):
    code = "schema_too_new"


class StoreCorrupt(StoreError):
    code = "store_corrupt"
