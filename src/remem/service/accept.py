"""Server processes that share connections evenly (`remem serve --workers N`).

The N processes of `remem serve --workers N` share one listening socket. asyncio
accepts every connection waiting when the socket turns readable, so the first
process to wake took all the connections a client opened at once: with 8 keep-alive
connections, 8/0 or 6/2 between two processes was common, and one process, bound by
its interpreter lock, served most requests while the other idled (server CPU per
process 7.5 and 0.01 ms per retrieve in one run of `remem bench --http --workers 2`).
A pause after each accept did not fix it: connections opened over tens of
milliseconds went to whichever process woke first.

`TakeTurnsLoop` accepts one connection at a time, and only while the process holds no
more open connections than the least loaded other process. Each process publishes, in
its slot of a small shared file (`ENV`, made by the supervising process, `Slots`), its
count of open connections and a heartbeat, every `BEAT` seconds and at each accept. A
process above the least stops listening for `ACCEPT_PAUSE` seconds and looks again,
for at most `DEFER_SECONDS`, after which it accepts anyway; a process whose heartbeat
is older than `STALE` (its loop hung, or it is gone and not yet replaced) is not waited
for. A slot whose process is gone is taken by the next one. Without the file (one
process) the loop accepts one connection at a time and no more. uvicorn is given the
loop by its import string (`LOOP`).
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import mmap
import os
import select
import socket
import struct
import time
from asyncio import constants
from typing import Any

__all__ = [
    "ACCEPT_PAUSE",
    "BEAT",
    "DEFER_SECONDS",
    "ENV",
    "LOOP",
    "SLOTS",
    "STALE",
    "Slots",
    "TakeTurnsLoop",
]

ACCEPT_PAUSE = 0.002
"""Seconds a process above the least loaded one stops listening before it looks again."""

DEFER_SECONDS = 0.25
"""How long a process may defer one connection to a less loaded one before it accepts it."""

BEAT = 0.1
"""Seconds between a process's heartbeats (its count of open connections, published)."""

STALE = 0.5
"""A process whose last heartbeat is older than this many seconds is not deferred to."""

ENV = "REMEM_ACCEPT_SLOTS"
"""The environment variable naming the shared file of connection counts."""

LOOP = "remem.service.accept:TakeTurnsLoop"
"""uvicorn's `loop` setting for this loop (an import string of a loop factory)."""

SLOTS = 256
"""Processes the file has room for (`remem serve --workers` takes at most 64)."""

_log = logging.getLogger("remem.service")

_SLOT = struct.Struct("<qqq")  # pid, open connections, heartbeat (monotonic milliseconds)


def make_slots(path: str) -> None:
    """Write an empty file of `SLOTS` slots at `path` (the supervising process)."""
    with open(path, "wb") as out:
        out.write(bytes(_SLOT.size * SLOTS))


class Slots:
    """This process's slot in the shared file, and the counts of the live others."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(self._fd, _SLOT.size * SLOTS)
        except BaseException:
            os.close(self._fd)
            raise
        self.index = self._claim()

    def _claim(self) -> int:
        me = os.getpid()
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            for i in range(SLOTS):
                pid, _, _ = _SLOT.unpack_from(self._map, i * _SLOT.size)
                if pid in (0, me) or not _alive(pid):
                    _SLOT.pack_into(self._map, i * _SLOT.size, me, 0, _now_ms())
                    return i
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        raise OSError(f"no free slot of {SLOTS} in the connection-count file")

    def publish(self, count: int) -> None:
        """This process's open connections, and a heartbeat."""
        _SLOT.pack_into(self._map, self.index * _SLOT.size, os.getpid(), count, _now_ms())

    def least_other(self) -> int | None:
        """The fewest open connections of another process with a fresh heartbeat (see
        `STALE`), None when there is none."""
        least = None
        fresh = _now_ms() - int(STALE * 1000)
        for i, (pid, count, beat) in enumerate(_SLOT.iter_unpack(self._map)):
            if i == self.index or not pid or beat < fresh:
                continue
            if (least is None or count < least) and _alive(pid):
                least = count
        return least


def _now_ms() -> int:
    return int(time.monotonic() * 1000)  # CLOCK_MONOTONIC: one clock for every process


def _slots_or_none(path: str | None) -> Slots | None:
    """The slots of the file `path` names, or None (no file: one process; a file that
    cannot be used: this process serves, unbalanced, rather than not at all)."""
    if not path:
        return None
    try:
        return Slots(path)
    except (OSError, ValueError) as exc:
        _log.warning("remem: connections not shared evenly: %s (%s)", path, exc)
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TakeTurnsLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop, accepting connections in turn with the other processes
    (module docstring); `accepted` counts the connections it accepted."""

    def __init__(self, selector: Any = None) -> None:
        super().__init__(selector)
        self.accepted = 0
        self._open: list[socket.socket] = []
        self._deferred_since: float | None = None  # when it first deferred the waiting one
        self._slots = _slots_or_none(os.environ.get(ENV))
        if self._slots is not None:
            self.call_soon(self._beat)

    def _beat(self) -> None:
        self.open_connections()
        self.call_later(BEAT, self._beat)

    def open_connections(self) -> int:
        """This process's open connections (closed ones forgotten), published."""
        self._open = [conn for conn in self._open if conn.fileno() != -1]
        if self._slots is not None:
            self._slots.publish(len(self._open))
        return len(self._open)

    def _accept_connection(
        self,
        protocol_factory: Any,
        sock: socket.socket,
        sslcontext: Any = None,
        server: Any = None,
        backlog: int = 100,
        ssl_handshake_timeout: float = constants.SSL_HANDSHAKE_TIMEOUT,
        ssl_shutdown_timeout: float = constants.SSL_SHUTDOWN_TIMEOUT,
    ) -> None:
        rest = (sslcontext, server, backlog, ssl_handshake_timeout, ssl_shutdown_timeout)
        mine = self.open_connections()
        least = self._slots.least_other() if self._slots is not None else None
        if least is not None and mine > least:
            now = time.monotonic()
            since = self._deferred_since = self._deferred_since or now
            if now - since < DEFER_SECONDS:  # a less loaded process takes it: look again
                self._pause(protocol_factory, sock, rest)
                return
        self._deferred_since = None
        super()._accept_connection(  # type: ignore[misc]
            protocol_factory, sock, sslcontext, server, 1,
            ssl_handshake_timeout, ssl_shutdown_timeout,
        )  # fmt: skip
        self.open_connections()

    def _pause(self, protocol_factory: Any, sock: socket.socket, rest: tuple[Any, ...]) -> None:
        self._remove_reader(sock.fileno())  # type: ignore[attr-defined]
        self.call_later(ACCEPT_PAUSE, self._listen_again, protocol_factory, sock, rest)

    def _listen_again(
        self, protocol_factory: Any, sock: socket.socket, rest: tuple[Any, ...]
    ) -> None:
        server = rest[1]
        if sock.fileno() == -1 or (server is not None and not server.is_serving()):
            return  # closed while it paused: nothing to listen on
        if not select.select([sock], [], [], 0)[0]:
            self._deferred_since = None  # another process took what was waiting
        self._start_serving(protocol_factory, sock, *rest)  # type: ignore[attr-defined]

    def _accept_connection2(
        self, protocol_factory: Any, conn: socket.socket, *args: Any, **kwargs: Any
    ) -> Any:
        self.accepted += 1
        self._open.append(conn)
        return super()._accept_connection2(protocol_factory, conn, *args, **kwargs)  # type: ignore[misc]
