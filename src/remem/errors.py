"""The exceptions remem raises.

    RememError                  every error remem raises on purpose; has a `code`
     ├── InvalidInput           the caller sent something unusable (empty text, bad time, ...)
     │    └── InvalidCursor     a page cursor this list did not hand out (HTTP 400)
     ├── NotFound               an id that does not exist in this tenant
     ├── RefusedContent         content policy refused a write (e.g. a secret)
     ├── Unauthorized           no API key, or one that is unknown or revoked (HTTP 401)
     ├── Forbidden              the key does not allow this actor, namespace or operation (403)
     ├── ConflictError          a concurrent writer got there first
     │    └── EmbedderChanged   the store's vectors were made by another embedder
     ├── ConfigError            the configuration file is invalid (says the line and why)
     ├── RlsBypassed            a server refuses a role that row-level security does not bind
     ├── StoreError             the database could not do what was asked
     │    ├── StoreUnavailable  for a moment only (locked by another writer, connection lost): retry
     │    ├── SchemaTooNew      the database was written by a newer remem
     │    └── StoreCorrupt      the file is not a remem database, or is damaged
     ├── LLMError               a language model could not give a usable answer
     │    ├── LLMUnavailable    timeouts, 429s, 5xx, cut connections, after retries
     │    ├── LLMRefused        the endpoint refused the request (4xx: key, model, size)
     │    └── LLMBadOutput      the answer did not match the response schema, after retries
     └── EmbedderError          an embeddings server gave no usable vectors (writes go on
          │                     without them, recall is lexical only: `remem.embed.server`)
          ├── EmbedderUnavailable  timeouts, 429s, 5xx, cut connections, after retries
          ├── EmbedderRefused      the server refused the request (4xx: key, model, size)
          │    └── EmbedderInputRefused  the texts themselves (400, 413, 422: too long,
          │                     invalid); others may be embedded (`remem.memory.backfill`)
          └── EmbedderBadOutput    not the vectors asked for: count, dimension, NaN, size

Driver errors (sqlite3, psycopg, openai) are translated into these at the store
boundary (`remem.store.errors` holds the tables); every message says what was wrong
and what to do.
"""

from __future__ import annotations


class RememError(Exception):
    """Root of remem's errors; `code` is a stable machine-readable name."""

    code = "error"


class InvalidInput(RememError):
    code = "invalid_input"


class InvalidCursor(InvalidInput):
    code = "invalid_cursor"


class NotFound(RememError):
    code = "not_found"


class RefusedContent(RememError):
    code = "refused_content"


class Unauthorized(RememError):
    """No API key, or one that is unknown or revoked (HTTP 401)."""

    code = "unauthorized"


class Forbidden(RememError):
    """The key does not allow this actor, namespace or operation (HTTP 403)."""

    code = "forbidden"


class ConflictError(RememError):
    code = "conflict"


class EmbedderChanged(ConflictError):
    """The store's vectors were made by another embedder than the one in use (HTTP 409):
    searching with it would compare vectors that do not match, or find none of them."""

    code = "embedder_changed"


class StoreError(RememError):
    code = "store_error"


class StoreUnavailable(StoreError):
    """The database could not answer for a moment: it is locked by another writer, or the
    connection to it was lost. Nothing was written; the same call may succeed when retried."""

    code = "store_unavailable"


class SchemaTooNew(StoreError):
    code = "schema_too_new"


class StoreCorrupt(StoreError):
    code = "store_corrupt"


class ConfigError(RememError):
    code = "config_error"


class RlsBypassed(RememError):
    code = "rls_bypassed"


class LLMError(RememError):
    code = "llm_error"


class LLMUnavailable(LLMError):
    code = "llm_unavailable"


class LLMRefused(LLMError):
    code = "llm_refused"


class LLMBadOutput(LLMError):
    code = "llm_bad_output"


class EmbedderError(RememError):
    """An embeddings server gave no usable vectors; see `remem.embed.server`."""

    code = "embedder_error"


class EmbedderUnavailable(EmbedderError):
    code = "embedder_unavailable"


class EmbedderRefused(EmbedderError):
    code = "embedder_refused"


class EmbedderInputRefused(EmbedderRefused):
    """The server refused the texts sent (HTTP 400, 413 or 422), not the caller: another
    text may be embedded, and the server is not taken as down for it."""

    code = "embedder_input_refused"


class EmbedderBadOutput(EmbedderError):
    code = "embedder_bad_output"
