"""`TakeTurnsLoop` (`remem.service.accept`) on its own: the slots of the shared file,
and a process that defers to a less loaded one never leaves a connection waiting for
good when that one does not accept."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.service import accept
from remem.service.accept import DEFER_SECONDS, ENV, Slots, TakeTurnsLoop, make_slots


@pytest.fixture
def slots_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "slots")
    make_slots(path)
    monkeypatch.setenv(ENV, path)
    return path


@pytest.fixture
def idle_peer() -> Iterator[int]:
    """A live process that holds a slot and never accepts (a hung server process)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_slot_of_a_process_gone_is_taken_again(slots_file: str) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with open(slots_file, "r+b") as f:  # slot 0 held by a process that has exited
        f.write(accept._SLOT.pack(gone.pid, 5, accept._now_ms()))
    mine = Slots(slots_file)
    assert mine.index == 0
    assert mine.least_other() is None  # nobody else is alive
    mine.publish(3)
    assert Slots(slots_file).index == 0  # the same process: its own slot again


def test_a_peer_whose_heartbeat_stopped_is_not_waited_for(slots_file: str, idle_peer: int) -> None:
    mine = Slots(slots_file)
    stale = accept._now_ms() - int(accept.STALE * 1000) - 1
    accept._SLOT.pack_into(mine._map, accept._SLOT.size, idle_peer, 0, stale)
    assert mine.least_other() is None
    accept._SLOT.pack_into(mine._map, accept._SLOT.size, idle_peer, 0, accept._now_ms())
    assert mine.least_other() == 0


def test_a_process_above_the_least_defers_then_accepts_anyway(
    slots_file: str, idle_peer: int
) -> None:
    peer = Slots(slots_file)
    peer.index = 1  # the idle peer's slot: alive, no connections, never accepting
    beat = accept._now_ms() + 60_000  # it looks alive throughout: its heartbeat is fresh
    accept._SLOT.pack_into(peer._map, accept._SLOT.size, idle_peer, 0, beat)
    loop = TakeTurnsLoop()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    served = threading.Event()
    stop: asyncio.Future[None] = loop.create_future()
    closed = threading.Semaphore(0)  # a connection the server side has closed

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"ok")
        await writer.drain()
        await reader.read()  # kept open: it counts as this process's connection
        writer.close()
        await writer.wait_closed()
        closed.release()

    async def run() -> None:
        server = await asyncio.start_server(answer, sock=listener)
        served.set()
        async with server:
            await stop

    thread = threading.Thread(target=lambda: loop.run_until_complete(run()), daemon=True)
    thread.start()
    assert served.wait(5)
    waits = []
    held = []
    for _ in range(3):
        t0 = time.perf_counter()
        conn = socket.create_connection(("127.0.0.1", port), timeout=5)
        assert conn.recv(2) == b"ok"
        waits.append(time.perf_counter() - t0)
        held.append(conn)
    for conn in held:
        conn.close()
    # each closed on the server side too before the loop goes (an open one would be
    # collected later, in whatever test runs then, as an unclosed-socket warning)
    assert all(closed.acquire(timeout=5) for _ in held)
    assert loop.accepted == 3
    # the first found it no busier than the peer; each later one waited its turns out
    assert all(w >= DEFER_SECONDS for w in waits[1:]), waits
    assert max(waits) < 2.0, waits
    loop.call_soon_threadsafe(stop.set_result, None)
    thread.join(10)
    loop.close()


@pytest.mark.parametrize("kind", ["missing", "empty"])
def test_a_file_that_cannot_be_used_leaves_the_process_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    path = tmp_path / "slots"
    if kind == "empty":
        path.write_bytes(b"")  # too short to hold the slots
    monkeypatch.setenv(ENV, str(path))
    loop = TakeTurnsLoop()
    try:
        assert loop._slots is None
        assert loop.open_connections() == 0
    finally:
        loop.close()
