"""A span's round trip sent through libpq's pipeline directly (`psycopg.pq`).

psycopg's cursors cost the client 40-70 µs of CPU a statement (a cursor made, the query
converted, its parameters dumped, the pipeline's generators driven) where libpq's part
is a few µs; a recall on PostgreSQL sends about 19 statements in six round trips, and
psycopg's own work was about a sixth of the recall's CPU in the process that made it
(docs/decisions/service-speed.md, "libpq's pipeline directly"). A `Pipeline` sends a
round trip's statements itself: each statement's text converted once (`%(name)s` to
`$n`, `convert`), prepared on its connection the first time it is sent and run by name
after, its parameters dumped and its rows loaded by the connection's own adapters (a
`psycopg.adapt.Transformer`, so a value reads and writes as through a cursor), and
the round trip awaited on the connection's socket with the GIL released.

What it takes: statements whose parameters are a mapping and whose text holds only
`%(name)s` placeholders (and `%%`); for anything else `Pipeline.add` raises `Unfit`
and the round trip goes through psycopg. A failed statement raises psycopg's own error
for it (`psycopg.errors.error_from_result`) once the round trip is read to its end, so
the connection is left as psycopg would leave it: idle, or in a failed transaction; a
failure of the connection itself closes it. At most `PREPARED_MAX` statements are
prepared on a connection; past that a statement is sent unnamed (planned each time).
"""

from __future__ import annotations

import re
import select
import weakref
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import pq
from psycopg import sql as pg_sql
from psycopg.adapt import PyFormat, Transformer
from psycopg.errors import error_from_result
from psycopg.rows import DictRow

from remem.forksafe import ForkSafeLock

Query = str | pg_sql.Composed

PREPARED_MAX = 256  # statements prepared on one connection, at most
CONVERTED_MAX = 1024  # statement texts kept converted, at most

# a statement to send: its text, its parameters dumped, their types and formats, and
# whether its rows are returned
_Added = tuple[bytes, list[Any] | None, tuple[int, ...], list[int] | None, bool]
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%|%")
_ROW_STATUSES = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)


class Unfit(Exception):
    """A statement a `Pipeline` does not send (see the module): psycopg sends it."""


class Converted:
    """A statement's text for libpq: `$n` for each `%(name)s`, and the names in order."""

    __slots__ = ("names", "text")

    def __init__(self, text: bytes, names: tuple[str, ...]) -> None:
        self.text = text
        self.names = names


_converted: dict[str, Converted | None] = {}
_converted_lock = ForkSafeLock()


class _Prepared:
    """The statements prepared on one connection: (text, parameter types) -> name."""

    def __init__(self) -> None:
        self.names: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self.made = 0

    def new(self, key: tuple[bytes, tuple[int, ...]]) -> bytes:
        self.made += 1
        name = self.names[key] = f"remem_{self.made}".encode()
        return name


_prepared: weakref.WeakKeyDictionary[psycopg.Connection[Any], _Prepared]
_prepared = weakref.WeakKeyDictionary()
_prepared_lock = ForkSafeLock()


def forget_prepared(conn: psycopg.Connection[Any]) -> None:
    """Forget what was prepared on `conn` (the server dropped it: see `Spans._direct`)."""
    with _prepared_lock:
        _prepared.pop(conn, None)


def convert(text: str) -> Converted | None:
    """`text` with `$n` placeholders, or None when it holds a placeholder other than
    `%(name)s` (psycopg sends it)."""
    with _converted_lock:
        if text in _converted:
            return _converted[text]
    names: list[str] = []
    fits = True

    def number(m: re.Match[str]) -> str:
        nonlocal fits
        if m.group(0) == "%%":
            return "%"
        name = m.group(1)
        if name is None:
            fits = False
            return m.group(0)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    out = _PLACEHOLDER.sub(number, text)
    done = Converted(out.encode(), tuple(names)) if fits else None
    with _converted_lock:
        if len(_converted) >= CONVERTED_MAX:
            _converted.clear()
        _converted[text] = done
    return done


def text_of(conn: psycopg.Connection[Any], sql: Query) -> str:
    """A statement's text (a composed one rendered for this connection)."""
    return sql if isinstance(sql, str) else sql.as_string(conn)


class Pipeline:
    """One round trip on `conn` (autocommit, idle or in a transaction): statements
    added in order (their parameters dumped then, so a value that cannot be sent fails
    before anything is), then `run` sends them and returns the rows of those added with
    `rows=True`, in order."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self._tx = Transformer(conn)
        self._added: list[_Added] = []

    def add(self, sql: Query, params: Any = None, *, rows: bool = True) -> None:
        """Add a statement; `Unfit` if it does not fit (see the module), its parameters'
        dumper's error if one cannot be sent. Nothing is sent before `run`."""
        if params is not None and not isinstance(params, Mapping):
            raise Unfit("positional parameters")
        converted = convert(text_of(self._conn, sql))
        if converted is None:
            raise Unfit("a placeholder other than %(name)s")
        values = [(params or {})[name] for name in converted.names]
        if not values:
            self._added.append((converted.text, None, (), None, rows))
            return
        dumped = list(self._tx.dump_sequence(values, [PyFormat.AUTO] * len(values)))
        types = tuple(int(t) for t in self._tx.types or ())
        formats = [int(f) for f in self._tx.formats or ()]
        self._added.append((converted.text, dumped, types, formats, rows))

    def run(self) -> list[list[DictRow]]:
        """Send the round trip and read it to its end; raise the first statement's error
        (psycopg's), the connection left idle or in a failed transaction. A failure of
        the connection itself closes it (the pool discards a closed connection)."""
        pg = self._conn.pgconn
        with _prepared_lock:
            prepared = _prepared.setdefault(self._conn, _Prepared())
        # per command: the key of the statement it prepares, and whether its rows are asked
        sent: list[tuple[tuple[bytes, tuple[int, ...]] | None, bool]] = []
        try:
            pg.enter_pipeline_mode()
            for text, dumped, types, formats, rows in self._added:
                key = (text, types)
                name = prepared.names.get(key)
                if name is None and len(prepared.names) < PREPARED_MAX:
                    name = prepared.new(key)  # dropped again if its prepare fails
                    pg.send_prepare(name, text, types or None)
                    sent.append((key, False))
                if name is None:
                    pg.send_query_params(text, dumped, types or None, formats)
                else:
                    pg.send_query_prepared(name, dumped, formats)
                sent.append((None, rows))
            pg.pipeline_sync()
            self._flush()
            out: list[list[DictRow]] = []
            error: psycopg.Error | None = None
            for prepares, wanted in sent:
                res = self._next_result()
                status = res.status
                if status == pq.ExecStatus.FATAL_ERROR and error is None:
                    error = error_from_result(res, encoding=self._conn.info.encoding)
                if prepares is not None and status != pq.ExecStatus.COMMAND_OK:
                    del prepared.names[prepares]  # not made: prepared again next time
                if wanted:
                    out.append(self._rows(res) if status in _ROW_STATUSES else [])
                while self._result_or_none() is not None:
                    pass  # each command's results end with None
            sync = self._next_result()
            if sync.status != pq.ExecStatus.PIPELINE_SYNC:
                raise psycopg.OperationalError(f"a round trip ended with {sync.status!r}")
            pg.exit_pipeline_mode()
        except BaseException:
            self._conn.close()
            raise
        if error is not None:
            raise error
        return out

    def _rows(self, res: pq.abc.PGresult) -> list[DictRow]:
        if not res.nfields:
            return []
        names = [(res.fname(i) or b"").decode() for i in range(res.nfields)]
        self._tx.set_pgresult(res)
        return self._tx.load_rows(
            0, res.ntuples, lambda values: dict(zip(names, values, strict=True))
        )

    def _flush(self) -> None:
        pg = self._conn.pgconn
        while pg.flush():
            readable, _, _ = select.select([pg.socket], [pg.socket], [])
            if readable:
                pg.consume_input()

    def _result_or_none(self) -> pq.abc.PGresult | None:
        pg = self._conn.pgconn
        while pg.is_busy():
            select.select([pg.socket], [], [])
            pg.consume_input()
        return pg.get_result()

    def _next_result(self) -> pq.abc.PGresult:
        res = self._result_or_none()
        if res is None:
            raise psycopg.OperationalError("a round trip's result was missing")
        return res
