"""Values of the PostgreSQL store that are its own: vectors, times, jsonb.

`remem.store.postgres.store` runs the queries; this module only converts what is
PostgreSQL's own: vectors to pgvector's binary form and from its text form,
times in UTC and in the fixed ISO form, jsonb values. Rows become events,
records and history entries, and values the named parameters of the INSERT
statements, once for both backends (`remem.store.rows`, `remem.store.flows.records`).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import DictRow

from remem.timeutil import to_db

ALL_TENANTS = None  # `_tx(ALL_TENANTS)`: a transaction that spans tenants by design


def value(rows: Sequence[DictRow]) -> Any:
    """The single value of a one-row, one-column result."""
    return next(iter(rows[0].values()))


class VectorDumper(Dumper):
    """numpy vectors sent in pgvector's binary form: the dimension, a zero, then the
    values as big-endian float4 (about 1 µs a vector, where text takes hundreds).
    Registered on each pooled connection with the database's oid of `vector`."""

    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        v = np.asarray(obj, dtype=">f4")
        return struct.pack(">HH", v.shape[0], 0) + v.tobytes()


def vector_dumper(oid: int) -> type[VectorDumper]:
    """`VectorDumper` for a database whose `vector` type has this oid."""
    return type("VectorDumper", (VectorDumper,), {"oid": oid})


def vector_text(v: npt.NDArray[np.float32]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(v, np.float32)) + "]"


def vector_from(sent: bytes) -> npt.NDArray[np.float32]:
    """A vector from pgvector's binary form (`vector_send`): its dimension and a
    reserved word (two 16-bit integers), then the values, big-endian 32-bit floats."""
    dim = int.from_bytes(sent[:2], "big")
    if len(sent) != 4 + 4 * dim:
        raise ValueError(f"a vector of {dim} values sent in {len(sent)} bytes")
    return np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)


def utc(t: datetime) -> datetime:
    """A timestamptz as psycopg returns it (in the session's zone), in UTC."""
    return t.astimezone(UTC)


def iso(t: datetime) -> str:
    """A time in the fixed ISO form the SQLite backend also returns."""
    return str(to_db(t))


def json_value(value: Any) -> Any:
    """A jsonb column's value (psycopg decodes jsonb; a text column would need parsing)."""
    return value if isinstance(value, dict | list) else json.loads(value)
